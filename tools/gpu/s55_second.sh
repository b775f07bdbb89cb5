#!/usr/bin/env bash
# The fifty-fifth session's second call (carry .whl; <= STOP, default 470 s, on a fresh machine):
# the device gate on the narrow fill made the default (500 logits a split, rows of 16384 to
# 65536 logits, at most 64 drawing splits; GLIM, default 300 s) while both variants compile,
# then the A/B of the fill off (ROCSAMPLE_DRAW_FILL_CHUNK=0) against the default, graph-timed
# with the bench's inputs, PASSES (default 2) passes, none started after STOP - 40. The first
# call's A/B (bench/results/nvidia-h100-s55-fill-ab.txt) had the uncapped fill 3-6% slower at
# 1 x 65536 (131 splits; now 64) and mixed at 1 x 4096 (now left to the narrow rule: the
# control with 8 x 32000, where the fill gives the rule's own 16). Outputs: $OUT/gate.log,
# check-report-h200.json, ab.txt.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-1x32000,2x32000,4x32000,1x16384,1x65536,8x32000,1x4096}
ARGS=(--graph --bench-inputs --temp --topp_alone --chain_dev --chain --shapes "$SH")
VS=("ROCSAMPLE_DRAW_FILL_CHUNK=0" "ROCSAMPLE_DRAW_FILL_CHUNK=500")
KLIM=${KLIM:-240} ab_compile
run_gate "${GLIM:-300}"
wait
STOP=${STOP:-470}
PASSES=${PASSES:-2} STOP_BY=$((STOP - 40)) ab_passes "$STOP"
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" 2>/dev/null | tail -30
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/ab.txt"
