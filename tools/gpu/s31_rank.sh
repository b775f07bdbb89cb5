#!/usr/bin/env bash
# The thirty-first session's rank pass on the H200 (carry .whl and .peers/fi074; <= 590 s):
# top_k 1000 alone graph-timed by tools/gpu/kprofile.py through the rank pass's routes
# (ROCSAMPLE_NUC_TOPK=1, the default) and through the histogram path as before (=0), each in its
# own process, at ten of the benchmark's shapes (KLIM per process, default 150 s); then
# bench/test_sampling.py's top_k1000 and chain with PyTorch and FlashInfer 0.7.4 at the twelve
# shapes (BLIM, default 240 s): issue #13's "top_k = 1000 within 1.5x of the chain".
# Run tools/gpu/s30_final.sh first (the device gate on this tree).
# Output: $OUT/ab.txt, bench.json, bench.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=1x32000,8x32000,64x32000,256x32000,1x151936,8x151936,256x151936,1x262144,8x262144,256x262144
for v in 1 0; do
  timeout "${KLIM:-150}" env ROCSAMPLE_NUC_TOPK=$v NUMBA_CACHE_DIR=/tmp/nc-new \
    python3 tools/gpu/kprofile.py --graph --topk1000 --shapes "$SH" 2>&1 | graph_lines "nuc_topk=$v"
  echo "== ROCSAMPLE_NUC_TOPK=$v done at $((SECONDS - T0)) s"
done
BK="top_k1000 or chain" topp_bench "${BLIM:-240}"
grep -E "^\| (top_k1000|chain) " "$OUT/bench.md" | head -30
echo "== done at $((SECONDS - T0)) s"
