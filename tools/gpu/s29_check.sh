#!/usr/bin/env bash
# The twenty-ninth session's second device call (carry .whl and .alt/7cf7865; <= 590 s): the
# redraw test as fixed for a GPU (its own split count: the plan's left splits too short for the
# fast pass at 3 x 151936) and the register-cap tests on cuda; compute-sanitizer racecheck and
# synccheck over the redraw tests (the redraw's shared list, atomic and barrier); then the A/B
# against 7cf7865 (kprofile graph-timed, each tree its own numba cache): top_p alone at five
# shapes, temperature 0.8 at three and 1.0 at one.
# Output: $OUT/tests.log, san-summary.txt, {racecheck,synccheck}.log, ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
K="unsettled or near_ties or fast_pass or family or compilers"
timeout 150 python3 -m pytest "${BH[@]}" tests/kernels/test_sampling_nucleus.py \
  tests/kernels/test_sampling_fast.py tests/test_register_caps.py -k "$K" > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -5
for tool in racecheck synccheck; do
  t0=$SECONDS
  timeout 70 compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 50 \
    python3 -m pytest "${BH[@]}" tests/kernels/test_sampling_nucleus.py -k unsettled \
    > "$OUT/$tool.log" 2>&1
  r=$?
  echo "$tool rc=$r seconds=$((SECONDS - t0)) | $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/$tool.log" | tail -1) | $(grep -E "[0-9]+ (passed|failed)" "$OUT/$tool.log" | tail -1)" \
    | tee -a "$OUT/san-summary.txt"
done
rev_tree 7cf7865
kp_warm --topp_alone --temp --temp1 --shapes 64x32000,64x151936
kp_ab 60 topp_alone "64x32000,256x32000,64x151936,256x151936,64x262144"
kp_ab 50 temp "64x32000,256x32000,64x151936"
kp_ab 30 temp1 "256x32000"
echo "== done at $((SECONDS - T0)) s"
