#!/usr/bin/env bash
# On the lent H200, the eighth session's first call (<= 300 s): the two cuda test files changed
# since the last gate (philox probes, plan rules) and tests/regress; then per-kernel durations
# (ncu) of top_p alone (phase 1 / histogram pass / select pass) and of top_k 1000 with the large
# form forced, the baseline for the session's kernel work. Carry .whl.
# Output: $OUT/tests.log, $OUT/ncu-topp.csv, $OUT/ncu-topk.csv
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
XD=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
timeout 150 python3 -m pytest --backend cuda -q -p no:cacheprovider -x $XD \
  tests/kernels/test_sampling_philox.py tests/test_sampling_plan_splits.py tests/regress \
  > "$OUT/tests.log" 2>&1
echo "tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
OUT0=$OUT
OUT=$OUT0/p1 timeout 90 bash tools/gpu/kprofile.sh --topp_alone --temp --greedy \
  --shapes 1x32000,64x151936,256x151936 2>&1 | grep -v MARK | tail -40
echo "topp profile at $((SECONDS - T0)) s"
OUT=$OUT0/p2 ROCSAMPLE_TILE_LARGE=1 timeout 60 bash tools/gpu/kprofile.sh --topk1000 \
  --shapes 1x151936,64x151936 2>&1 | grep -v MARK | tail -20
echo "topk profile at $((SECONDS - T0)) s"
