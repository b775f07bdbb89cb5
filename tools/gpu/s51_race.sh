#!/usr/bin/env bash
# racecheck alone over s50_san.sh's racecheck subset (written in the fifty-first session; carry
# .whl; <= WLIM + LIMIT + 10 s): in the fiftieth session's call the three tools ran at once and
# racecheck, cut at 240 s, got through 14 of its 42 tests (no reports). Here a warm-up of that
# subset alone (JIT into the cache, under WLIM, default 130 s), then racecheck by itself under
# LIMIT (default 300 s), -vv (BH has -q) so a cut run still names the tests it finished.
# Output: $OUT/warm.log, racecheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
export ROCSAMPLE_FUZZ=sanitize
FS=("${FAST_SAN_FS[@]}")
PA=("${BH[@]}" -vv)  # BH has -q: -vv nets one -v
K=${RACE_K:-$FAST_RACE_K}
timeout "${WLIM:-130}" python3 -m pytest "${FS[@]}" "${PA[@]}" -k "$K" > "$OUT/warm.log" 2>&1
echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
LIMIT=${LIMIT:-300} RACE_SKIP="not ($K)" san_tool racecheck | tee -a "$OUT/san-summary.txt"
echo "racecheck finished $(grep -c ' PASSED' "$OUT/racecheck.log") tests; $(grep -c ' FAILED' "$OUT/racecheck.log") failed"
echo "== done at $((SECONDS - T0)) s"
