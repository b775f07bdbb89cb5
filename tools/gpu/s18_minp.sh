#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the eighteenth session's second MINP call: the MINP
# stream at eight loads a round with the row's seed and position read by a draw (new, the
# kernel's 32 registers), the same at 40 registers (n40: tools/gpu/probe/sampling_hist_n40.py,
# this tree's file with MINP_MAX_REGISTERS = 40) and ac79c6d's four predicated loads a round
# (base: tools/gpu/probe/sampling_hist_ac79c6d.py); the probe files are carried untracked.
# First ncu on phase 1 and the MINP kernel at 64 x 262144 for new and n40 (spill requests,
# duration, DRAM throughput), then graph-timed min_p 0.05 alone at six shapes, two passes, and
# the chain beside them once; then the gate on this tree (new) with the time left.
# Output: $OUT/ab.txt, $OUT/summary.txt, $OUT/kdetail-{new,n40}.txt, check-report-h200.json,
# gate.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
alt_tree base tools/gpu/probe/sampling_hist_ac79c6d.py
alt_tree n40 tools/gpu/probe/sampling_hist_n40.py
run_v() {  # limit, variant, script (kprofile.py or ncu ... python3 kprofile.py), args
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" "$@" ;;
    *) timeout "$lim" env PYTHONPATH="$(tree_path /tmp/t-$v)" \
         NUMBA_CACHE_DIR=/tmp/nc-$v "$@" ;;
  esac
}
kp() { local v=$1; shift; if [ "$v" = new ]; then echo tools/gpu/kprofile.py; else echo /tmp/t-$v/tools/gpu/kprofile.py; fi; }
M=(--minp --shapes 1x32000,64x32000,1x151936,64x151936,64x262144,256x262144)
C=(--chain --shapes 1x32000,64x32000,1x151936,64x151936,64x262144,256x262144)
for v in new n40 base; do
  ( run_v 200 $v python3 "$(kp $v)" "${M[@]}" > /tmp/warm-$v.log 2>&1
    [ $v = new ] && run_v 150 $v python3 "$(kp $v)" "${C[@]}" >> /tmp/warm-$v.log 2>&1
    echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for v in new n40; do
  run_v 90 $v ncu --clock-control none -k "regex:minp|partials" --launch-count 2 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    python3 "$(kp $v)" --minp --shapes 64x262144 > "$OUT/kdetail-$v.txt" 2>&1
  echo "-- ncu $v at $((SECONDS - T0)) s"
  grep -E "Duration|Local Memory Spilling Requests |DRAM Throughput|Registers Per" "$OUT/kdetail-$v.txt" | sed 's/  */ /g'
done
for pass in 1 2; do
  for v in new n40 base; do
    run_v 60 $v python3 "$(kp $v)" --graph "${M[@]}" 2>&1 | graph_lines $v
    echo "-- $v pass $pass at $((SECONDS - T0)) s"
  done
  [ $pass = 1 ] && run_v 60 new python3 tools/gpu/kprofile.py --graph "${C[@]}" 2>&1 | graph_lines new
done
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" new n40 base | tee "$OUT/summary.txt"
left=$((590 - (SECONDS - T0)))
if [ $left -gt 200 ]; then run_gate $left; fi
echo "== done at $((SECONDS - T0)) s"
