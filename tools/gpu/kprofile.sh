#!/usr/bin/env bash
# On the lent H200: per-kernel durations (ncu, clocks left alone) of the Sampler's kernels, then
# graph-timed per-call figures. Usage: bash tools/gpu/kprofile.sh [--greedy --chain ...]
# [--shapes 64x151936,...]; METRICS=a,b (ncu metric names; default gpu__time_duration.sum)
source tools/gpu/env.sh
python3 tools/gpu/kprofile.py "$@" > /dev/null 2>&1   # JIT warm-up into the disk cache
ncu --clock-control none --csv --metrics ${METRICS:-gpu__time_duration.sum} \
  python3 tools/gpu/kprofile.py "$@" 2>/dev/null > "$OUT/ncu.csv"
grep MARK "$OUT/ncu.csv" | head -50
python3 - "$OUT/ncu.csv" <<'PY'
import csv, sys
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
r = list(csv.reader(rows))
h = r[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); gi = h.index("Grid Size"); bi = h.index("Block Size")
mi = h.index("Metric Name")
for x in r[1:]:
    print(x[0], x[ki][:60], x[gi], x[bi], x[mi], x[vi])
PY
python3 tools/gpu/kprofile.py --graph "$@" 2>&1 | grep GRAPH
