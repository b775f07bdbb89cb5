#!/usr/bin/env bash
# The twenty-seventh session's final call (carry .whl and .peers/fi074; <= 590 s): the device
# gate on the tree (GLIM, default 300 s), then bench/test_sampling.py's top_p095 and greedy at
# the twelve shapes with PyTorch and FlashInfer 0.7.4 in one process, graph-timed (BLIM,
# default 240 s). Output: $OUT/gate.log, check-report-h200.json, bench.json, bench.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-300}"
grep -A6 "slowest 25" "$OUT/gate.log" | head -7
topp_bench "${BLIM:-240}"
echo "== done at $((SECONDS - T0)) s"
