#!/usr/bin/env bash
# On the lent H200 (about 230 s at ~470 steps/s beside the gate; LIMIT 300 s): 10^5 replays of the captured decode step + full-chain Sampler
# step, checked against the CPU model every 1000 steps (tools/gpu/soak.py). Success: the last
# line reads "soak: PASS: 100000 replays ... 0 mismatches, 0 growth events", exit 0, and
# $OUT/soak.json has "verdict": "PASS". The loop stops itself after --budget-s and then
# reports "PASS (partial: budget)" with the steps it did (BUDGET_S, default 270 s).
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout -s INT -k 15 ${LIMIT:-300} python3 tools/gpu/soak.py --backend cuda --steps 100000 --check-every 1000 \
  --budget-s ${BUDGET_S:-270} --out "$OUT" 2>&1 | grep -v -i "warn"
exit ${PIPESTATUS[0]}
