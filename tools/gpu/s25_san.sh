#!/usr/bin/env bash
# The twenty-fifth session (carry the numpy wheel; <= 300 s): compute-sanitizer memcheck,
# racecheck and synccheck over the nucleus pass's tests (its finishing form: the histogram and
# select passes' code in the pass's last block, on the pass's shared memory) and phase 1's
# argmax kernel's (split_block), warm without a sanitizer first (numba's disk cache); the
# simulator's shapes (ROCSAMPLE_FUZZ=sanitize).
# Output: $OUT/warm.log, memcheck.log, racecheck.log, synccheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=${T0:-$SECONDS}
export ROCSAMPLE_FUZZ=sanitize
FS=(tests/kernels/test_sampling_nucleus.py tests/kernels/test_argmax_kernel.py)
PA=(--backend cuda -q -p no:cacheprovider)
sanitizers
echo "== done at $((SECONDS - T0)) s"
