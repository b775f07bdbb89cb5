#!/usr/bin/env bash
# The twenty-fifth session's last call (carry .whl; <= 560 s): the nucleus pass's finishing form
# at its register cap of 48 (c48, this tree) against none (c0, ROCSAMPLE_MAX_REGISTERS=
# nucleus_finish=0: no spills in the rare finish, 85 registers), kprofile's graph-timed top_p
# alone with the finish route at every row count (ROCSAMPLE_NUC_FINISH_ROWS=1000), alternating
# twice, own numba caches; then, if c0 is faster at 1 x 32000 and 8 x 32000 (the shapes the
# route serves), the device gate with c0's setting (GLIM, default 300 s).
# Output: $OUT/ab.txt ("VARIANT GRAPH topp_alone shape gpu_us=..."), gate.log,
# check-report-h200.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
N=${N:-1x32000,8x32000,64x32000,256x32000}
kp() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  local cap=; [ "$v" = c0 ] && cap=ROCSAMPLE_MAX_REGISTERS=nucleus_finish=0
  timeout "$lim" env NUMBA_CACHE_DIR=/tmp/nc-$v ROCSAMPLE_NUC_FINISH_ROWS=1000 $cap \
    python3 tools/gpu/kprofile.py "$@"
}
for v in c48 c0; do
  ( kp 200 $v --topp_alone --shapes 1x32000 > /tmp/warm-$v.log 2>&1; echo "rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== warm at $((SECONDS - T0)) s: $(tail -qn1 /tmp/warm-*.log | paste -sd' ')"
for pass in 1 2; do
  for v in c48 c0; do
    kp 60 $v --graph --topp_alone --shapes "$N" 2>&1 | graph_lines $v
  done
  echo "-- pass $pass at $((SECONDS - T0)) s"
done
win=$(python3 - "$OUT/ab.txt" <<'PY'
import sys, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    v, _g, _m, shape, us = line.split()
    if shape in ("1x32000", "8x32000"):
        t[v].append(float(us.split("=")[1]))
print("c0" if sum(t["c0"]) < sum(t["c48"]) else "c48")
PY
)
echo "== faster at the route's shapes: $win"
if [ "$win" = c0 ]; then
  ROCSAMPLE_MAX_REGISTERS=nucleus_finish=0 NUMBA_CACHE_DIR=/tmp/nc-c0 run_gate "${GLIM:-300}"
fi
echo "== done at $((SECONDS - T0)) s"
