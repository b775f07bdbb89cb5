#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the ninth session's check of the nucleus routes' own geometry
# (the nucleus pass at SamplingPlan.splits_nuc; the rows it leaves finished by the histogram and
# select passes row-strided at splits_fin x rows_fin; the pass at one drawing split too): the
# sampling kernel tests on cuda, ncu per-kernel durations of top_p alone, graph-timed variants
# (the nucleus pass at the drawing splits: ROCSAMPLE_NUC_BLOCKS_PER_CU=0; the pass off at one
# drawing split: ROCSAMPLE_NUC_MIN_SPLITS=2; longer row-strided splits: ROCSAMPLE_FIN_CHUNK),
# then top_p alone and greedy at all twelve shapes with peers (tools/gpu/drawfast_bench.sh).
# (Run on d0eed4d: its ROCSAMPLE_NUC_BLOCKS_PER_CU, the nucleus pass's own split count, was
# removed after it.) Carry .whl and .peers. Output: $OUT/tests.log, p1/ncu.csv, variants.txt, t1.json, t2.json,
# report.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
XD=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
timeout ${T_LIMIT:-170} python3 -m pytest -q -p no:cacheprovider --backend cuda $XD \
  tests/kernels/test_sampling_nucleus.py tests/kernels/test_sampling_hist.py \
  tests/kernels/test_sampling.py tests/kernels/test_sampler_branches.py \
  tests/test_sampling_plan_splits.py tests/regress/test_row_counters_shared_by_two_split_counts.py \
  > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -10
SH=64x151936,256x262144,256x32000,8x262144
OUT0=$OUT
OUT=$OUT0/p1 timeout 90 bash tools/gpu/kprofile.sh --topp_alone --shapes $SH 2>&1 | grep -v MARK | tail -24
echo "== profile at $((SECONDS - T0)) s"
for v in "X=0" "ROCSAMPLE_NUC_BLOCKS_PER_CU=0" "ROCSAMPLE_NUC_MIN_SPLITS=2" "ROCSAMPLE_FIN_CHUNK=8192"; do
  env $v timeout 45 python3 tools/gpu/kprofile.py --graph --topp_alone \
    --shapes $SH,64x32000,64x262144 2>&1 | grep GRAPH | sed "s/^/$v /" | tee -a "$OUT0/variants.txt"
done
echo "== variants at $((SECONDS - T0)) s"
OUT=$OUT0 K="(top_p095 or greedy) and not reference" REPORT_MODES="top_p095" \
  B1_LIMIT=${B1_LIMIT:-110} B2_LIMIT=${B2_LIMIT:-50} bash tools/gpu/drawfast_bench.sh
echo "== done at $((SECONDS - T0)) s"
