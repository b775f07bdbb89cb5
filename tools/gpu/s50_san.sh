#!/usr/bin/env bash
# The sanitizers over the sampling fast path (carry .whl): its tests (steps.sh's FAST_SAN_FS:
# tests/kernels/test_sampling_fast.py, 83 at the simulator's shapes with
# ROCSAMPLE_FUZZ=sanitize, and the gathered list's outlier regress test). Two modes:
# - default (the fiftieth session's call; <= 400 s on a warm machine): steps.sh's `sanitizers`
#   (one warm-up under 120 s, then the three tools at once: SAN_PAR=1, instrumented runs are
#   bound by the host's CPU, each under LIMIT, default 240 s): memcheck and synccheck over all
#   of them, racecheck over RACE_K (default FAST_RACE_K: tau()'s rounds, the small finalize's
#   tile_round(), the gathers, the large form; the others left out by RACE_SKIP). In the
#   fifty-first session racecheck got through 14 of its 42 tests that way before its cut.
# - RACE_ALONE=1 (the fifty-first session's; <= WLIM + LIMIT + 10 s): a warm-up of RACE_K's
#   tests alone (JIT into the cache, under WLIM, default 130 s), then racecheck by itself under
#   LIMIT (default 300 s), -vv (BH has -q) so a cut run still names the tests it finished.
# Output: $OUT/{warm,memcheck,synccheck,racecheck}.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
export ROCSAMPLE_FUZZ=sanitize
FS=("${FAST_SAN_FS[@]}")
K=${RACE_K:-$FAST_RACE_K}
if [ "${RACE_ALONE:-0}" = 1 ]; then
  PA=("${BH[@]}" -vv)  # BH has -q: -vv nets one -v
  timeout "${WLIM:-130}" python3 -m pytest "${FS[@]}" "${PA[@]}" -k "$K" > "$OUT/warm.log" 2>&1
  echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
  LIMIT=${LIMIT:-300} RACE_SKIP="not ($K)" san_tool racecheck | tee -a "$OUT/san-summary.txt"
  echo "racecheck finished $(grep -c ' PASSED' "$OUT/racecheck.log") tests; $(grep -c ' FAILED' "$OUT/racecheck.log") failed"
else
  PA=("${BH[@]}")
  LIMIT=${LIMIT:-240} RACE_SKIP="not ($K)" SAN_PAR=1 sanitizers
fi
echo "== done at $((SECONDS - T0)) s"
