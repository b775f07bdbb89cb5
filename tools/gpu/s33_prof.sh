#!/usr/bin/env bash
# The thirty-third session's breakdown call (carry .whl; <= 590 s): per-kernel durations (ncu,
# tools/gpu/kprofile.sh) and graph-timed calls on the benchmark's own logits (--bench-inputs),
# with the plain rank pass over four best past R4 rows (default 1):
#   a/  top_k 1000 and top_p 0.95 alone at the wide shapes (where top_k 1000 misses 1.5x the chain)
#   b/  top_k 1000 at 64 rows without the tile finalize's large form (ROCSAMPLE_TILE_LARGE=0: the
#       rank pass instead)
#   c/  temperature, the chain and greedy at 1 x 32000, 64 x 32000 and 64 x 262144 (their misses)
# Output: $OUT/{a,b,c}/ncu.csv and the printed tables
set -u
source tools/gpu/env.sh
T0=$SECONDS
export ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS=${R4:-1}
O=$OUT
prof() {  # NAME LIMIT kprofile arguments...
  local name=$1 lim=$2; shift 2
  mkdir -p "$O/$name"
  OUT=$O/$name timeout "$lim" bash tools/gpu/kprofile.sh --bench-inputs "$@" 2>&1
  echo "== $name rc=$? at $((SECONDS - T0)) s"
}
prof a 240 --topk1000 --topp_alone --shapes 8x151936,8x262144,64x151936,256x151936,256x262144
ROCSAMPLE_TILE_LARGE=0 prof b 120 --topk1000 --shapes 64x151936,64x262144
prof c 150 --temp --chain --greedy --shapes 1x32000,64x32000,64x262144
