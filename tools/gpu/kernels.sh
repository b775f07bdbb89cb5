#!/usr/bin/env bash
# On the lent H200 (repo root): the sampling kernels' tests on cuda, and compute-sanitizer over
# them, in parts so each fits one device call.
#
#   PART=tests      bash tools/gpu/kernels.sh   # sampling tests, --run-slow        (~150 s cold JIT)
#   PART=memcheck   bash tools/gpu/kernels.sh   # compute-sanitizer memcheck         (<= 240 s)
#   PART=racecheck  bash tools/gpu/kernels.sh   # racecheck (shared memory)          (<= 240 s)
#   PART=synccheck  bash tools/gpu/kernels.sh   # synccheck                          (<= 200 s)
#   PART=all        all four, one after the other                                    (<= 830 s)
#
# Success: "tests: N passed" with no failed/error line and exit 0 in $OUT/kernels-tests.log;
# each sanitizer log ends "ERROR SUMMARY: 0 errors" (racecheck: "RACECHECK SUMMARY: 0 hazards")
# and pytest's "passed" line. Under a sanitizer the large shapes and the frequency tests are
# left out (hours under racecheck); they run in PART=tests.
source tools/gpu/env.sh
SAMPLING_TESTS="tests/kernels/test_sampling.py tests/kernels/test_sampling_fast.py tests/kernels/test_sampling_hist.py \
  tests/kernels/test_sampling_philox.py tests/kernels/test_sampling_errors_audit.py \
  tests/kernels/test_sampler_capture.py $(ls tests/regress/test_sampling_*.py) \
  tests/regress/test_seed_position_host_forms.py tests/regress/test_fast_finalize_fold_past_256_splits.py"
SAN_DESELECT=${SAN_DESELECT:-"not large_shapes and not frequencies and not stress and not errors_audit"}
part=${PART:-tests}
rc=0

run_tests() {
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  timeout ${LIMIT:-300} python3 -m pytest $SAMPLING_TESTS --backend cuda --run-slow -q \
    -p no:cacheprovider -rfEs --durations=10 --junitxml="$OUT/kernels-junit.xml" \
    > "$OUT/kernels-tests.log" 2>&1
  local r=$?
  tail -25 "$OUT/kernels-tests.log"
  echo "tests exit $r"
  return $r
}

run_sanitizer() {
  local tool=$1 limit=$2
  echo "== compute-sanitizer --tool $tool"
  local extra=""
  [ "$tool" = racecheck ] && extra="--racecheck-report all"
  timeout ${LIMIT:-$limit} compute-sanitizer --tool "$tool" $extra --error-exitcode 99 \
    --print-limit 20 python3 -m pytest $SAMPLING_TESTS --backend cuda -q -p no:cacheprovider \
    -k "$SAN_DESELECT" > "$OUT/kernels-sanitize-$tool.log" 2>&1
  local r=$?
  tail -4 "$OUT/kernels-sanitize-$tool.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race reported|Barrier error" \
    "$OUT/kernels-sanitize-$tool.log" | sort | uniq -c | head
  echo "$tool exit $r"
  return $r
}

case $part in
  tests) run_tests || rc=$? ;;
  memcheck) run_sanitizer memcheck 240 || rc=$? ;;
  racecheck) run_sanitizer racecheck 240 || rc=$? ;;
  synccheck) run_sanitizer synccheck 200 || rc=$? ;;
  all)
    run_tests || rc=$?
    for t in memcheck racecheck synccheck; do
      lim=240; [ $t = synccheck ] && lim=200
      run_sanitizer $t $lim || rc=$?
    done ;;
  *) echo "PART: expected tests, memcheck, racecheck, synccheck or all, got $part"; exit 2 ;;
esac
exit $rc
