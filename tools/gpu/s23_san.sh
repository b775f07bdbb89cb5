#!/usr/bin/env bash
# The twenty-third session (carry the numpy wheel; <= 400 s): compute-sanitizer memcheck,
# racecheck and synccheck over phase 1's argmax kernel's tests (tests/kernels/test_argmax_kernel.py)
# and the fast path's greedy cases, warm without a sanitizer first (numba's disk cache).
# Output: $OUT/warm.log, memcheck.log, racecheck.log, synccheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
FS=(tests/kernels/test_argmax_kernel.py tests/kernels/test_sampling_fast.py)
PA=(--backend cuda -q -p no:cacheprovider -k "argmax or greedy")
sanitizers
echo "== done at $((SECONDS - T0)) s"
