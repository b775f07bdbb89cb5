#!/usr/bin/env bash
# The thirty-eighth session's first call (carry .whl and .peers/fi074; <= 595 s): the device gate
# on this tree (python -m rocsample.check --backend cuda, under GLIM, default 420 s: the forty-first
# session's run on an H100 was cut at 98% by 330 s), then every
# mode of bench/test_sampling.py at the twelve shapes with PyTorch and FlashInfer 0.7.4 in one
# process, graph-timed, in the time left (at most 420 s, stopping by 585 s; BENCH=0 skips it).
# Output: $OUT/gate.log, check-report-h200.json, bench.json, bench.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-420}"
if [ "${BENCH:-1}" != 0 ]; then
  left=$((585 - (SECONDS - T0)))
  [ "$left" -gt 420 ] && left=420
  BK="not reference" NUMBA_CACHE_DIR=/tmp/nc-new topp_bench "$left"
  grep -E "^\| (top_k1000|chain|min_p|temperature|chain_dev|mixed_dev) " "$OUT/bench.md" | head -80
fi
echo "== done at $((SECONDS - T0)) s"
