#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the twenty-first session's last call on the landed
# tree: the device gate (python -m rocsample.check --backend cuda: the whole cuda suite,
# --run-slow), then chain_dev beside the chain (host scalars), graph-timed, with the histogram
# lane of device parameter routes as a conditional node ("cond", the default; at 1 and 8 rows
# forced with ROCSAMPLE_COND_MIN_ROWS=1, "cond1") and without (ROCSAMPLE_CONDITIONAL=0,
# "plain"), PASSES passes (default 2).
# Output: $OUT/check-report-h200.json, gate.log, ab.txt ("VARIANT GRAPH mode shape gpu_us=N")
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-300}"
SH=${SH:-1x151936,8x151936,64x32000,64x151936,256x151936}
for pass in $(seq "${PASSES:-2}"); do
  for v in cond plain cond1; do
    case $v in
      cond) env=() ;;
      plain) env=(ROCSAMPLE_CONDITIONAL=0) ;;
      cond1) env=(ROCSAMPLE_COND_MIN_ROWS=1) ;;
    esac
    sh=$SH; [ "$v" = cond1 ] && sh=1x151936,8x151936
    env "${env[@]}" timeout 150 python3 tools/gpu/kprofile.py --graph --chain_dev --chain \
      --shapes "$sh" > "$OUT/kp-$v-$pass.log" 2>&1
    echo "== kprofile $v rc=$? at $((SECONDS - T0)) s"
    graph_lines "p$pass-$v" < "$OUT/kp-$v-$pass.log" > /dev/null
  done
done
cat "$OUT/ab.txt"
grep -E "Error|error" "$OUT"/kp-*.log | grep -v Warning | head -5
echo "== all done at $((SECONDS - T0)) s"
