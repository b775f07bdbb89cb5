#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the eleventh session's first call (issue #17): the device gate on
# the landed tree (the tenth session's C path, its GPU tests and the scratch pool's note_call fix
# had not passed it), then bench/test_host_overhead.py's torch cases with the C path on (PyTorch's
# peers in the run; each case records how many of its calls rocsample._fastcall served) and a
# subset again with ROCSAMPLE_FASTCALL=0 (the Python path, same host, same run). Carry .whl.
# Each pytest runs under `timeout -s INT`, so pytest-benchmark still writes what finished.
# Output: $OUT/check-report-h200.json, gate.log, host-perf{,-off}.json, host-perf{,-off}-summary.txt
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
timeout ${GATE_LIMIT:-285} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
grep -E "^(FAILED|ERROR)" "$OUT/gate.log" | head -10
timeout -s INT ${HOST_LIMIT:-160} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
  --benchmark-json="$OUT/host-perf.json" > "$OUT/host-bench.log" 2>&1
echo "== host bench (C) rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host-bench.log")"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" > "$OUT/host-perf-summary.txt"
cat "$OUT/host-perf-summary.txt"
ROCSAMPLE_FASTCALL=0 timeout -s INT ${OFF_LIMIT:-50} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${OFF_K:-((sampler_call_torch and (same or fresh)) or set_rows_torch or (one_off_torch and same)) and side}" \
  --benchmark-json="$OUT/host-perf-off.json" > "$OUT/host-bench-off.log" 2>&1
echo "== host bench (Python, ROCSAMPLE_FASTCALL=0) rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host-bench-off.log")"
python3 tools/gpu/host_summary.py "$OUT/host-perf-off.json" > "$OUT/host-perf-off-summary.txt"
cat "$OUT/host-perf-off-summary.txt"
echo "== done at $((SECONDS - T0)) s"
