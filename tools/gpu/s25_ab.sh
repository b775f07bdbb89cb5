#!/usr/bin/env bash
# The twenty-fifth session's A/B and gate (carry .whl; <= 590 s): kprofile's graph-timed top_p
# alone with the nucleus pass finishing every row (Route.finish: this tree's default at rows of
# at most NUC_FINISH_VOCAB logits; finish40: its register cap at 40 instead of 48, own numba
# cache) against the row-strided passes (ROCSAMPLE_NUC_FINISH_VOCAB=0), and at the 151936-wide
# shapes the finish forced (1000000), alternating twice; then the device gate (GLIM, default
# 300 s). Output: $OUT/ab.txt ("VARIANT GRAPH topp_alone shape gpu_us=..."), gate.log,
# check-report-h200.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
N=${N:-1x32000,8x32000,64x32000,256x32000}
W=${W:-1x151936,64x151936}
kp() {  # limit, cache, finish vocab ('' = default), kprofile args
  local lim=$1 c=$2 f=$3; shift 3
  timeout "$lim" env NUMBA_CACHE_DIR=/tmp/nc-$c ${f:+ROCSAMPLE_NUC_FINISH_VOCAB=$f} \
    $([ "$c" = r40 ] && echo ROCSAMPLE_MAX_REGISTERS=nucleus_finish=40) python3 tools/gpu/kprofile.py "$@"
}
( kp 200 main "" --topp_alone --shapes 1x32000 > /tmp/warm.log 2>&1; echo "rc=$?" >> /tmp/warm.log ) &
( kp 200 r40 "" --topp_alone --shapes 1x32000 > /tmp/warm40.log 2>&1; echo "rc=$?" >> /tmp/warm40.log ) &
wait
echo "== warm at $((SECONDS - T0)) s: $(tail -qn1 /tmp/warm.log /tmp/warm40.log | paste -sd' ')"
for pass in 1 2; do
  kp 60 main "" --graph --topp_alone --shapes "$N" 2>&1 | graph_lines finish
  kp 60 main 0 --graph --topp_alone --shapes "$N,$W" 2>&1 | graph_lines strided
  kp 60 r40 "" --graph --topp_alone --shapes "$N" 2>&1 | graph_lines finish40
  kp 60 main 1000000 --graph --topp_alone --shapes "$W" 2>&1 | graph_lines finish_wide
  echo "-- pass $pass at $((SECONDS - T0)) s"
done
NUMBA_CACHE_DIR=/tmp/nc-main run_gate "${GLIM:-300}"
echo "== done at $((SECONDS - T0)) s"
