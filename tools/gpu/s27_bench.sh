#!/usr/bin/env bash
# The twenty-seventh session's benchmark (carry .whl/numpy-*.whl and .peers/fi074; <= 420 s):
# bench/test_sampling.py's top_p095 and greedy at the twelve shapes, rocsample,
# PyTorch and FlashInfer 0.7.4 in one process, graph-timed; then ncu on phase 1 of temperature
# (0.8, and 1.0 as top_p alone's) against top_p alone at 64 and 256 x 32000 (time, registers, achieved occupancy, instructions),
# for the next session's plan. Output: $OUT/bench.json, bench.md, ncu.csv, ncu.txt
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
topp_bench "${BLIM:-240}"
M=gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__grid_size
timeout "${NLIM:-110}" ncu --clock-control none --csv --metrics "$M" python3 tools/gpu/kprofile.py \
  --temp --temp1 --topp_alone --shapes 64x32000,256x32000 2>/dev/null > "$OUT/ncu.csv"
echo "== ncu rc=$? at $((SECONDS - T0)) s"
python3 - "$OUT/ncu.csv" <<'PY' | tee "$OUT/ncu.txt"
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
print(" | ".join(l for l in lines if l.startswith("MARK")))
r = list(csv.reader([l for l in lines if l.startswith('"')]))
h = r[0]; ki = h.index("Kernel Name"); mi = h.index("Metric Name"); vi = h.index("Metric Value")
for x in r[1:]:
    print(x[0], x[ki][:44], x[mi], x[vi])
PY
echo "== done at $((SECONDS - T0)) s"
