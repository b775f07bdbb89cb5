#!/usr/bin/env bash
# The twenty-third session (carry the numpy wheel; <= 400 s): compute-sanitizer memcheck,
# racecheck and synccheck over phase 1's argmax kernel's tests (tests/kernels/test_argmax_kernel.py)
# and the fast path's greedy cases, warm without a sanitizer first (numba's disk cache).
# Output: $OUT/warm.log, memcheck.log, racecheck.log, synccheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
T0=$SECONDS
FS=(tests/kernels/test_argmax_kernel.py tests/kernels/test_sampling_fast.py)
PA=(--backend cuda -q -p no:cacheprovider -k "argmax or greedy")
timeout 120 python3 -m pytest "${FS[@]}" "${PA[@]}" > "$OUT/warm.log" 2>&1
echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
for tool in memcheck racecheck synccheck; do
  api=(); [ "$tool" = memcheck ] && api=(--report-api-errors no)
  t0=$SECONDS
  timeout "${LIMIT:-90}" compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 99 \
    --print-limit 50 python3 -m pytest "${FS[@]}" "${PA[@]}" > "$OUT/$tool.log" 2>&1
  r=$?
  found=$(grep -cE "^========= (Invalid|Race|Barrier|Error|.*hazard)" "$OUT/$tool.log")
  echo "$tool rc=$r seconds=$((SECONDS - t0)) reports=$found | $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/$tool.log" | tail -1) | $(grep -E "[0-9]+ (passed|failed)" "$OUT/$tool.log" | tail -1)" \
    | tee -a "$OUT/san-summary.txt"
done
echo "== done at $((SECONDS - T0)) s"
