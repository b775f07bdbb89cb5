#!/usr/bin/env bash
# The fifty-seventh session's first call (carry .whl; <= STOP, default 585 s, on a fresh machine):
# the plain device gate on the tree as it stands (the narrow fill on by default since 01699ca,
# which no gate has run as the default; GLIM, default 450 s: the fifty-sixth session's gate
# beside the A/B's compiles was cut at 300 s) while tools/gpu/s56_dev.sh's two variants compile,
# then s56_dev.sh's A/B (FAST3 on against off: the chain as the control, chain_dev, temperature;
# SH as there), PASSES (default 2) passes, none started after STOP - 40.
# Outputs: $OUT/gate.log, check-report-h200.json, ab.txt.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-1x151936,64x151936,256x151936,64x262144}
ARGS=(--graph --bench-inputs --chain --chain_dev --temp --shapes "$SH")
VS=("ROCSAMPLE_FAST3=1" "ROCSAMPLE_FAST3=0")
KLIM=${KLIM:-240} ab_compile
run_gate "${GLIM:-450}"
wait
STOP=${STOP:-585}
PASSES=${PASSES:-2} STOP_BY=$((STOP - 40)) ab_passes "$STOP"
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" 2>/dev/null | tail -30
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/ab.txt"
