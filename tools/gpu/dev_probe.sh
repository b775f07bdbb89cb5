#!/usr/bin/env bash
# On the lent H200 (carry .whl): tools/gpu/dev_probe.py's timing variants, PASSES passes of each
# RUN (a quoted string of dev_probe.py arguments), each run's whole output kept.
# Usage: bash tools/gpu/dev_probe.sh PASSES RUN [RUN ...]
#   bash tools/gpu/dev_probe.sh 3 "--shapes 1x151936,64x151936 --variants base,nohist,noselect"
# Output: $OUT/ab.txt ("p<pass>-r<run> GRAPH variant shape gpu_us=N ..."), p<pass>-r<run>.log
# (PY: the interpreter, python3 by default; LIMIT: seconds a run, 90 by default)
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
passes=$1
shift
for pass in $(seq "$passes"); do
  r=0
  for run in "$@"; do
    r=$((r + 1))
    log=$OUT/p$pass-r$r.log
    # shellcheck disable=SC2086  # RUN is split into dev_probe.py's arguments on purpose
    timeout "${LIMIT:-90}" "${PY:-python3}" tools/gpu/dev_probe.py $run > "$log" 2>&1
    echo "p$pass-r$r rc=$? at $((SECONDS - T0)) s: $run"
    graph_lines "p$pass-r$r" < "$log" > /dev/null
    grep -E "Error|error" "$log" | grep -v Warning | tail -3
  done
done
cat "$OUT/ab.txt"
echo "== done at $((SECONDS - T0)) s"
