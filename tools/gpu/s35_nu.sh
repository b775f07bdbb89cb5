#!/usr/bin/env bash
# The nucleus and rank passes' stream settings against each other (carry .whl; <= 590 s):
# kprofile graph-timed, the bench's inputs, top_k 1000 and top_p alone at seven shapes (SH; the
# 32000-wide ones take the finishing forms), one build per variant of VARIANTS (';' between
# variants, each a space-separated list of VAR=VALUE; default: numba-cuda's default per form
# (4 for the plain nucleus pass, 8 for the others), then 8 for every form (the default before
# the thirty-sixth session)), each its own numba cache, compiled in parallel (KLIM, default
# 300 s), then PASSES (default 2) passes of each in turn. Then, with NCU=1, ncu's duration, SM
# and DRAM throughput and active warps per kernel of the same calls with the first variant.
# (The thirty-fifth session's one pass of 4 / 8 / 16 for every form, H100:
# bench/results/nvidia-h100-s35-nuc-unroll-ab.txt; the thirty-sixth's two passes of 8, the
# per-form mix and a prefetch build since removed: nvidia-h100-s36-nuc-forms-ab.txt.)
# STOP_BY (default 500 s): no variant's pass starts after it, so the call ends inside its limit
# with what it has (the thirty-sixth session's GATE=1 call ran into 590 s mid-pass).
# While the variants compile (nothing then is timed): GATE=1, the device gate (python -m
# rocsample.check --backend cuda, GLIM, default 330 s; -> gate.log, check-report-h200.json);
# RACE, racecheck probes (';' between them, each "COND ORDER" for steps.sh's race_probe, e.g.
# "4 LPL;0 LPL"; -> race-COND-ORDER.log, their lines printed after the compiles).
# (The thirty-fifth session's first call, formerly s35_first.sh, is GATE=1 PASSES=1 NCU=1 with
# VARIANTS "ROCSAMPLE_NUC_UNROLL=4;ROCSAMPLE_NUC_UNROLL=8;ROCSAMPLE_NUC_UNROLL=16"; its last,
# formerly s35_last.sh, RACE="4 LPL;0 LPL" with VARIANTS
# "ROCSAMPLE_NUC_UNROLL=8;ROCSAMPLE_NUC_UNROLL=8,nucleus=4,nucleus_finish=16,rank_finish=16".)
# MODES (default "--topk1000 --topp_alone"): kprofile's modes. A variant may hold TREE=REV:
# that variant runs another commit's package, carried in .alt/REV (steps.sh's kp_var), so code
# changes are timed against their base in the same call, e.g. (the thirty-seventh session's
# trims of phase 1's fast pass against 6f2c548, .alt and .whl carried):
#   MODES="--temp --topp_alone --topk1000" VARIANTS="ROCSAMPLE_NUC_UNROLL=8,nucleus=4;TREE=6f2c548"
# Output: $OUT/ab.txt (vI: the I-th variant, listed first)
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-8x32000,64x32000,8x151936,64x151936,256x32000,256x151936,256x262144}
read -r -a MD <<< "${MODES:---topk1000 --topp_alone}"
ARGS=(--graph --bench-inputs "${MD[@]}" --shapes "$SH")
IFS=';' read -r -a VS <<< "${VARIANTS:-ROCSAMPLE_NUC_UNROLL=8,nucleus=4;ROCSAMPLE_NUC_UNROLL=8}"
ab_compile
if [ -n "${RACE:-}" ]; then
  (
    IFS=';' read -r -a RV <<< "$RACE"
    for v in "${RV[@]}"; do
      race_probe $v
    done
  ) > /tmp/race.txt 2>&1 &
fi
[ "${GATE:-0}" = 1 ] && run_gate "${GLIM:-330}"
wait
[ -n "${RACE:-}" ] && cat /tmp/race.txt
ab_passes 500
if [ "${NCU:-0}" = 1 ]; then
  read -r -a set0 <<< "${VS[0]}"
  timeout 150 env "${set0[@]}" NUMBA_CACHE_DIR=/tmp/nc-v0 ncu --clock-control none --csv \
    --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    python3 tools/gpu/kprofile.py --bench-inputs "${MD[@]}" --shapes "$SH" \
    > "$OUT/ncu.csv" 2>/dev/null
  echo "== ncu rc=$? at $((SECONDS - T0)) s"
  grep -c nucleus "$OUT/ncu.csv"
fi
