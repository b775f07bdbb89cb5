#!/usr/bin/env bash
# The thirty-ninth session's second call (carry .whl and .peers/fi074; <= 595 s): every mode of
# bench/test_sampling.py at the twelve shapes with PyTorch and FlashInfer 0.7.4 in one process,
# graph-timed (tools/gpu/s32_bench.sh without its straddle probe, BLIM default 400 s), then
# ncu's issue and stall counters (tools/gpu/kdetail.sh) of phase 1's drawing kernel for
# temperature and of top_p alone's kernels at 256 x 151936 (KDSH), where phase 1's draw measured
# 99-110 us against about 40 us of issue read from its SASS (docs/PERF_NOTES.md, thirty-eighth
# session).
# Output: $OUT/bench.json, bench.md, kd-temp.txt, kd-topp.txt
set -u
T00=$SECONDS
if [ "${BENCH:-1}" != 0 ]; then
  STRADDLE=0 BLIM=${BLIM:-400} bash tools/gpu/s32_bench.sh
fi
echo "== ncu at $((SECONDS - T00)) s"
KERNELS=partials COUNT=1 KD=kd-temp timeout 120 bash tools/gpu/kdetail.sh --temp --shapes "${KDSH:-256x151936}"
echo "== kd-temp done at $((SECONDS - T00)) s"
KERNELS='partials|nucleus' COUNT=2 KD=kd-topp timeout 120 bash tools/gpu/kdetail.sh --topp_alone --shapes "${KDSH:-256x151936}"
echo "== done at $((SECONDS - T00)) s"
