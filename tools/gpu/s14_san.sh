#!/usr/bin/env bash
# On the lent H200, right after tools/gpu/s14_final.sh on the same machine (its gate fills the
# numba cache): memcheck, racecheck and synccheck over sanitize.sh's fuzz part (every public
# call and every kernel at small shapes, the finalize's warp-form maxima included), LIMIT
# seconds a tool (default 95: what the session's device time had left). Carry .whl.
# Output: $OUT/sanitize.json and the logs.
set -u
PARTS=fuzz LIMIT=${LIMIT:-95} bash tools/gpu/sanitize.sh
