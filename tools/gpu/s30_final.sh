#!/usr/bin/env bash
# The thirtieth session's final call (carry .whl, .peers/fi074 and .alt/328cd23; <= 590 s): the
# device gate on this tree (GLIM, default 270 s) while 328cd23's kernels compile beside it; the
# finishing form's exact pass timed on both trees (tools/gpu/straddle_time.py: 256 x 32000, the
# bench's inputs, top_p 0.95 and one row at its straddle); then bench/test_sampling.py's top_p095
# and greedy with PyTorch and FlashInfer 0.7.4 (BLIM, default 210 s; BK="top_p095" for top_p
# alone only).
# Output: $OUT/gate.log, check-report-h200.json, straddle.txt, bench.json, bench.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
rev_tree 328cd23
( timeout 200 env PYTHONPATH="$BASE_PYTHONPATH" NUMBA_CACHE_DIR=/tmp/nc-base \
    python3 /tmp/base/tools/gpu/straddle_time.py 8 2000 > /tmp/warm-base.log 2>&1
  echo "warm base rc=$?" >> /tmp/warm-base.log ) &
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-270}"
grep -A6 "slowest 25" "$OUT/gate.log" | head -7
wait
tail -n1 /tmp/warm-base.log
for v in new base; do
  echo "== $v" | tee -a "$OUT/straddle.txt"
  if [ $v = new ]; then
    timeout 60 env NUMBA_CACHE_DIR=/tmp/nc-new python3 tools/gpu/straddle_time.py 2>&1 | tail -4
  else
    timeout 60 env PYTHONPATH="$BASE_PYTHONPATH" NUMBA_CACHE_DIR=/tmp/nc-base \
      python3 /tmp/base/tools/gpu/straddle_time.py 2>&1 | tail -4
  fi | tee -a "$OUT/straddle.txt"
done
echo "== straddle done at $((SECONDS - T0)) s"
topp_bench "${BLIM:-210}"
echo "== done at $((SECONDS - T0)) s"
