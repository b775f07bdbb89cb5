#!/usr/bin/env bash
# Why phase 1 and tau() cost what they do where top_k 1000 misses its target (written in the
# fiftieth session; carry .whl; about 3 min alone): ncu's sections (SpeedOfLight, Occupancy,
# LaunchStats, WarpStateStats, SchedulerStats; clocks left alone) over phase 1's kernel and
# tau(), the bench's inputs: rank8, the router's rank route for top_k 1000 at 8 x 151936 beside
# the chain (the fiftieth session's ncu: its phase 1 20.6 us against the chain's
# 7.5 at the same grid); strided64 and fine64, the large form's two layouts at 64 x 151936
# (FINE's phase 1 30 us against 21, its tau 12 against 7.6; level at 128 rows). Each mode runs
# three calls, so each kernel shows three times. STOP: seconds after which no ncu run starts
# (default 400). Output: $OUT/why-{rank8,strided64,fine64}.csv and why.txt
# (tools/gpu/ncu_sections.py).
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
for v in rank8 strided64 fine64; do
  case $v in
    rank8) unset ROCSAMPLE_TILE_LARGE ROCSAMPLE_TILE_FINE
           A=(--chain --topk1000 --bench-inputs --shapes 8x151936); K='regex:partials' ;;
    strided64) export ROCSAMPLE_TILE_LARGE=1 ROCSAMPLE_TILE_FINE=0
           A=(--topk1000 --bench-inputs --shapes 64x151936); K='regex:partials|tau' ;;
    fine64) export ROCSAMPLE_TILE_LARGE=1 ROCSAMPLE_TILE_FINE=1
           A=(--topk1000 --bench-inputs --shapes 64x151936); K='regex:partials|tau' ;;
  esac
  export NUMBA_CACHE_DIR=/tmp/nc-$v
  timeout 150 python3 tools/gpu/kprofile.py "${A[@]}" > /dev/null 2>&1   # JIT into the cache
  echo "== warm $v rc=$? at $((SECONDS - T0)) s"
  left=$(( ${STOP:-400} - (SECONDS - T0) ))
  if [ "$left" -lt 30 ]; then echo "== $v skipped: ${left} s left" | tee -a "$OUT/why.txt"; continue; fi
  ncu_sections "$v" "$OUT/why-$v.csv" "$OUT/why.txt" $(( left < 180 ? left : 180 )) "$K" -- "${A[@]}"
done
echo "== done at $((SECONDS - T0)) s"
