#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the tenth session's first call: the device gate on the ninth
# session's final tree (two tests added after its last gate), then min_p alone's slowdown since
# 075a33a located: ncu per-kernel durations and graph-timed calls of min_p 0.05 at the four
# largest shapes with HEAD's package and with 075a33a's and a15dc10's (whole `rocsample/` trees,
# extracted here by `git archive REV rocsample | tar -x -C .alt/REV`; carry .alt, .whl).
# Output: $OUT/check-report-h200.json, gate.log, ab-<tree>/ncu.csv, ab.txt
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
timeout ${GATE_LIMIT:-300} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
SH=64x151936,64x262144,256x151936,256x262144
OUT0=$OUT; PP0=$PYTHONPATH
for t in head 075a33a a15dc10; do
  if [ $t = head ]; then export PYTHONPATH=$PP0; else export PYTHONPATH=$PWD/.alt/$t:$PP0; fi
  python3 -c "import rocsample, sys; print('$t', rocsample.__file__)"
  mkdir -p $OUT0/ab-$t
  OUT=$OUT0/ab-$t timeout ${AB_LIMIT:-100} bash tools/gpu/kprofile.sh --minp --shapes $SH 2>&1 \
    | grep -v "^MARK" | sed "s/^/$t /" | tee -a "$OUT0/ab.txt" | grep -v "gpu__time" | tail -8
  echo "== $t at $((SECONDS - T0)) s"
done
export PYTHONPATH=$PP0
