#!/usr/bin/env bash
# The first call after the fifty-fourth session (carry .whl; <= STOP, default 585 s, on a fresh
# machine): the plain device gate (GLIM, default 420 s; its suite now holds
# tests/kernels/test_draw_fill.py, the drawing routes at more splits than the plan's, not yet
# run on a GPU), while the narrow fill's two variants compile in the background, then their
# A/B (rocsample.sampling_plan._DRAW_FILL_CHUNK, off by default: ROCSAMPLE_DRAW_FILL_CHUNK=500
# gives one row of 32000 logits 64 drawing splits against 16), graph-timed with the bench's
# inputs, PASSES (default 2) passes of each variant in turn, none started after STOP_AB
# (default STOP - 60). The fifty-fourth session's sweep (bench/results/
# nvidia-h100-s54-narrow-sweep.txt, one pass) had temperature at 1 x 32000 6.96 -> 6.00 us and
# top_p alone 14.86 -> 13.90 at 64 splits. The chain (host scalars) is the control: it never
# takes the drawing splits. Then, with 100 s or more left, the chain's and temperature's kernels
# under ncu at 1 x 32000. Outputs: $OUT/gate.log, check-report-h200.json, ab.txt, kprofile.log,
# ncu.csv. If v1 wins at 1-4 rows and loses nowhere, make 500 the default (the plan tests that
# pin today's counts move with it) and run the gate once more.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-1x32000,2x32000,4x32000,8x32000,1x1024,1x4096,1x65536}
ARGS=(--graph --bench-inputs --temp --topp_alone --chain_dev --chain --shapes "$SH")
VS=("ROCSAMPLE_DRAW_FILL_CHUNK=0" "ROCSAMPLE_DRAW_FILL_CHUNK=500")
KLIM=${KLIM:-300} ab_compile
run_gate "${GLIM:-420}"
wait
STOP=${STOP:-585}
PASSES=${PASSES:-2} STOP_BY=${STOP_AB:-$((STOP - 60))} ab_passes "$STOP"
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" 2>/dev/null | tail -30
# the chain's and temperature's kernels one by one under ncu at 1 x 32000 (the chain misses 10x
# PyTorch there by 0.5 us; the fifty-fourth session's try did not finish in 100 s), in what is left
left=$(( STOP - (SECONDS - T0) ))
if [ "$left" -ge 100 ]; then
  timeout $(( left - 15 )) bash tools/gpu/kprofile.sh --chain --temp --shapes 1x32000 \
    > "$OUT/kprofile.log" 2>&1
  echo "== kprofile rc=$? at $((SECONDS - T0)) s"; tail -25 "$OUT/kprofile.log"
fi
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/ab.txt"
