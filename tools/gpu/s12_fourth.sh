#!/usr/bin/env bash
# On the lent H200 (about 150 s), the twelfth session's fourth call: issue #17's host cases and
# the decode loop (interleaved form, FlashInfer 0.7.4 beside PyTorch's pipeline) in one run on
# one machine, after a warm-up process (tools/gpu/first_cases_probe.py: the numba cache filled,
# and the first process after a machine's start is the slow one, PERF_NOTES "Twelfth session").
# The same rocsample tree as s12_second.sh's gate. Carry .whl and .peers.
# Output: $OUT/probe.txt, host-perf.json, host-perf-summary.txt, decode.json, decode.md
source tools/gpu/env.sh
use_flashinfer fi074
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import rocsample._fastcall as f; print('fastcall built:', f.__file__)" || cat /tmp/fastcall-build.log
T0=$SECONDS
timeout 60 python3 tools/gpu/first_cases_probe.py 1 2>&1 | grep -v Warning | tee "$OUT/probe.txt"
BH=(--backend cuda -q -p no:cacheprovider)
timeout -s INT ${HOST_LIMIT:-80} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
  --benchmark-json="$OUT/host-perf.json" > /tmp/host-bench.log 2>&1
echo "== host bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/host-bench.log)"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" > "$OUT/host-perf-summary.txt"
grep -cE "MET" "$OUT/host-perf-summary.txt"; grep -E "MISSED" "$OUT/host-perf-summary.txt"
timeout -s INT ${DECODE_LIMIT:-100} python3 -m pytest bench/test_decode_loop.py "${BH[@]}" -rs \
  --benchmark-json="$OUT/decode.json" > /tmp/decode.log 2>&1
echo "== decode loop rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/decode.log)"
grep -E "SKIPPED|FAILED|Error" /tmp/decode.log | head -5
python3 -m bench.report "$OUT/decode.json" 2>/dev/null | grep -A22 "^### Decode loop" | tee "$OUT/decode.md"
echo "== done at $((SECONDS - T0)) s"
