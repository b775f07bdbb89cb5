#!/usr/bin/env bash
# The twenty-second session's last call, as run on 989912e (carry the numpy wheel; <= 430 s): phase 1's round maximum
# (KF.ROUND_MAX: greedy's and the tile routes' strided rows fold each round's maximum and find the
# index once at the end) against every token's compare and select (ROCSAMPLE_ROUND_MAX=0), each in
# its own NUMBA_CACHE_DIR, greedy and the chain, graph-timed, two passes interleaved; then the
# device gate on the tree (GLIM, default 290 s).
# The change was taken back in 7326a3d (ROCSAMPLE_ROUND_MAX no longer exists): run it on 989912e.
# Output: $OUT/ab.txt ("VARIANT GRAPH mode shape gpu_us=N"), kp-*.log, check-report-h200.json, gate.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
SH=${SH:-1x32000,64x151936,64x262144,256x32000}
for pass in 1 2; do
  for v in on off; do
    rm=1; [ "$v" = off ] && rm=0
    ROCSAMPLE_ROUND_MAX=$rm NUMBA_CACHE_DIR=/tmp/nc-$v timeout 70 python3 tools/gpu/kprofile.py \
      --graph --greedy --chain --shapes "$SH" > "$OUT/kp-$v-$pass.log" 2>&1
    echo "== kprofile $v rc=$? at $((SECONDS - T0)) s"
    graph_lines "p$pass-$v" < "$OUT/kp-$v-$pass.log" > /dev/null
  done
done
sort -k3,4 -k1 "$OUT/ab.txt"
grep -hE "Error|error" "$OUT"/kp-*.log | grep -v Warning | head -5
run_gate "${GLIM:-290}"
echo "== done at $((SECONDS - T0)) s"
