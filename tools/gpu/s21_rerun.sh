#!/usr/bin/env bash
# On the lent H200 (carry .whl): the twenty-first session's rerun after the gate's one failure
# (tests/regress/test_row_counters_shared_by_two_split_counts.py asserted the plan's eight count
# rows; the lane's request count is a ninth): the cuda tests of every file the change touched,
# --run-slow, 8 workers by file (the gate's way). Output: $OUT/rerun.log, rerun.junit.xml
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
timeout "${LIM:-280}" python3 -m pytest "${BH[@]}" --run-slow -n 8 --dist loadfile -rfE \
  --junitxml="$OUT/rerun.junit.xml" \
  tests/regress/test_row_counters_shared_by_two_split_counts.py tests/kernels/test_graph_cond.py \
  tests/kernels/test_sampler_branches.py tests/kernels/test_sampler_capture.py \
  tests/kernels/test_sampling_fast.py tests/kernels/test_sampling_hist.py \
  tests/kernels/test_sampling_nucleus.py tests/backends/test_bound_fast_path.py \
  tests/test_binder.py tests/test_sampling_plan_splits.py > "$OUT/rerun.log" 2>&1
echo "== rerun rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/rerun.log")"
grep -E "^(FAILED|ERROR)" "$OUT/rerun.log" | head -10
