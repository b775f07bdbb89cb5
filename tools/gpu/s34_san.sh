#!/usr/bin/env bash
# The thirty-fourth session's sanitizer call (carry .whl; <= 590 s): compute-sanitizer memcheck,
# racecheck and synccheck over the nucleus and rank passes' tests and the conditional lane's
# (tests/kernels/test_sampling_nucleus.py, tests/kernels/test_graph_cond.py: 39 tests), the
# three tools at once (SAN_PAR=1), each under LIMIT (default 420 s), after one plain run
# (numba's disk cache). 8257326 gave every nucleus kernel need_lane (an atomic per left row),
# 4fe405d row-strided the rank pass's left rows and 6a2f353 made the passes' sums warp shuffles.
# (The thirty-fourth session's run of this on an H100, one tool after another under 75 s each,
# finished none of them: about 75 s each is far too little.)
# Output: $OUT/warm.log, {memcheck,racecheck,synccheck}.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
FS=(tests/kernels/test_sampling_nucleus.py tests/kernels/test_graph_cond.py)
PA=("${BH[@]}")
SAN_PAR=${SAN_PAR:-1} LIMIT=${LIMIT:-420} sanitizers
echo "== done at $((SECONDS - T0)) s"
