#!/usr/bin/env bash
# The twenty-ninth session's first device call, for the next session lent a machine (carry .whl
# and .alt/7cf7865, made by `mkdir -p .alt/7cf7865 && git archive 7cf7865 rocsample | tar -x -C
# .alt/7cf7865`; <= 590 s): the device gate on this tree (GLIM, default 300 s), then phase 1's
# block redraw of unsettled threads (this tree) against 7cf7865's thread-alone redraw:
# kprofile graph-timed top_p alone, each tree with its own numba cache, at shapes where phase 1
# runs its fast pass in the TOP4 form (64 and 256 x 32000) and the TOP2 form (64 x 151936).
# tools/gpu/s29_check.sh goes on from there (the A/B at more shapes, temperature, sanitizers).
# Output: $OUT/gate.log, check-report-h200.json, ab.txt ("VARIANT GRAPH mode shape gpu_us=...")
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-300}"
grep -A6 "slowest 25" "$OUT/gate.log" | head -7
rev_tree 7cf7865
kp_warm --topp_alone --shapes 64x32000,64x151936
kp_ab 60 topp_alone "${S:-64x32000,256x32000,64x151936}"
echo "== done at $((SECONDS - T0)) s"
