#!/usr/bin/env bash
# The twenty-seventh session's last gate call (carry .whl and .alt/3fb84ec; <= 590 s):
# kprofile's graph-timed top_p alone at narrow shapes, this tree (the nucleus pass at its own
# split count: twice phase 1's at 1-8 x 32000) against 3fb84ec's, each with its own numba cache,
# two passes; then the device gate (GLIM, default 420 s).
# Output: $OUT/ab.txt ("VARIANT GRAPH topp_alone shape gpu_us=..."), gate.log,
# check-report-h200.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
rev_tree 3fb84ec
S=${S:-1x32000,4x32000,8x32000,16x32000,64x32000}
kp_warm --topp_alone --shapes 1x32000
kp_ab 60 topp_alone "$S"
kp_ab 60 topp_alone "$S"
echo "-- A/B at $((SECONDS - T0)) s"
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-420}"
grep -A27 "slowest 25" "$OUT/gate.log" | head -28
echo "== done at $((SECONDS - T0)) s"
