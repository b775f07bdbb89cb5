#!/usr/bin/env bash
# The thirty-fourth session's sanitizer call (carry .whl; <= 590 s): compute-sanitizer memcheck,
# racecheck and synccheck over the nucleus and rank passes' tests and the conditional lane's
# (tests/kernels/test_sampling_nucleus.py, tests/kernels/test_graph_cond.py), each tool under
# LIMIT (default 140 s), after one plain run (numba's disk cache). 8257326 gave every nucleus
# kernel need_lane (an atomic per left row) and 4fe405d row-strided the rank pass's left rows.
# Output: $OUT/warm.log, {memcheck,racecheck,synccheck}.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
FS=(tests/kernels/test_sampling_nucleus.py tests/kernels/test_graph_cond.py)
PA=("${BH[@]}")
LIMIT=${LIMIT:-140} sanitizers
echo "== done at $((SECONDS - T0)) s"
