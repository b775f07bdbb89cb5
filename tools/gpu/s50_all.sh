#!/usr/bin/env bash
# The fiftieth session's one-call fallback (carry .whl and .peers/fi074; <= STOP, default 585 s):
# every mode of bench/test_sampling.py with PyTorch and FlashInfer 0.7.4 at the twelve shapes
# (tools/gpu/s32_bench.sh, STRADDLE=0, under BLIM, default 330 s: 209-212 s in the thirty-fifth
# and thirty-sixth sessions), then tools/gpu/s50_san.sh in what is left (its warm-up under 120 s,
# the three sanitizers at once under the rest, less 15 s), skipped with under 180 s left.
# Output: s32_bench.sh's and s50_san.sh's.
set -u
T0=$SECONDS
STRADDLE=0 BLIM=${BLIM:-330} bash tools/gpu/s32_bench.sh
left=$(( ${STOP:-585} - (SECONDS - T0) ))
echo "== bench done at $((SECONDS - T0)) s; ${left} s left"
if [ "$left" -ge 180 ]; then
  LIMIT=$(( left - 135 )) bash tools/gpu/s50_san.sh
else
  echo "== sanitizers skipped: ${left} s left"
fi
echo "== all done at $((SECONDS - T0)) s"
