#!/usr/bin/env bash
# Written for the forty-sixth session's last call, which its budget did not leave; the next
# session's first call (carry .whl and .peers/fi074; <= 595 s): the device gate
# (python -m rocsample.check --backend cuda under GLIM, default 300 s), then top_k 1000 and the
# chain at the twelve shapes with PyTorch and FlashInfer 0.7.4 (bench/test_sampling.py,
# graph-timed, BLIM default 170 s), then compute-sanitizer racecheck over the large form's
# FINE layout tests at the simulator's shapes in the time left (stopping by STOP, default
# 585 s; none with 60 s or less left). Output: $OUT/gate.log, check-report-h200.json,
# bench.json, bench.md, warm.log, racecheck.log, san-summary.txt
set -u
export FLASHINFER=fi074
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-300}"
BK="${BK:-(top_k1000 or chain) and not reference and not chain_dev}" NUMBA_CACHE_DIR=/tmp/nc-new \
  topp_bench "${BLIM:-170}"
grep -E "^\| (top_k1000|chain) " "$OUT/bench.md" | head -40
race_fine "${STOP:-585}"
echo "== done at $((SECONDS - T0)) s"
