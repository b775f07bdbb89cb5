#!/usr/bin/env bash
# The forty-sixth session's one call for the large form's FINE layout, when the budget leaves
# one (carry .whl, .peers/fi074 and .alt/01e9436, made by `mkdir -p .alt/01e9436 && git archive
# 01e9436 rocsample | tar -x -C .alt/01e9436`; <= 595 s): while VARIANTS (default: this tree as the router decides, this tree
# never taking the large form, ROCSAMPLE_TILE_LARGE=0; 01e9436, the strided tiles) compile in
# the background at SHAB (the shapes whose route the FINE layout changed), the device gate
# (python -m rocsample.check --backend cuda under GLIM, default 270 s); then top_k 1000 and
# the chain at the twelve shapes with PyTorch and FlashInfer 0.7.4 (bench/test_sampling.py,
# graph-timed, BLIM default 170 s); then one kprofile pass of each variant (top_k 1000 alone,
# graph-timed, the bench's inputs) none started after STOP_BY (default 540 s).
# Output: $OUT/gate.log, check-report-h200.json, bench.json, bench.md, ab.txt
set -u
export FLASHINFER=fi074
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SHAB=${SHAB:-64x32000,256x32000,64x151936,256x151936,64x262144,256x262144}
ARGS=(--graph --bench-inputs --topk1000 --shapes "$SHAB")
IFS=";" read -r -a VS <<< "${VARIANTS:-X=0;ROCSAMPLE_TILE_LARGE=0;TREE=01e9436}"
ab_compile
run_gate "${GLIM:-270}"
BK="${BK:-(top_k1000 or chain) and not reference and not chain_dev}" NUMBA_CACHE_DIR=/tmp/nc-new \
  topp_bench "${BLIM:-170}"
grep -E "^\| (top_k1000|chain) " "$OUT/bench.md" | head -40
wait
PASSES=1 ab_passes "${STOP_BY:-540}"
echo "== done at $((SECONDS - T0)) s"
