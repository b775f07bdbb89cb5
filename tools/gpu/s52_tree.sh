#!/usr/bin/env bash
# Phase 1's block partial by warp shuffles ("tree" in rocsample.kernels.warp_parts; written in
# the fifty-second session, off by default until this runs: ROCSAMPLE_WARP=max,bin,sum,tree
# turns it on): the device gate with it on (its own numba cache), then its A/B against the
# default (the shared-memory tree), graph-timed with the bench's inputs, PASSES (default 1)
# passes of each variant in turn, none started after STOP_AB (default STOP - 100). Carry .whl;
# <= STOP (default 560 s) on a fresh machine. The fifty-second session's SourceCounters
# (bench/results/nvidia-h100-s52-top4-src.txt) put 22% of top_k 1000's phase-1 stall samples at
# 8 x 151936 at the tree's barriers. The variants compile in the background while the gate runs
# (each its own numba cache: the disk cache does not key on ROCSAMPLE_WARP). Outputs:
# $OUT/gate.log, check-report-h200.json, ab.txt. If the gate passes and the tree wins, make it
# the default (rocsample.kernels.WARP_DEFAULT) and run the plain gate once more.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
TREE=ROCSAMPLE_WARP=max,bin,sum,tree
SH=${SH:-8x151936,64x151936,1x151936}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --temp --chain --shapes "$SH")
VS=("X=0" "$TREE")
KLIM=${KLIM:-300} ab_compile
( export "$TREE" NUMBA_CACHE_DIR=/tmp/nc-gate-tree; run_gate "${GLIM:-400}" )
wait
STOP=${STOP:-560}
PASSES=${PASSES:-1} STOP_BY=${STOP_AB:-$((STOP - 100))} ab_passes "$STOP"
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/ab.txt"
