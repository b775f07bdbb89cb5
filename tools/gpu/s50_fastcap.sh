#!/usr/bin/env bash
# The A/B of ROCSAMPLE_DRAW_FAST_CAP (written in the fiftieth session; ran in the fifty-first on
# f05cc31, the last tree with the knob: bench/results/nvidia-h100-s51-fastcap-ab.txt; mixed, so
# the knob was removed after it -- rerun from f05cc31's tree; carry .whl;
# about 4 min): rows wider than 65536 logits whose drawing splits are too short for phase 1's
# fast pass (under 4 * FAST_MIN_QUADS tokens a thread) take fewer, longer ones where a block a
# CU is left (rocsample/sampling_plan.py: DRAW_FAST_CAP; at 8 x 151936 41 -> 24 splits). Modes
# that launch the drawing variant there: top_k 1000 alone (the rank route: 1.68x the chain),
# top_p alone, temperature; the chain (which does not) as the control. Graph-timed, the bench's
# inputs, SH (default 8x151936,8x262144,1x151936: only the first changes; the others are
# controls), PASSES (default 2) passes, none started after STOP_BY (default 560 s).
# Output: $OUT/ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-8x151936,8x262144,1x151936}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --temp --chain --shapes "$SH")
VS=("ROCSAMPLE_DRAW_FAST_CAP=0" "ROCSAMPLE_DRAW_FAST_CAP=1")
KLIM=${KLIM:-200} ab_compile
wait
ab_passes "${STOP_BY:-560}"
echo "== done at $((SECONDS - T0)) s"
