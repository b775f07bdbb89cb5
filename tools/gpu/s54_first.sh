#!/usr/bin/env bash
# The first call after the fifty-third session (carry .whl; <= STOP, default 585 s, on a fresh
# machine): the plain device gate on the default the fifty-third session left (phase 1's warp
# shuffles on, TOP4 forms on the trees; their shared-memory path as 8d216f4 restructured it has
# not run in a gate), under GLIM (default 420 s: it took 339 s with the shuffles on), then the
# three sanitizers over the warp-shuffle test (every mode on the process's form; a warm-up
# under 120 s, then memcheck, racecheck and synccheck at once, each tool under the time left
# after the gate less 135 s), skipped with under 150 s left. GATE=0: the sanitizers alone. Output:
# $OUT/gate.log, check-report-h200.json, {warm,memcheck,racecheck,synccheck}.log,
# san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
[ "${GATE:-1}" = 1 ] && run_gate "${GLIM:-420}"
left=$(( ${STOP:-585} - (SECONDS - T0) ))
echo "== gate done at $((SECONDS - T0)) s; ${left} s left"
if [ "$left" -ge 150 ]; then
  export ROCSAMPLE_FUZZ=sanitize
  FS=(tests/kernels/test_sampling_fast.py)
  PA=("${BH[@]}" -k warp_shuffles)
  # (the warm-up takes up to 120 s of what is left)
  LIMIT=$(( left - 135 )) SAN_PAR=1 sanitizers
else
  echo "== sanitizers skipped: ${left} s left"
fi
echo "== all done at $((SECONDS - T0)) s"
