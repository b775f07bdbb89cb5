#!/usr/bin/env bash
# On the lent H200: per-kernel durations (ncu, clocks left alone) of the Sampler's kernels, then
# graph-timed per-call figures. Usage: bash tools/gpu/kprofile.sh [--greedy --chain ...]
# [--shapes 64x151936,...]; METRICS=a,b (ncu metric names; default gpu__time_duration.sum)
source tools/gpu/env.sh
python3 tools/gpu/kprofile.py "$@" > /dev/null 2>&1   # JIT warm-up into the disk cache
ncu --clock-control none --csv --metrics ${METRICS:-gpu__time_duration.sum} \
  python3 tools/gpu/kprofile.py "$@" 2>/dev/null > "$OUT/ncu.csv"
python3 tools/gpu/ncu_table.py "$OUT/ncu.csv"
python3 tools/gpu/kprofile.py --graph "$@" 2>&1 | grep GRAPH
