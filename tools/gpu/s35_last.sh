#!/usr/bin/env bash
# The thirty-fifth session's last call (carry .whl; <= 400 s): tools/gpu/racecheck_probe.py under
# racecheck (RACE, default "4 LPL" and "0 LPL": the rank route's lane as a conditional node and as
# plain nodes) in the background while s35_nu.sh's two builds compile, then s35_nu.sh's A/B
# passes (PASSES, default 2) on the quiet GPU once the probe is done.
# Output: $OUT/race-*.log, ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
(
  IFS=';' read -r -a RV <<< "${RACE:-4 LPL;0 LPL}"
  for v in "${RV[@]}"; do
    race_probe $v
  done
) > /tmp/race.txt 2>&1 &
SH=${SH:-8x32000,64x32000,8x151936,64x151936,256x32000,256x151936,256x262144}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --shapes "$SH")
read -r -a NUS <<< "${NU:-8 8,nucleus=4,nucleus_finish=16,rank_finish=16}"
for i in "${!NUS[@]}"; do
  echo "v$i = ROCSAMPLE_NUC_UNROLL=${NUS[$i]}" | tee -a "$OUT/ab.txt"
  ( KLIM=${KLIM:-240} kp_var "nu$i" ROCSAMPLE_NUC_UNROLL="${NUS[$i]}" -- "${ARGS[@]}" \
      > "/tmp/warm-$i.log" 2>&1; echo "warm v$i rc=$?" >> "/tmp/warm-$i.log" ) &
done
wait
cat /tmp/race.txt
echo "== compiled and probed at $((SECONDS - T0)) s"; for i in "${!NUS[@]}"; do tail -n1 "/tmp/warm-$i.log"; done
for pass in $(seq "${PASSES:-2}"); do
  for i in "${!NUS[@]}"; do
    KLIM=80 kp_var "nu$i" ROCSAMPLE_NUC_UNROLL="${NUS[$i]}" -- "${ARGS[@]}" 2>&1 | graph_lines "v$i"
  done
done
echo "== done at $((SECONDS - T0)) s"
