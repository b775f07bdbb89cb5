#!/usr/bin/env bash
# The thirty-fourth session's second call (carry .whl and .peers/fi074; <= 590 s): the block
# sums' warp form ("sum" of rocsample.kernels.warp_parts: the nucleus and rank passes' five sums
# and the histogram path's block_sum by shuffles and one barrier) against the tree
# (ROCSAMPLE_WARP=max,bin), kprofile graph-timed, the bench's inputs, top_k 1000 and top_p alone
# at six shapes, two passes alternating, each form its own numba cache (KLIM, default 200 s a
# compile); then bash tools/gpu/s32_bench.sh (every mode with PyTorch and FI 0.7.4; BLIM).
# Output: $OUT/ab.txt, straddle.txt, bench.json, bench.md
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-1x151936,8x151936,8x262144,64x32000,256x32000,256x151936}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --shapes "$SH")
kp_env() {  # new|base ARGS...: kprofile in this tree, the warp sums on (new) or off (base)
  local v=$1; shift
  if [ "$v" = new ]; then kp_var new -- "$@"; else kp_var base ROCSAMPLE_WARP=max,bin -- "$@"; fi
}
for v in new base; do
  ( kp_env $v "${ARGS[@]}" > /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-new.log /tmp/warm-base.log
for pass in 1 2; do
  for v in new base; do
    kp_env $v "${ARGS[@]}" 2>&1 | graph_lines "$v"
  done
done
echo "== A/B done at $((SECONDS - T0)) s"
BLIM=${BLIM:-300} bash tools/gpu/s32_bench.sh
