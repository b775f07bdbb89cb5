#!/usr/bin/env bash
# The twenty-sixth session's last call (carry .whl and .alt/3d45059; <= 470 s): kprofile's
# graph-timed top_p alone at the four 32000-wide shapes, this tree (phase 1's TOP2 form up to
# NUC_FINISH_TOP2_ROWS rows on the finishing route, its TOP4 form above) against 3d45059's, each
# with its own numba cache; then the device gate (GLIM, default 300 s).
# Output: $OUT/ab.txt ("VARIANT GRAPH topp_alone shape gpu_us=..."), gate.log,
# check-report-h200.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
rev_tree 3d45059
S=${S:-1x32000,8x32000,64x32000,256x32000}
kp_warm --topp_alone --shapes 1x32000,64x32000
kp_ab 60 topp_alone "$S"
echo "-- A/B at $((SECONDS - T0)) s"
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-300}"
echo "== done at $((SECONDS - T0)) s"
