#!/usr/bin/env bash
# The next session's first call (carry .whl; <= 595 s): the device gate (python -m
# rocsample.check --backend cuda under GLIM, default 330 s; it runs the forty-fifth session's
# tests added after that session's last device call: the plan-scratch routing test in
# tests/test_sampling_plan_splits.py and tests/regress/test_every_plan_held_the_large_forms_scratch.py),
# then where top_k 1000's time goes at 64 x 151936 with the selection as the only path
# (tools/gpu/fin_stages.sh under FLIM, default 240 s; SH, default 64x32000, for its chain and
# top_k 50 stops). Output: $OUT/gate.log, check-report-h200.json, stages.txt, fin.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-330}"
SH=${SH:-64x32000} timeout "${FLIM:-240}" bash tools/gpu/fin_stages.sh > "$OUT/fin.log" 2>&1
echo "== fin_stages rc=$? at $((SECONDS - T0)) s"
grep -E "^-- stop|failed" "$OUT/fin.log" | tail -24
