#!/usr/bin/env bash
# The next session's rank-pass call (carry .whl with numpy, gguf and ml_dtypes; <= 590 s): the
# device gate on this tree (GLIM, default 260 s: the plain rank pass over four best and the
# route rules of 66e3fd7 have not run on a GPU), then top_k 1000 alone graph-timed by
# tools/gpu/kprofile.py at the shapes the plain rank pass serves, each variant in its own
# process (KLIM, default 60 s): the plain pass over two best (the default), over four
# (ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS=0), and the histogram path (ROCSAMPLE_NUC_TOPK=0).
# Then bash tools/gpu/s32_bench.sh (carry .whl and .peers/fi074) for the benchmark.
# Output: $OUT/gate.log, check-report-h200.json, ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-260}"
SH=1x151936,8x151936,256x151936,1x262144,8x262144,256x262144
for v in "1 1073741824" "1 0" "0 1073741824"; do
  set -- $v
  timeout "${KLIM:-60}" env ROCSAMPLE_NUC_TOPK=$1 ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS=$2 \
    NUMBA_CACHE_DIR=/tmp/nc-new python3 tools/gpu/kprofile.py --graph --topk1000 --shapes "$SH" \
    2>&1 | graph_lines "nuc_topk=$1 plain_top2_rows=$2"
  echo "== $v done at $((SECONDS - T0)) s"
done
echo "== done at $((SECONDS - T0)) s"
