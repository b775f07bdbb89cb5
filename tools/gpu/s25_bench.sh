#!/usr/bin/env bash
# The twenty-fifth session's benchmark (carry .whl and .peers/fi074; <= 300 s):
# bench/test_sampling.py's top_p095 and greedy at the twelve shapes, rocsample, PyTorch and
# FlashInfer 0.7.4 in one process (the tracked tree, the wheels and both FlashInfers are over a
# call's 64 MiB), graph-timed (steps.sh's topp_bench). Output: $OUT/bench.json, bench.md (the
# session's run named them topp.json, topp.md)
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
topp_bench "${BLIM:-240}"
echo "== done at $((SECONDS - T0)) s"
