#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the ninth session's first call, on the commit with the late first
# quad as the TOP2 fast variants' only form: the device gate (`python -m rocsample.check --backend
# cuda`, the whole cuda suite with --run-slow), then the benchmarks it can move (top_p alone,
# greedy beside it for the 3x target; all twelve shapes; PyTorch and FlashInfer 0.2.14 in one
# process, 0.7.4 in another: tools/gpu/drawfast_bench.sh). Carry .whl and .peers.
# Output: $OUT/check-report-h200.json, gate.log, t1.json, t2.json, report.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
timeout ${GATE_LIMIT:-330} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
OUT=$OUT K="(top_p095 or greedy) and not reference" REPORT_MODES="top_p095|greedy" \
  B1_LIMIT=${B1_LIMIT:-150} B2_LIMIT=${B2_LIMIT:-60} bash tools/gpu/drawfast_bench.sh
echo "== done at $((SECONDS - T0)) s"
