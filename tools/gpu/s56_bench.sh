#!/usr/bin/env bash
# The fifty-sixth session's bench call (carry .whl and .peers/fi074; <= STOP, default 585 s):
# every mode of bench/test_sampling.py with PyTorch and FlashInfer 0.7.4 at the twelve shapes
# (tools/gpu/s32_bench.sh, STRADDLE=0, under BLIM, default 330 s), then racecheck over the fast
# path's racecheck subset in shards (tools/gpu/s56_second.sh with STAGES=0) in what is left.
# Output: s32_bench.sh's (bench.json, bench.md) and s56_second.sh's (race-N.log, san-summary.txt).
set -u
T0=$SECONDS
STRADDLE=0 BLIM=${BLIM:-330} bash tools/gpu/s32_bench.sh
echo "== bench done at $((SECONDS - T0)) s"
STAGES=0 STOP=$(( ${STOP:-585} - (SECONDS - T0) )) bash tools/gpu/s56_second.sh
echo "== all done at $((SECONDS - T0)) s"
