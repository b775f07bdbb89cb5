#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the tenth session's last call, on the repeated call in C
# (rocsample/_fastcall.c, issue #17; tools/gpu/env.sh builds it into the tree): the device gate
# (`python -m rocsample.check --backend cuda`, the whole cuda suite with --run-slow, the C path's
# GPU tests among it), the host harness over tests/fakegpu on this host (rocsample's Python and C
# alone), then bench/test_host_overhead.py's torch cases with the C path on (PyTorch's peers in
# the run) and the Sampler and set_rows cases again with ROCSAMPLE_FASTCALL=0 (the Python path,
# same host, same run). Carry .whl. Output: $OUT/check-report-h200.json, gate.log,
# harness.txt, host-perf.json, host-perf-off.json, host-perf-summary.txt, host-perf-off-summary.txt
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
timeout ${GATE_LIMIT:-290} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
grep -E "^(FAILED|ERROR)" "$OUT/gate.log" | head -10
[ "${HARNESS:-1}" = 1 ] && timeout 40 python3 tools/host_harness.py -n 600 -k "same" 2>&1 \
  | tee "$OUT/harness.txt" | tail -8
timeout ${HOST_LIMIT:-170} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-torch}" \
  --benchmark-json="$OUT/host-perf.json" > "$OUT/host-bench.log" 2>&1
echo "== host bench (C) rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host-bench.log")"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" > "$OUT/host-perf-summary.txt"
grep -E "Sampler|set_rows|torch" "$OUT/host-perf-summary.txt" | head -70
ROCSAMPLE_FASTCALL=0 timeout ${OFF_LIMIT:-70} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${OFF_K:-(sampler_call_torch or set_rows_torch) and not new}" \
  --benchmark-json="$OUT/host-perf-off.json" > "$OUT/host-bench-off.log" 2>&1
echo "== host bench (Python, ROCSAMPLE_FASTCALL=0) rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host-bench-off.log")"
python3 tools/gpu/host_summary.py "$OUT/host-perf-off.json" > "$OUT/host-perf-off-summary.txt"
cat "$OUT/host-perf-off-summary.txt" | head -40
echo "== done at $((SECONDS - T0)) s"
