#!/usr/bin/env bash
# On the lent H200 (<= 590 s; carry .whl), the fifteenth session's sanitizer call: racecheck over
# the fast draw's and tile finalize's tests (cut at 70 s in the call before), then memcheck,
# synccheck and racecheck over the histogram, select, MINP and nucleus kernels' tests
# (test_sampling_hist.py, test_sampling_nucleus.py; their kernels unchanged since 9bf0fc0).
# Output: $OUT/fast/ and $OUT/hist/ (tools/gpu/sanitize.sh's sanitize.json and logs each).
set -u
T0=$SECONDS
ROOT_OUT=${OUT:-/tmp/out}
OUT=$ROOT_OUT/fast TOOLS=racecheck FILES=tests/kernels/test_sampling_fast.py LIMIT=${LIMIT_FAST:-200} \
  bash tools/gpu/sanitize.sh 2>&1 | tail -4
echo "== fast at $((SECONDS - T0)) s"
OUT=$ROOT_OUT/hist FILES="tests/kernels/test_sampling_hist.py tests/kernels/test_sampling_nucleus.py" \
  LIMIT=${LIMIT_HIST:-95} bash tools/gpu/sanitize.sh 2>&1 | tail -5
echo "== done at $((SECONDS - T0)) s"
