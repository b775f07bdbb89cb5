#!/usr/bin/env bash
# The first call after the fifty-fifth session (carry .whl; <= STOP, default 470 s, on a fresh
# machine): the device gate with the narrow fill on (ROCSAMPLE_DRAW_FILL_CHUNK=500: rows of
# 16384 to 65536 logits draw in splits of 500 logits, at most 64; GLIM, default 300 s) while
# both variants compile, then the A/B of the fill off (the default) against it, graph-timed with
# the bench's inputs, PASSES (default 2) passes, none started after STOP - 40. The fifty-fifth
# session's A/B (bench/results/nvidia-h100-s55-fill-ab.txt, the fill without its cap and floor)
# had 1-2 x 32000 faster in every drawing mode, 1 x 65536 3-6% slower at 131 splits (now 64)
# and 1 x 4096 mixed (now left to the narrow rule: a control with 8 x 32000, where the fill
# gives the rule's own 16). If the gate passes and the fill loses nowhere, make 500 the default
# (rocsample/sampling_plan.py; the plan tests set it either way) and say so in DESIGN.md.
# Outputs: $OUT/gate.log, check-report-h200.json, ab.txt.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-1x32000,2x32000,4x32000,1x16384,1x65536,8x32000,1x4096}
ARGS=(--graph --bench-inputs --temp --topp_alone --chain_dev --chain --shapes "$SH")
VS=("ROCSAMPLE_DRAW_FILL_CHUNK=0" "ROCSAMPLE_DRAW_FILL_CHUNK=500")
KLIM=${KLIM:-240} ab_compile
ROCSAMPLE_DRAW_FILL_CHUNK=500 run_gate "${GLIM:-300}"
wait
STOP=${STOP:-470}
PASSES=${PASSES:-2} STOP_BY=$((STOP - 40)) ab_passes "$STOP"
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" 2>/dev/null | tail -30
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/ab.txt"
