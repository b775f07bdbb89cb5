#!/usr/bin/env bash
# On the lent H200 (<= 600 s), prepared for the fourteenth session's first call (issue #13's
# done-when asks the three sanitizers clean on the sampling tests): compute-sanitizer memcheck,
# racecheck and synccheck over tests/kernels/test_sampling_hist.py and test_sampling_nucleus.py
# (the histogram, select, MINP and nucleus kernels at 16 x 151936 and their forced forms), with
# the plain warm-up first (the thirteenth session's second sanitizer call skipped it and every
# tool was cut at 60 s compiling cold: docs/QA.md), then the fast draw's tests. If kernels
# change before it runs, run the gate first (tools/gpu/steps.sh's run_gate) in its own call.
# Carry .whl. Output: $OUT/sanitize.json and the logs (tools/gpu/sanitize.sh's).
set -u
FILES="tests/kernels/test_sampling_hist.py tests/kernels/test_sampling_nucleus.py \
tests/kernels/test_sampling_fast.py" LIMIT=${LIMIT:-150} bash tools/gpu/sanitize.sh
