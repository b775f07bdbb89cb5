#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the fifteenth session's first call: the tile finalize's
# changes graph-timed against 100932c's sampling_fast.py (the base copy, made by `git show
# 100932c:rocsample/kernels/sampling_fast.py > tools/gpu/probe/sampling_fast_100932c.py`, carried
# untracked; REV and BASE_DIR pick another, steps.sh's base_tree): new (this tree), nobin
# (ROCSAMPLE_WARP=max), plain (ROCSAMPLE_WARP=0), bplain (the base with ROCSAMPLE_WARP=0), and this
# tree's kernels with the plan's TILE_MIN at 32 (kprofile --tile-min 32: half the tiles at
# 32000-wide rows); each build its own numba cache, compiled in parallel; then the gate on this
# tree if time is left.
# Output: $OUT/ab.txt (lines "VARIANT GRAPH mode shape gpu_us=..."), check-report-h200.json, gate.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
run_v() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" python3 tools/gpu/kprofile.py "$@" ;;
    t32) timeout "$lim" python3 tools/gpu/kprofile.py --tile-min 32 "$@" ;;
    nobin) timeout "$lim" env ROCSAMPLE_WARP=max NUMBA_CACHE_DIR=/tmp/nc-nobin python3 tools/gpu/kprofile.py "$@" ;;
    plain) timeout "$lim" env ROCSAMPLE_WARP=0 NUMBA_CACHE_DIR=/tmp/nc-plain python3 tools/gpu/kprofile.py "$@" ;;
    base|bplain)
      local w=""; [ "$v" = bplain ] && w=0
      timeout "$lim" env ${w:+ROCSAMPLE_WARP=0} PYTHONPATH="$BASE_PYTHONPATH" \
        NUMBA_CACHE_DIR=/tmp/nc-$v python3 /tmp/base/tools/gpu/kprofile.py "$@" ;;
  esac
}
base_tree "${REV:-100932c}" sampling_fast
for v in new base nobin plain bplain; do
  ( run_v 170 $v --greedy --chain --topk50 --topp_alone --minp --shapes 1x32000,64x32000,64x151936 > /tmp/warm-$v.log 2>&1
    run_v 90 $v --topk1000 --shapes 64x151936 >> /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for v in new base; do
  run_v 50 $v --graph --chain --topk50 --shapes 1x32000,1x151936,64x32000,64x151936 2>&1 | graph_lines $v
  run_v 40 $v --graph --greedy --topp_alone --minp --shapes 1x32000,64x151936 2>&1 | graph_lines $v
  run_v 30 $v --graph --topk1000 --shapes 64x151936 2>&1 | graph_lines $v
  echo "-- $v at $((SECONDS - T0)) s"
done
for v in nobin plain bplain t32; do
  run_v 40 $v --graph --chain --topk50 --shapes 1x32000,64x32000 2>&1 | graph_lines $v
  echo "-- $v at $((SECONDS - T0)) s"
done
run_v 30 new --graph --chain --topk50 --shapes 1x32000 2>&1 | graph_lines new2
left=$((585 - (SECONDS - T0)))
if [ $left -gt 200 ]; then run_gate $left; fi
echo "== done at $((SECONDS - T0)) s"
