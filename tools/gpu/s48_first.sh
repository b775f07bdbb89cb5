#!/usr/bin/env bash
# The forty-eighth session's second call (carry .whl; <= 595 s): the device gate on this tree
# (python -m rocsample.check --backend cuda under GLIM, default 470 s: on a fresh machine the
# suite alone took 392 s beside two variants' JIT, and 401 s cut the check's closing benchmark)
# while s48_stages.sh's three variants compile one after another in the background, then
# s48_stages.sh's ncu runs in the time left (none started after STOP, default 585 s).
# Output: $OUT/gate.log, check-report-h200.json, stages.txt, ncu-*.csv, warm.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
ONLY=warm bash tools/gpu/s48_stages.sh > "$OUT/warm.log" 2>&1 &
run_gate "${GLIM:-470}"
wait
cat "$OUT/warm.log"
ONLY=ncu STOP=$(( ${STOP:-585} - (SECONDS - T0) )) bash tools/gpu/s48_stages.sh | tail -120
echo "== done at $((SECONDS - T0)) s"
