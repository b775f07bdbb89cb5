#!/usr/bin/env bash
# The thirty-fifth session's first call (carry .whl with numpy, gguf and ml_dtypes; <= 590 s):
# the device gate on this tree (GLIM, default 330 s; 32c9ba4's block-sums helper, which the
# finishing form's exact pass now calls too, has run on no GPU), with tools/gpu/s35_nu.sh's
# three kprofile builds (ROCSAMPLE_NUC_UNROLL 4, 8, 16, each its own numba cache) compiling in
# the background meanwhile (the gate is not timed); then s35_nu.sh's A/B passes on the quiet GPU
# and, while the call has NCU_BY seconds left (default: start by 420 s), its ncu metrics.
# Output: $OUT/gate.log, check-report-h200.json, ab.txt, ncu.csv
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-8x32000,64x32000,8x151936,64x151936,256x32000,256x151936,256x262144}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --shapes "$SH")
for nu in 4 8 16; do
  ( KLIM=${KLIM:-300} kp_var "nu$nu" ROCSAMPLE_NUC_UNROLL="$nu" -- "${ARGS[@]}" \
      > "/tmp/warm-$nu.log" 2>&1; echo "warm $nu rc=$? at $((SECONDS - T0)) s" >> "/tmp/warm-$nu.log" ) &
done
run_gate "${GLIM:-330}"
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-{4,8,16}.log
for pass in $(seq "${PASSES:-1}"); do
  for nu in 8 4 16; do
    KLIM=100 kp_var "nu$nu" ROCSAMPLE_NUC_UNROLL="$nu" -- "${ARGS[@]}" 2>&1 | graph_lines "nu$nu"
  done
done
echo "== A/B done at $((SECONDS - T0)) s"
if [ $((SECONDS - T0)) -lt "${NCU_BY:-420}" ]; then
  timeout $((570 - (SECONDS - T0))) env NUMBA_CACHE_DIR=/tmp/nc-nu8 ncu --clock-control none --csv \
    --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    python3 tools/gpu/kprofile.py --bench-inputs --topk1000 --topp_alone --shapes "$SH" \
    > "$OUT/ncu.csv" 2>/dev/null
  echo "== ncu rc=$? at $((SECONDS - T0)) s"
  grep -c nucleus "$OUT/ncu.csv"
fi
echo "== done at $((SECONDS - T0)) s"
