#!/usr/bin/env bash
# The twenty-sixth session's per-kernel split, run from a checkout of bf4e350 as s26_ab.sh (carry
# .whl and .alt/3d45059; <= 400 s): ncu's gpu__time_duration of each kernel of top_p alone
# (kprofile.py --topp_alone, clocks left alone), that tree against 3d45059's, each with its own
# numba cache.
# Output: $OUT/ncu-{new,base}.csv, $OUT/prof.txt ("VARIANT MARK/kernel grid block us")
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
rev_tree 3d45059
S=${S:-1x32000,64x32000,256x32000,1x151936,64x151936}
kp_warm --topp_alone --shapes "$S"
for v in new base; do
  if [ $v = new ]; then pp=$PYTHONPATH; kp=tools/gpu/kprofile.py; else pp=$BASE_PYTHONPATH; kp=/tmp/base/tools/gpu/kprofile.py; fi
  timeout 150 env PYTHONPATH="$pp" NUMBA_CACHE_DIR=/tmp/nc-$v ncu --clock-control none --csv \
    --metrics gpu__time_duration.sum python3 "$kp" --topp_alone --shapes "$S" 2>/dev/null > "$OUT/ncu-$v.csv"
  python3 - "$OUT/ncu-$v.csv" "$v" <<'PY' | tee -a "$OUT/prof.txt"
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
mark = ""
rows = [l for l in lines if l.startswith('"')]
r = list(csv.reader(rows))
h = r[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); gi = h.index("Grid Size")
marks = [l for l in lines if l.startswith("MARK")]
print(sys.argv[2], "marks:", " | ".join(marks))
for x in r[1:]:
    print(sys.argv[2], x[0], x[ki][:48], x[gi], x[vi])
PY
  echo "-- $v at $((SECONDS - T0)) s"
done
echo "== done at $((SECONDS - T0)) s"
