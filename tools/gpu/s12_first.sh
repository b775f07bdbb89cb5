#!/usr/bin/env bash
# On the lent H200 (<= 600 s), prepared for the twelfth session's first call: the gate on the
# eleventh session's final tree (its last device change, a39f178, ran every test without a
# failure but its check was cut before the report), with issue #17's figures around it:
# tools/gpu/first_cases_probe.py (the slow first host cases: three passes in one process) on the
# fresh machine and again right after the gate, then bench/test_host_overhead.py's torch cases
# (served counts) and the decode loop with FlashInfer 0.7.4 beside PyTorch's pipeline. Carry
# .whl and .peers (.peers/fi074: BENCHMARKS.md's recipe). Output: $OUT/check-report-h200.json,
# gate.log, probe.txt, host-perf.json, host-perf-summary.txt, decode.json, decode.md
source tools/gpu/env.sh
use_flashinfer fi074
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import rocsample._fastcall as f; print('fastcall built:', f.__file__)" || cat /tmp/fastcall-build.log
T0=$SECONDS
echo "== probe on the fresh machine" | tee "$OUT/probe.txt"
timeout 60 python3 tools/gpu/first_cases_probe.py 3 2>&1 | tee -a "$OUT/probe.txt"
timeout ${GATE_LIMIT:-300} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
grep -E "^(FAILED|ERROR)" "$OUT/gate.log" | head -10
echo "== probe right after the gate at $((SECONDS - T0)) s" | tee -a "$OUT/probe.txt"
timeout 60 python3 tools/gpu/first_cases_probe.py 3 2>&1 | tee -a "$OUT/probe.txt"
BH=(--backend cuda -q -p no:cacheprovider)
timeout -s INT ${HOST_LIMIT:-90} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
  --benchmark-json="$OUT/host-perf.json" > /tmp/host-bench.log 2>&1
echo "== host bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/host-bench.log)"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" > "$OUT/host-perf-summary.txt"
grep -E "MISSED|chain \(torch, fresh, default" "$OUT/host-perf-summary.txt"
timeout -s INT ${DECODE_LIMIT:-80} python3 -m pytest bench/test_decode_loop.py "${BH[@]}" -rs \
  --benchmark-json="$OUT/decode.json" > /tmp/decode.log 2>&1
echo "== decode loop rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/decode.log)"
grep SKIPPED /tmp/decode.log | head -3
python3 -m bench.report "$OUT/decode.json" 2>/dev/null | grep -A20 "^### Decode loop" | tee "$OUT/decode.md"
echo "== done at $((SECONDS - T0)) s"
