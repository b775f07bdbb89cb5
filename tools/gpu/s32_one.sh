#!/usr/bin/env bash
# The thirty-second session's main call (carry .whl and .peers/fi074; <= 590 s): the device gate
# on this tree (GLIM, default 250 s: the rank pass and phase 1's tile count in the histogram
# code, their first GPU run), then bench/test_sampling.py's top_k1000, chain and top_p095 at the
# twelve shapes with PyTorch and FlashInfer 0.7.4 in one process, graph-timed (BLIM, default
# 300 s; BK: another -k).
# Output: $OUT/gate.log, check-report-h200.json, bench.json, bench.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-250}"
grep -A6 "slowest 25" "$OUT/gate.log" | head -7
BK="${BK:-top_k1000 or chain or top_p095}" NUMBA_CACHE_DIR=/tmp/nc-new topp_bench "${BLIM:-300}"
grep -E "^\| (top_k1000|chain) " "$OUT/bench.md" | head -30
echo "== done at $((SECONDS - T0)) s"
