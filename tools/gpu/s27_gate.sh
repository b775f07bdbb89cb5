#!/usr/bin/env bash
# The twenty-seventh session's first call (carry .whl; <= 500 s): the device gate on the tree
# (GLIM, default 330 s), then compute-sanitizer memcheck, racecheck and synccheck over the
# nucleus pass's and phase 1's argmax tests (the simulator's shapes, ROCSAMPLE_FUZZ=sanitize).
# Output: $OUT/gate.log, check-report-h200.json, warm.log, {memcheck,racecheck,synccheck}.log,
# san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-330}"
export ROCSAMPLE_FUZZ=sanitize
FS=(tests/kernels/test_sampling_nucleus.py tests/kernels/test_argmax_kernel.py)
PA=(--backend cuda -q -p no:cacheprovider)
LIMIT=${LIMIT:-60} sanitizers
echo "== done at $((SECONDS - T0)) s"
