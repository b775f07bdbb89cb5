#!/usr/bin/env bash
# The next session's rank-pass call (carry .whl with numpy, gguf and ml_dtypes; <= 590 s): the
# device gate on this tree (GLIM, default 250 s: the plain rank pass over four best and the
# route rules of 66e3fd7 have not run on a GPU), then bench/test_sampling.py's top_k1000 alone
# (rocsample only, its own inputs, graph-timed) at the twelve shapes, each variant in its own
# process (KLIM, default 70 s): the plain pass over two best (the default), over four
# (ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS=0), over four with every call's left rows at phase 1's
# splits (ROCSAMPLE_NUC_RANK_STRIDED_ROWS=0 too), and the histogram path (ROCSAMPLE_NUC_TOPK=0).
# tools/rank_left_rate.py --bench counts the rows each leaves. Then bash tools/gpu/s32_bench.sh
# (carry .whl and .peers/fi074) for the peers.
# Output: $OUT/gate.log, check-report-h200.json, rank-*.json, rank-*.md
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-250}"
for v in "two 1 1073741824 16" "four 1 0 16" "four-splits 1 0 0" "hist 0 1073741824 16"; do
  set -- $v
  BJ=rank-$1 BK="test_rocsample and top_k1000" ROCSAMPLE_NUC_TOPK=$2 \
    ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS=$3 ROCSAMPLE_NUC_RANK_STRIDED_ROWS=$4 \
    NUMBA_CACHE_DIR=/tmp/nc-new topp_bench "${KLIM:-70}"
  grep -E "^\| top_k1000 " "$OUT/rank-$1.md" | cut -d'|' -f2-5 | sed "s/^/$1 /"
done
echo "== done at $((SECONDS - T0)) s"
