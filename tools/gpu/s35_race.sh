#!/usr/bin/env bash
# The thirty-fifth session's racecheck probe (carry .whl; <= 400 s): tools/gpu/racecheck_probe.py
# plain, then under compute-sanitizer racecheck with the two passes a conditional node (COND=4)
# replayed lane first (LPL) and lane second (PLL), and as plain graph nodes (COND=0), each under
# 90 s. Output: $OUT/race-*.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
timeout 120 env COND=4 ORDER=LPL python3 tools/gpu/racecheck_probe.py > "$OUT/race-plain.log" 2>&1
echo "== plain rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/race-plain.log"
for v in "4 LPL" "4 PLL" "0 LPL"; do
  set -- $v
  timeout 90 env COND=$1 ORDER=$2 compute-sanitizer --tool racecheck --error-exitcode 99 \
    python3 tools/gpu/racecheck_probe.py > "$OUT/race-$1-$2.log" 2>&1
  echo "== racecheck COND=$1 ORDER=$2 rc=$? at $((SECONDS - T0)) s"
  grep -E "^(eager|captured|step|PROBE)|Fatal|RACECHECK SUMMARY|hazard" "$OUT/race-$1-$2.log" | head -12
done
