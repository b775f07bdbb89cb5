#!/usr/bin/env bash
# The twenty-fifth session's gate (carry the numpy wheel; <= 580 s): the device gate on the tree
# with the nucleus pass's finishing route and the argmax kernel's split_block (GLIM, default
# 330 s), then tools/gpu/s25_san.sh's sanitizers (LIMIT 70 s each).
# Output: $OUT/check-report-h200.json, gate.log, warm.log, {memcheck,racecheck,synccheck}.log,
# san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
run_gate "${GLIM:-330}"
LIMIT=${LIMIT:-70} T0=$T0 bash tools/gpu/s25_san.sh
echo "== done at $((SECONDS - T0)) s"
