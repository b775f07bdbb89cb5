#!/usr/bin/env bash
# Prepared in the twenty-first session for the next session (carry .whl; <= 400 s):
# compute-sanitizer memcheck, racecheck and synccheck over the tests of the histogram lane as a
# conditional node (tests/kernels/test_graph_cond.py: the gate kernel, phase 1's lane count, the
# histogram kernel's reset, captured graphs replayed as the rows change) and the branch tests,
# once warm without a sanitizer first (numba's disk cache), each tool under its own limit.
# Output: $OUT/warm.log, memcheck.log, racecheck.log, synccheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
FS=(tests/kernels/test_graph_cond.py tests/kernels/test_sampler_branches.py)
PA=(--backend cuda -q -p no:cacheprovider)
sanitizers
echo "== done at $((SECONDS - T0)) s"
