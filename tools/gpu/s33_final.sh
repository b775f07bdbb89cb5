#!/usr/bin/env bash
# The thirty-third session's second call (carry .whl; <= 590 s): the device gate on this tree
# (the plain rank pass over four best past one row: NUC_RANK_PLAIN_TOP2_ROWS 1), the benchmark's
# top_k1000 and chain at the twelve shapes (rocsample only, graph-timed), then per-kernel
# breakdowns on the benchmark's own logits (tools/gpu/kprofile.sh --bench-inputs), each under
# its own limit, in the order their answers matter:
#   a/  top_k 1000 and top_p 0.95 alone at 8 rows and 256 rows of the wide shapes
#   variants.txt: top_k 1000 alone graph-timed (no ncu) at 64 rows without the tile
#       finalize's large form (the rank pass instead), and with every call's left rows
#       row-strided at 64 and 256 rows (ROCSAMPLE_NUC_RANK_STRIDED_ROWS)
#   c/  temperature, the chain and greedy at 1 x 32000, 64 x 32000 and 64 x 262144 (until CEND s,
#       default 575)
# Output: $OUT/gate.log, check-report-h200.json, topk.json, topk.md, variants.txt, {a,c}/ncu.csv
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-250}"
BJ=topk BK="test_rocsample and (top_k1000 or chain)" topp_bench 70
grep -E "^\| (top_k1000|chain) " "$OUT/topk.md" | cut -d'|' -f2-5
O=$OUT
prof() {  # NAME LIMIT kprofile arguments...
  local name=$1 lim=$2; shift 2
  [ "$lim" -ge 20 ] || { echo "== $name skipped (no time left)"; return; }
  mkdir -p "$O/$name"
  OUT=$O/$name timeout "$lim" bash tools/gpu/kprofile.sh --bench-inputs "$@" 2>&1
  echo "== $name rc=$? at $((SECONDS - T0)) s"
}
prof a 110 --topk1000 --topp_alone --shapes 8x151936,8x262144,256x151936,256x262144
# graph-timed variants of top_k 1000 alone, each its own process: the rank pass at 64 rows (no
# large form), its left rows at phase 1's splits (the default past 16 rows) and row-strided
vgraph() {  # NAME LIMIT SHAPES (env: the variant)
  timeout "$2" python3 tools/gpu/kprofile.py --graph --bench-inputs --topk1000 --shapes "$3" 2>&1 \
    | grep GRAPH | sed -E "s/gpu_us=\{'gpu_us': ([0-9.]+).*/gpu_us=\1/" | sed "s/^/$1 /" | tee -a "$O/variants.txt"
}
ROCSAMPLE_TILE_LARGE=0 vgraph rank-64 45 64x151936,64x262144
ROCSAMPLE_TILE_LARGE=0 ROCSAMPLE_NUC_RANK_STRIDED_ROWS=1073741824 vgraph rank-strided 60 \
  64x151936,64x262144,256x151936,256x262144
echo "== variants at $((SECONDS - T0)) s"
prof c $((${CEND:-575} - (SECONDS - T0))) --temp --chain --greedy --shapes 1x32000,64x32000,64x262144
