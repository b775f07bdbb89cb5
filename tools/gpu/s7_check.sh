#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the seventh session's check of its device changes: the sampling
# kernel tests, plan rules and regression tests on cuda (the tile finalize's large form, top_k up
# to 1024, at 8 x 151936; the narrow rows' drawing splits), then the benchmarks they can move
# (temperature, the chain, top_k 1000, the per-row device parameters; all twelve shapes; PyTorch
# and FlashInfer 0.2.14 in one process, 0.7.4 in another: tools/gpu/drawfast_bench.sh).
# Carry .whl and .peers. Output: $OUT/tests.log, t1.json, t2.json, report.md
source tools/gpu/env.sh
T0=$SECONDS
timeout ${T_LIMIT:-150} python3 -m pytest -q -p no:cacheprovider --backend cuda -n 8 \
  tests/kernels/test_sampling.py tests/kernels/test_sampling_fast.py tests/kernels/test_sampling_hist.py \
  tests/kernels/test_sampling_philox.py tests/kernels/test_sampler_branches.py tests/kernels/test_sampler_capture.py \
  tests/test_sampling_plan_splits.py tests/regress > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -10
K="(temperature or chain or rows or top_k1000) and not reference" REPORT_MODES="temperature|chain|chain_dev|top_k1000" \
  B1_LIMIT=${B1_LIMIT:-220} B2_LIMIT=${B2_LIMIT:-100} bash tools/gpu/drawfast_bench.sh
