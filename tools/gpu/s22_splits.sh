#!/usr/bin/env bash
# The twenty-second session's last call (carry the numpy wheel; <= 300 s): the chain at 1 x 32000
# (10x PyTorch needs <= 13.9 us; 14.6-14.8 at the plan's 31 splits) and at 8 x 32000 at split
# counts past the plan's bound of 1024 logits a split (tools/gpu/split_sweep.py with
# SWEEP_SPLITS), blocks of 128 and 256, graph-timed; greedy and min_p alone beside it (they take
# the same split count).
# Output: $OUT/split-sweep.json, sweep.log
set -u
source tools/gpu/env.sh
T0=$SECONDS
SWEEP_MODES=${SWEEP_MODES:-chain,greedy,min_p005} SWEEP_SHAPES=${SWEEP_SHAPES:-1x32000,8x32000} \
  SWEEP_SPLITS=${SWEEP_SPLITS:-16,24,31,40,48,62,80,124} SWEEP_BLOCKS=${SWEEP_BLOCKS:-128,256} \
  timeout "${SWEEP_LIMIT:-240}" python3 tools/gpu/split_sweep.py > "$OUT/sweep.log" 2>&1
echo "== sweep rc=$? at $((SECONDS - T0)) s"
grep default "$OUT/sweep.log"
python3 - "$OUT/split-sweep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k, v in d.items():
    if k != "seconds":
        pts = sorted(v["points"].items(), key=lambda t: t[1])
        print(k, " ".join(f"{p}={u:.2f}" for p, u in pts))
PY
echo "== done at $((SECONDS - T0)) s"
