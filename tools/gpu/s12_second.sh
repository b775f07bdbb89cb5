#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the twelfth session's second call: the gate on the tree with the
# C path's re-point, the one-off outputs' blocks and the MINP kernel's cleanup; then issue #17's
# figures on the same machine: the one-off probe (blocks of 16 calls against each call's own
# outputs, where the C path's time goes), the first cases, the host benchmark's torch cases
# (served counts) and the decode loop with FlashInfer 0.7.4 beside PyTorch's pipeline.
# Carry .whl and .peers. Output: $OUT/check-report-h200.json, gate.log, probe.txt,
# host-perf.json, host-perf-summary.txt, decode.json, decode.md
source tools/gpu/env.sh
use_flashinfer fi074
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import rocsample._fastcall as f; print('fastcall built:', f.__file__)" || cat /tmp/fastcall-build.log
T0=$SECONDS
timeout ${GATE_LIMIT:-330} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
grep -E "^(FAILED|ERROR)" "$OUT/gate.log" | head -10
echo "== one-off probe at $((SECONDS - T0)) s" | tee "$OUT/probe.txt"
timeout 60 python3 tools/gpu/oneoff_streams_probe.py 1 2>&1 | grep -v Warning | tee -a "$OUT/probe.txt"
echo "== first cases at $((SECONDS - T0)) s" | tee -a "$OUT/probe.txt"
timeout 30 python3 tools/gpu/first_cases_probe.py 1 2>&1 | grep -v Warning | tee -a "$OUT/probe.txt"
BH=(--backend cuda -q -p no:cacheprovider)
timeout -s INT ${HOST_LIMIT:-90} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
  --benchmark-json="$OUT/host-perf.json" > /tmp/host-bench.log 2>&1
echo "== host bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/host-bench.log)"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" > "$OUT/host-perf-summary.txt"
grep -E "MISSED" "$OUT/host-perf-summary.txt"
timeout -s INT ${DECODE_LIMIT:-80} python3 -m pytest bench/test_decode_loop.py "${BH[@]}" -rs \
  --benchmark-json="$OUT/decode.json" > /tmp/decode.log 2>&1
echo "== decode loop rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/decode.log)"
grep SKIPPED /tmp/decode.log | head -3
python3 -m bench.report "$OUT/decode.json" 2>/dev/null | grep -A20 "^### Decode loop" | tee "$OUT/decode.md"
echo "== done at $((SECONDS - T0)) s"
