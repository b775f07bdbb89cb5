#!/usr/bin/env bash
# The twenty-ninth session's second device call (after s29_first.sh on the same machine, whose
# /tmp numba caches it reuses; carry .whl, .alt/7cf7865 and .peers/fi074; <= 590 s): the
# redraw A/B again with wider shapes, temperature 0.8 and 1.0 (the fast variant without TOP2,
# whose loop and register cap changed: 681 -> 673 SASS instructions a round of 8 tokens, 64
# registers either way), then bench/test_sampling.py's top_p095 and greedy at the twelve shapes
# with PyTorch and FlashInfer 0.7.4 in one process (BLIM, default 240 s).
# Output: $OUT/ab.txt, bench.json, bench.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
rev_tree 7cf7865
kp_ab 90 topp_alone "${S:-64x32000,256x32000,64x151936,256x151936,64x262144}"
kp_ab 60 temp "64x32000,256x32000,64x151936"
kp_ab 40 temp1 "256x32000"
echo "-- A/B at $((SECONDS - T0)) s"
topp_bench "${BLIM:-240}"
echo "== done at $((SECONDS - T0)) s"
