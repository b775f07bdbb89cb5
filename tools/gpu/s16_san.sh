#!/usr/bin/env bash
# On the lent H200 (<= 400 s; carry .whl), the sixteenth session's sanitizer call on the tree
# that lands: the sampling kernels' tests (test_sampling_hist.py and test_sampling_nucleus.py:
# the histogram, MINP, select and nucleus kernels; test_sampling_fast.py: phase 1 and the tile
# finalize) once without a sanitizer (numba's disk cache), then racecheck and synccheck over the
# histogram path's tests and memcheck over all three files, each under its own limit (a cut run
# reports what it found before the cut). Output: $OUT/warm.log, racecheck.log, memcheck.log,
# synccheck.log, san-summary.txt.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
FH=(tests/kernels/test_sampling_hist.py tests/kernels/test_sampling_nucleus.py)
FF=(tests/kernels/test_sampling_fast.py)
PA=(--backend cuda -q -p no:cacheprovider)
timeout 130 python3 -m pytest "${FH[@]}" "${FF[@]}" "${PA[@]}" > "$OUT/warm.log" 2>&1
echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
san() {  # tool limit files...
  local tool=$1 lim=$2; shift 2
  [ "$lim" -gt 0 ] || return 0
  local api=(); [ "$tool" = memcheck ] && api=(--report-api-errors no)
  local t0=$SECONDS
  timeout "$lim" compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 99 --print-limit 50 \
    python3 -m pytest "$@" "${PA[@]}" > "$OUT/$tool.log" 2>&1
  local r=$?
  local found; found=$(san_reports "$OUT/$tool.log")
  echo "$tool rc=$r seconds=$((SECONDS - t0)) reports=$found | $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/$tool.log" | tail -1) | $(grep -E "[0-9]+ (passed|failed)" "$OUT/$tool.log" | tail -1)" \
    | tee -a "$OUT/san-summary.txt"
}
san racecheck "${RACE_LIMIT:-110}" "${FH[@]}"
san memcheck "${MEM_LIMIT:-100}" "${FH[@]}" "${FF[@]}"
san synccheck "${SYNC_LIMIT:-70}" "${FH[@]}"
echo "== done at $((SECONDS - T0)) s"
