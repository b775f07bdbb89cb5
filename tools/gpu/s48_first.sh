#!/usr/bin/env bash
# The next session's first call (written in the forty-eighth session, not yet run; carry .whl;
# <= 595 s): the device gate on this tree alone (python -m rocsample.check --backend cuda under
# GLIM, default 420 s), then s48_stages.sh (its warm-ups and ncu runs, none started after STOP,
# default 585 s from this script's start). The gate runs with nothing beside it: in the
# forty-second session it took 320 s alone and 405 s beside two kprofile builds. (Its time also
# varies from machine to machine: 1434 s of tests in the forty-sixth session's gate, 2338 s in
# the forty-seventh's, both alone; 2837 s in this session's first call, beside two variants'
# JIT, a 392 s suite.) The gate now writes its report, verdict INCOMPLETE, before its closing
# benchmark, so a cut there still says whether the suite passed.
# Output: $OUT/gate.log, check-report-h200.json (+ .junit.xml), stages.txt, ncu-*.csv
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-420}"
grep -E "^suite: " "$OUT/gate.log"
STOP=$(( ${STOP:-585} - (SECONDS - T0) )) bash tools/gpu/s48_stages.sh | tail -120
echo "== done at $((SECONDS - T0)) s"
