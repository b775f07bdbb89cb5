#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the sixteenth session's first call: the round trips
# trimmed from the split kernels (seed and position with the row's parameters, the row's state
# before the branches on it, the last block's decrement after its fence, tile rows uncounted in
# phase 1, the fast draw's two logits loaded together) graph-timed against 45d35d3's kernels
# (BASE_DIR holds sampling_fast_45d35d3.py and sampling_hist_45d35d3.py, made by `git show
# 45d35d3:rocsample/kernels/<file>.py > tools/gpu/probe/<file>_45d35d3.py`, carried untracked),
# alternating new, base, new, base; then the changed kernels' cuda tests.
# Output: $OUT/ab.txt (lines "VARIANT GRAPH mode shape gpu_us=..."), $OUT/tests.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
run_v() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" python3 tools/gpu/kprofile.py "$@" ;;
    base)
      timeout "$lim" env PYTHONPATH="$BASE_PYTHONPATH" NUMBA_CACHE_DIR=/tmp/nc-base \
        python3 /tmp/base/tools/gpu/kprofile.py "$@" ;;
  esac
}
base_tree "${REV:-45d35d3}" sampling_fast sampling_hist
A=(--greedy --temp --topp_alone --minp --chain --chain_dev --shapes 1x32000,64x32000,64x151936)
B=(--temp --topp_alone --shapes 8x32000,256x32000)
C=(--topk1000 --shapes 1x32000,64x151936)
for v in new base; do
  ( run_v 200 $v "${A[@]}" > /tmp/warm-$v.log 2>&1
    run_v 60 $v "${B[@]}" >> /tmp/warm-$v.log 2>&1
    run_v 60 $v "${C[@]}" >> /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for pass in 1 2; do
  for v in new base; do
    run_v 70 $v --graph "${A[@]}" 2>&1 | graph_lines $v
    run_v 30 $v --graph "${B[@]}" 2>&1 | graph_lines $v
    run_v 30 $v --graph "${C[@]}" 2>&1 | graph_lines $v
    echo "-- $v pass $pass at $((SECONDS - T0)) s"
  done
done
left=$((585 - (SECONDS - T0)))
if [ $left -gt 40 ]; then
  timeout $left python3 -m pytest "${BH[@]}" -x tests/kernels/test_sampling_fast.py \
    tests/kernels/test_sampling_hist.py tests/kernels/test_sampling_nucleus.py > "$OUT/tests.log" 2>&1
  echo "== kernel tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
fi
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" new base | tee "$OUT/ab-summary.txt"
echo "== done at $((SECONDS - T0)) s"
