#!/usr/bin/env bash
# The twenty-third session's last call (carry the numpy wheel; <= 560 s): the device gate on the
# tree with phase 1's argmax kernel on by default and the set_rows fuzz test's overlap view
# mended (GLIM, default 300 s), then tools/gpu/s23_san.sh's sanitizers (LIMIT 70 s each).
# Output: $OUT/check-report-h200.json, gate.log, warm.log, {memcheck,racecheck,synccheck}.log,
# san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
run_gate "${GLIM:-300}"
LIMIT=${LIMIT:-70} bash tools/gpu/s23_san.sh
echo "== done at $((SECONDS - T0)) s"
