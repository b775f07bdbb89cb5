#!/usr/bin/env bash
# The fiftieth session's sanitizer call (carry .whl; <= 400 s on a warm machine): the sampling
# fast path's tests (tests/kernels/test_sampling_fast.py, 83 at the simulator's shapes with
# ROCSAMPLE_FUZZ=sanitize, and the gathered list's outlier regress test) through steps.sh's
# `sanitizers` (one warm-up under 120 s, then the three tools at once: SAN_PAR=1, instrumented
# runs are bound by the host's CPU, each under LIMIT, default 240 s): memcheck and synccheck
# over all of them, racecheck over the code b41737e / 070d154 changed (tau()'s rounds, the
# small finalize's tile_round()) and the gathers (RACE_K; the others left out by RACE_SKIP).
# Output: $OUT/{warm,memcheck,synccheck,racecheck}.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
export ROCSAMPLE_FUZZ=sanitize
FS=("${FAST_SAN_FS[@]}")
PA=("${BH[@]}")
export LIMIT=${LIMIT:-240}
RACE_SKIP="not (${RACE_K:-$FAST_RACE_K})" SAN_PAR=1 sanitizers
echo "== done at $((SECONDS - T0)) s"
