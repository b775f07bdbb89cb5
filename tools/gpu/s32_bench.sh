#!/usr/bin/env bash
# The thirty-second session's benchmark call (carry .whl and .peers/fi074; <= 590 s): the
# finishing form's exact pass timed on this tree (tools/gpu/straddle_time.py: 256 x 32000, the
# bench's top_p095 inputs, one row at its straddle against none), then every mode of
# bench/test_sampling.py (host scalars and per-row device parameters) at the twelve shapes with
# PyTorch and FlashInfer 0.7.4 in one process, graph-timed (BLIM, default 420 s; BK: another -k;
# STRADDLE=0 skips the straddle probe).
# Output: $OUT/straddle.txt, bench.json, bench.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
if [ "${STRADDLE:-1}" = 1 ]; then
  timeout 120 env NUMBA_CACHE_DIR=/tmp/nc-new python3 tools/gpu/straddle_time.py 2>&1 | tail -4 \
    | tee "$OUT/straddle.txt"
  echo "== straddle done at $((SECONDS - T0)) s"
fi
BK="${BK:-not reference}" NUMBA_CACHE_DIR=/tmp/nc-new topp_bench "${BLIM:-420}"
grep -E "^\| (top_k1000|chain|min_p|temperature|chain_dev|mixed_dev) " "$OUT/bench.md" | head -80
echo "== done at $((SECONDS - T0)) s"
