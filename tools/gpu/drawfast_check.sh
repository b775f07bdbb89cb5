#!/usr/bin/env bash
# On the lent H200, a short call (<= 300 s) when too little device time is left for the gate:
# the sampling kernel tests and the regression tests on cuda (xdist), then
# tools/gpu/drawfast_bench.sh with shorter limits (80 and 35 s). Carry .whl
# and .peers. Output: $OUT/tests.log, t1.json, t2.json, report.md
source tools/gpu/env.sh
T0=$SECONDS
timeout ${T_LIMIT:-120} python3 -m pytest -q -p no:cacheprovider --backend cuda -n 8 tests/kernels/test_sampling.py \
  tests/kernels/test_sampling_fast.py tests/kernels/test_sampling_philox.py tests/kernels/test_sampler_branches.py \
  tests/kernels/test_sampler_capture.py tests/test_sampling_plan_splits.py tests/regress > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
B1_LIMIT=${B1_LIMIT:-80} B2_LIMIT=${B2_LIMIT:-35} bash tools/gpu/drawfast_bench.sh
