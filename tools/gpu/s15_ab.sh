#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the fifteenth session's first call: the tile
# finalize's changes graph-timed against 100932c's sampling_fast.py (BASE, made by
# `git show 100932c:rocsample/kernels/sampling_fast.py > tools/gpu/probe/sampling_fast_100932c.py`,
# carried untracked): new (this tree), nobin (ROCSAMPLE_WARP=max), plain (ROCSAMPLE_WARP=0),
# bplain (BASE with ROCSAMPLE_WARP=0), and this tree's kernels with the plan's TILE_MIN at 32
# (kprofile --tile-min 32: half the tiles at 32000-wide rows); each build its own numba cache,
# compiled in parallel; then the gate on this tree if time is left.
# Output: $OUT/ab.txt (lines "VARIANT GRAPH mode shape gpu_us=..."), check-report-h200.json, gate.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
ROOT=$PWD
BASE=${BASE:-tools/gpu/probe/sampling_fast_100932c.py}
run_v() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" python3 tools/gpu/kprofile.py "$@" ;;
    t32) timeout "$lim" python3 tools/gpu/kprofile.py --tile-min 32 "$@" ;;
    nobin) timeout "$lim" env ROCSAMPLE_WARP=max NUMBA_CACHE_DIR=/tmp/nc-nobin python3 tools/gpu/kprofile.py "$@" ;;
    plain) timeout "$lim" env ROCSAMPLE_WARP=0 NUMBA_CACHE_DIR=/tmp/nc-plain python3 tools/gpu/kprofile.py "$@" ;;
    base|bplain)
      local w=""; [ "$v" = bplain ] && w=0
      timeout "$lim" env ${w:+ROCSAMPLE_WARP=0} PYTHONPATH="$(printf %s "$PYTHONPATH" | sed "s#$ROOT#/tmp/base#g")" \
        NUMBA_CACHE_DIR=/tmp/nc-$v python3 /tmp/base/tools/gpu/kprofile.py "$@" ;;
  esac
}
rm -rf /tmp/base && mkdir /tmp/base && cp -a rocsample tools bench /tmp/base/ && cp "$BASE" /tmp/base/rocsample/kernels/sampling_fast.py
for v in new base nobin plain bplain; do
  ( run_v 170 $v --greedy --chain --topk50 --topp_alone --minp --shapes 1x32000,64x32000,64x151936 > /tmp/warm-$v.log 2>&1
    run_v 90 $v --topk1000 --shapes 64x151936 >> /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
g() { grep GRAPH | sed -E "s/gpu_us=\{'gpu_us': ([0-9.]+).*/gpu_us=\1/" | sed "s/^/$1 /" | tee -a "$OUT/ab.txt"; }
for v in new base; do
  run_v 50 $v --graph --chain --topk50 --shapes 1x32000,1x151936,64x32000,64x151936 2>&1 | g $v
  run_v 40 $v --graph --greedy --topp_alone --minp --shapes 1x32000,64x151936 2>&1 | g $v
  run_v 30 $v --graph --topk1000 --shapes 64x151936 2>&1 | g $v
  echo "-- $v at $((SECONDS - T0)) s"
done
for v in nobin plain bplain t32; do
  run_v 40 $v --graph --chain --topk50 --shapes 1x32000,64x32000 2>&1 | g $v
  echo "-- $v at $((SECONDS - T0)) s"
done
run_v 30 new --graph --chain --topk50 --shapes 1x32000 2>&1 | g new2
left=$((585 - (SECONDS - T0)))
if [ $left -gt 200 ]; then run_gate $left; fi
echo "== done at $((SECONDS - T0)) s"
