#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the eighteenth session's first call, graph-timed
# (kprofile.py --graph), each variant its own numba cache, compiled in parallel:
# - min_p alone through the MINP kernel: this tree (new: eight unpredicated loads a round from a
#   one-row view, the first round issued before the row's parameters) against ac79c6d's
#   sampling_hist.py (base: four predicated loads a round) and against this tree without the
#   early first round (nopre); the chain beside them for the 1.5x target (the chain does not use
#   the MINP kernel: timed in new only);
# - the chain and top_k 50 at one-row and 8-row shapes with the plan's TILE_MIN at 32 (t32,
#   kprofile --tile-min 32) against the default 16.
# The alternative kernels are carried untracked: tools/gpu/probe/sampling_hist_ac79c6d.py (`git
# show ac79c6d:rocsample/kernels/sampling_hist.py`) and sampling_hist_nopre.py (this tree's, the
# first round left in minp_row: the MINP kernel's minp_round call removed, pre=False).
# Output: $OUT/ab.txt (lines "VARIANT GRAPH mode shape gpu_us=..."), $OUT/summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
alt_tree base tools/gpu/probe/sampling_hist_ac79c6d.py
alt_tree nopre tools/gpu/probe/sampling_hist_nopre.py
run_v() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" python3 tools/gpu/kprofile.py "$@" ;;
    t32) timeout "$lim" python3 tools/gpu/kprofile.py --tile-min 32 "$@" ;;
    base|nopre)
      timeout "$lim" env PYTHONPATH="$(tree_path /tmp/t-$v)" \
        NUMBA_CACHE_DIR=/tmp/nc-$v python3 /tmp/t-$v/tools/gpu/kprofile.py "$@" ;;
  esac
}
M=(--minp --shapes 1x32000,64x32000,1x151936,64x151936,64x262144,256x262144)
C=(--chain --shapes 1x32000,64x32000,1x151936,64x151936,64x262144,256x262144)
T=(--chain --topk50 --shapes 1x32000,1x151936,1x262144,8x32000)
( run_v 200 new "${M[@]}" > /tmp/warm-new.log 2>&1; run_v 150 new "${C[@]}" >> /tmp/warm-new.log 2>&1
  run_v 100 new "${T[@]}" >> /tmp/warm-new.log 2>&1; echo "warm new rc=$?" >> /tmp/warm-new.log ) &
for v in base nopre; do
  ( run_v 200 $v "${M[@]}" > /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for pass in 1 2; do
  for v in new base; do
    run_v 60 $v --graph "${M[@]}" 2>&1 | graph_lines $v
    echo "-- $v pass $pass at $((SECONDS - T0)) s"
  done
  [ $pass = 1 ] && run_v 60 new --graph "${C[@]}" 2>&1 | graph_lines new
  [ $pass = 1 ] && run_v 60 nopre --graph "${M[@]}" 2>&1 | graph_lines nopre
done
for pass in 1 2; do
  for v in new t32; do
    run_v 45 $v --graph "${T[@]}" 2>&1 | graph_lines $v
  done
  echo "-- tile pass $pass at $((SECONDS - T0)) s"
done
run_v 60 new --graph "${C[@]}" 2>&1 | graph_lines new
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" new base nopre t32 | tee "$OUT/summary.txt"
echo "== done at $((SECONDS - T0)) s"
