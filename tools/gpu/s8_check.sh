#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the eighth session's check of the nucleus pass (top-p-only rows:
# phase 1's TOP2 variant, then sampling_hist._sample_nucleus_kernel): the sampling kernel tests
# on cuda, per-kernel durations of top_p alone (ncu), then the benchmarks it can move (top_p
# alone, with greedy, temperature and the per-row device parameters beside it; all twelve shapes; PyTorch and FlashInfer 0.2.14
# in one process, 0.7.4 in another: tools/gpu/drawfast_bench.sh). Carry .whl and .peers.
# Output: $OUT/tests.log, p1/ncu.csv, t1.json, t2.json, report.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
XD=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
timeout ${T_LIMIT:-170} python3 -m pytest -q -p no:cacheprovider --backend cuda $XD \
  tests/kernels/test_sampling_nucleus.py tests/kernels/test_sampling.py tests/kernels/test_sampling_fast.py \
  tests/kernels/test_sampling_hist.py tests/kernels/test_sampler_branches.py tests/test_sampling_plan_splits.py \
  > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -10
OUT0=$OUT
OUT=$OUT0/p1 timeout 80 bash tools/gpu/kprofile.sh --topp_alone --shapes 1x32000,64x151936,256x151936 \
  2>&1 | grep -v MARK | tail -16
echo "== profile at $((SECONDS - T0)) s"
OUT=$OUT0 K="(top_p095 or greedy or temperature or rows) and not reference" REPORT_MODES="top_p095|greedy|temperature|chain_dev|mixed_dev" \
  B1_LIMIT=${B1_LIMIT:-200} B2_LIMIT=${B2_LIMIT:-90} bash tools/gpu/drawfast_bench.sh
echo "== done at $((SECONDS - T0)) s"
