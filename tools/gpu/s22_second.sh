#!/usr/bin/env bash
# The twenty-second session's second call (carry .whl; <= 600 s), right after s22_first.sh on the
# same machine: compute-sanitizer over the conditional lane's tests (tools/gpu/s22_san.sh), then
# greedy's split x block sweep (tools/gpu/split_sweep.py) at the two 64-row shapes
# with the strided stream's 8 loads a round (the default), 16 (ROCSAMPLE_STRIDE_UNROLL=16) and
# 16 under a 40-register cap, each setting in its own NUMBA_CACHE_DIR (the unroll is read at
# import and compiled in).
# Output: $OUT/{warm,memcheck,racecheck,synccheck}.log, san-summary.txt, sweep-*.json/.log
set -u
LIMIT=${LIMIT:-85} bash tools/gpu/s22_san.sh
source tools/gpu/env.sh
T0=$SECONDS
for v in u8 u16 u16r40; do
  case $v in
    u8) env=() ;;
    u16) env=(ROCSAMPLE_STRIDE_UNROLL=16) ;;
    u16r40) env=(ROCSAMPLE_STRIDE_UNROLL=16 ROCSAMPLE_MAX_REGISTERS=partials=40) ;;
  esac
  env "${env[@]}" NUMBA_CACHE_DIR=/tmp/nc-$v SWEEP_MODES=greedy \
    SWEEP_SHAPES=${SWEEP_SHAPES:-64x151936,64x262144} \
    timeout "${SWEEP_LIMIT:-75}" python3 tools/gpu/split_sweep.py > "$OUT/sweep-$v.log" 2>&1
  echo "== sweep $v rc=$? at $((SECONDS - T0)) s"
  [ -f "$OUT/split-sweep.json" ] && mv "$OUT/split-sweep.json" "$OUT/sweep-$v.json"
  grep -E "default" "$OUT/sweep-$v.log" | sed "s/^/$v /"
done
echo "== done at $((SECONDS - T0)) s"
