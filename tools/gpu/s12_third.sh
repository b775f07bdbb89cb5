#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the twelfth session's third call (the tree s12_second.sh gated,
# with a GPU test and the decode-loop benchmark's interleaved form added): the C path's GPU
# tests (the new one: one-off outputs held across many calls at new addresses); issue #17's
# host cases and the decode loop (every sampler's loop in one case a (batch, mode), rounds
# interleaved) with FlashInfer 0.7.4, in one run; then issue #13's min_p and chain at the
# twelve shapes with PyTorch and FlashInfer 0.7.4 (the MINP kernel's cleanup). Carry .whl and
# .peers. Output: $OUT/fastcall-gpu.log, host-perf.json, host-perf-summary.txt, decode.json,
# decode.md, sampling.json, sampling.md
source tools/gpu/env.sh
use_flashinfer fi074
source tools/gpu/steps.sh
banner
T0=$SECONDS
timeout 120 python3 -m pytest tests/backends/test_fastcall_gpu.py tests/regress "${BH[@]}" -k "fastcall or decode or one_off" \
  > "$OUT/fastcall-gpu.log" 2>&1
echo "== C path GPU tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/fastcall-gpu.log")"
grep -E "^(FAILED|ERROR)" "$OUT/fastcall-gpu.log" | head
host_bench "${HOST_LIMIT:-90}"
decode_loop "${DECODE_LIMIT:-170}"
timeout -s INT ${BENCH_LIMIT:-150} python3 -m pytest bench/test_sampling.py "${BH[@]}" --bench-drop-data \
  -k "(test_rocsample or test_torch_peer or test_flashinfer_peer) and ((min_p005 and not t08) or (chain and not chain_dev and not chain_joint))" \
  --benchmark-json="$OUT/sampling.json" > /tmp/sampling.log 2>&1
echo "== sampling bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/sampling.log)"
python3 -m bench.report "$OUT/sampling.json" > /tmp/report.md 2>/dev/null
grep -E "^\| (mode|---|min_p005|chain) " /tmp/report.md | cut -c1-260 | tee "$OUT/sampling.md"
echo "== done at $((SECONDS - T0)) s"
