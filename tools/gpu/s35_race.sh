#!/usr/bin/env bash
# The thirty-fifth session's racecheck probe (carry .whl; <= 400 s): tools/gpu/racecheck_probe.py
# under compute-sanitizer racecheck with the two passes a conditional node (COND=4) replayed
# lane first (LPL), as plain graph nodes (COND=0), and a conditional node replayed lane second
# (PLL), each under 90 s (the probe checks every replay's tokens against the reference). Output: $OUT/race-*.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
for v in "4 LPL" "0 LPL" "4 PLL"; do
  set -- $v
  timeout 90 env COND=$1 ORDER=$2 compute-sanitizer --tool racecheck --error-exitcode 99 \
    python3 tools/gpu/racecheck_probe.py > "$OUT/race-$1-$2.log" 2>&1
  echo "== racecheck COND=$1 ORDER=$2 rc=$? at $((SECONDS - T0)) s"
  grep -E "^(eager|captured|step|PROBE)|Fatal|RACECHECK SUMMARY|hazard" "$OUT/race-$1-$2.log" | head -12
done
