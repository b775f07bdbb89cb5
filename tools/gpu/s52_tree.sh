#!/usr/bin/env bash
# Phase 1's block partial and its fused tail by warp shuffles ("tree" and "tail" in
# rocsample.kernels.warp_parts; written in the fifty-second session, off by default until this
# runs: ROCSAMPLE_WARP=max,bin,sum,tree,tail turns both on): the device gate with both on (its
# own numba cache), then the A/B of the default (the shared-memory trees), the tree alone and
# both, graph-timed with the bench's inputs, PASSES (default 1) passes of each variant in turn,
# none started after STOP_AB (default STOP - 100). Carry .whl;
# <= STOP (default 560 s) on a fresh machine. The fifty-second session's SourceCounters
# (bench/results/nvidia-h100-s52-top4-src.txt) put 22% of top_k 1000's phase-1 stall samples at
# 8 x 151936 at the tree's barriers. The variants compile in the background while the gate runs
# (each its own numba cache: the disk cache does not key on ROCSAMPLE_WARP). Outputs:
# $OUT/gate.log, check-report-h200.json, ab.txt. If the gate passes, put each part that wins in
# the default (rocsample.kernels.WARP_DEFAULT) and run the plain gate once more.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
TREE=ROCSAMPLE_WARP=max,bin,sum,tree
BOTH=ROCSAMPLE_WARP=max,bin,sum,tree,tail
SH=${SH:-8x151936,64x151936,1x151936}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --temp --chain --shapes "$SH")
VS=("ROCSAMPLE_WARP=max,bin,sum" "$TREE" "$BOTH")   # (the first: the default before the fifty-third session)
KLIM=${KLIM:-300} ab_compile
( export "$BOTH" NUMBA_CACHE_DIR=/tmp/nc-gate-both; run_gate "${GLIM:-400}" )
wait
STOP=${STOP:-560}
PASSES=${PASSES:-1} STOP_BY=${STOP_AB:-$((STOP - 100))} ab_passes "$STOP"
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/ab.txt"
