#!/usr/bin/env bash
# On the lent H200 (sourced or run from a call script, after tools/gpu/env.sh): the device gate
# (`python -m rocsample.check --backend cuda`) with compute-sanitizer beside it over SAN_FILES
# (pytest paths, node ids or arguments; tools/gpu/sanitize.sh's custom part), starting 20-30 s
# after the gate so that the gate's workers compile first.
#   SAN_FILES   what the sanitizers run (required)
#   SAN_ENV     environment for them (e.g. "ROCSAMPLE_FUZZ=sanitize")   SAN_LIMIT  s a tool (90)
#   SAN_TOOLS   (memcheck racecheck synccheck)   SAN_WARM=1: a plain run of SAN_FILES first
#   GATE_LIMIT  s for the gate (300)
# Output: $OUT/check-report-h200.json, gate.log, done.txt, san/ (san.out, sanitize.json, logs)
T0=${T0:-$SECONDS}
mkdir -p "$OUT/san"
(sleep ${SAN_DELAY:-20}
 env ${SAN_ENV:-} OUT=$OUT/san FILES="$SAN_FILES" TOOLS="${SAN_TOOLS:-memcheck racecheck synccheck}" \
   LIMIT=${SAN_LIMIT:-90} WARM=${SAN_WARM:-0} bash tools/gpu/sanitize.sh > "$OUT/san/san.out" 2>&1
 echo "sanitize rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt") &
timeout ${GATE_LIMIT:-300} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "gate rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt"
wait
cat "$OUT/done.txt"; tail -3 "$OUT/gate.log"; grep -E "custom" "$OUT/san/san.out" | tail -6
