#!/usr/bin/env bash
# The next session's probe of the nucleus and rank passes' stream (carry .whl; <= 590 s): do the
# passes at 256 rows (about 60% of the H100's bandwidth, bench/results/nvidia-h100-s33-ncu-rank.csv)
# wait on the bytes each thread has in flight? kprofile graph-timed, the bench's inputs, top_k
# 1000 and top_p alone at seven shapes (SH; the 32000-wide ones take the finishing forms, whose
# threads stream 4 rounds of 8 at 64 x 32000, one round trip each), with ROCSAMPLE_NUC_UNROLL
# 4, 8 (the default) and 16 loads a round (sm_90, the rank pass over four best: 42 / 56 / 72
# registers, no spill; tools/sass_stats.py), each its own numba cache, compiled in parallel
# (KLIM, default 200 s), then PASSES (default 1) passes in turn. Then ncu's duration, SM and
# DRAM throughput and active warps per kernel of the same calls at the default (NCU=0 skips).
# Output: $OUT/ab.txt, ncu.csv
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-8x32000,64x32000,8x151936,64x151936,256x32000,256x151936,256x262144}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --shapes "$SH")
kp_nu() {  # NU ARGS...: kprofile with the passes' loads a round at NU
  local nu=$1; shift
  kp_var "nu$nu" ROCSAMPLE_NUC_UNROLL="$nu" -- "$@"
}
for nu in 4 8 16; do
  ( kp_nu $nu "${ARGS[@]}" > "/tmp/warm-$nu.log" 2>&1; echo "warm $nu rc=$?" >> "/tmp/warm-$nu.log" ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-{4,8,16}.log
for pass in $(seq "${PASSES:-1}"); do
  for nu in 8 4 16; do
    kp_nu $nu "${ARGS[@]}" 2>&1 | graph_lines "nu$nu"
  done
done
echo "== A/B done at $((SECONDS - T0)) s"
if [ "${NCU:-1}" = 1 ]; then
  timeout 150 env NUMBA_CACHE_DIR=/tmp/nc-nu8 ncu --clock-control none --csv \
    --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    python3 tools/gpu/kprofile.py --bench-inputs --topk1000 --topp_alone --shapes "$SH" \
    > "$OUT/ncu.csv" 2>/dev/null
  echo "== ncu rc=$? at $((SECONDS - T0)) s"
  grep -c nucleus "$OUT/ncu.csv"
fi
