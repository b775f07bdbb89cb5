#!/usr/bin/env bash
# Prepared in the twenty-first session for the next session (carry .whl; <= 400 s):
# compute-sanitizer memcheck, racecheck and synccheck over the tests of the histogram lane as a
# conditional node (tests/kernels/test_graph_cond.py: the gate kernel, phase 1's lane count, the
# histogram kernel's reset, captured graphs replayed as the rows change) and the branch tests,
# once warm without a sanitizer first (numba's disk cache), each tool under its own limit.
# Output: $OUT/warm.log, memcheck.log, racecheck.log, synccheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
T0=$SECONDS
FS=(tests/kernels/test_graph_cond.py tests/kernels/test_sampler_branches.py)
PA=(--backend cuda -q -p no:cacheprovider)
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
