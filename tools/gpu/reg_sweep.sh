#!/usr/bin/env bash
# On the lent H200: graph-timed per-call figures (tools/gpu/kprofile.py --graph) of the sampling
# modes under register caps (rocsample.kernels.register_cap, ROCSAMPLE_MAX_REGISTERS). Each
# setting gets its own numba cache (numba's does not key on the cap); all compile at once, then
# time one after another.
# Usage: SETS="none hist=64,select=64 ..." bash tools/gpu/reg_sweep.sh --minp --topp_alone ... [--shapes RxV,...]
# VAR=NAME sweeps another environment knob the same way (the fifth session swept phase 1's loads
# in flight, a knob since removed: no gain, docs/PERF_NOTES.md "Fifth session"); VAR=env takes
# each setting as NAME=VALUE[,NAME=VALUE...] (the sixth session: ROCSAMPLE_DRAW_FAST and
# ROCSAMPLE_DRAW_QUADS together).
VAR=${VAR:-ROCSAMPLE_MAX_REGISTERS}
source tools/gpu/env.sh
SETS=${SETS:-none hist=64,select=64 hist=48,select=48}
setting() {  # the environment assignments of one setting
  if [ "$VAR" = env ]; then [ -n "$1" ] && printf '%s\n' "$1" | tr ',' ' '; else printf '%s\n' "$VAR=$1"; fi
}
i=0
for s in $SETS; do
  v=$s; [ "$v" = none ] && v=
  (env $(setting "$v") NUMBA_CACHE_DIR=/tmp/nc/$i timeout 300 python3 tools/gpu/kprofile.py "$@" \
     > /tmp/nc-warm-$i.log 2>&1 || { echo "warm-up of $s failed:"; tail -5 /tmp/nc-warm-$i.log; }) &
  i=$((i + 1))
done
wait
i=0
for s in $SETS; do
  v=$s; [ "$v" = none ] && v=
  echo "== $VAR: $s"
  env $(setting "$v") NUMBA_CACHE_DIR=/tmp/nc/$i timeout 200 python3 tools/gpu/kprofile.py --graph "$@" 2>&1 \
    | grep -E "GRAPH|Error" | sed -E "s/gpu_us=\{'gpu_us': ([0-9.]+), 'eager_us': ([0-9.]+).*/\1 us (eager \2)/" | head -80
  i=$((i + 1))
done
