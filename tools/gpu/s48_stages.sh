#!/usr/bin/env bash
# Per-kernel device time (ncu, clocks left alone) of top_k 1000 alone's large-form launches,
# the strided layout against the FINE one (written in the forty-seventh session; carry .whl;
# about 4 min alone): where the FINE layout loses at 64 rows (63.8 against 53.7 us at 64 x
# 151936 on an H100) and wins at 128 (93.0 against 98.2): phase 1, tau(), gather() or the
# finalize. SH: the shapes (default 64x151936,128x151936), the bench's inputs. Then (variant
# rank8) the router's own choice at SH8 (default 8x151936: the rank route) for top_k 1000 beside
# the chain, where top_k 1000 is 1.66x the chain. Each mode runs three calls (two warm-ups, one
# marked), so each kernel is listed three times.
# Each variant is JIT-warmed into its own disk cache before its ncu run. STOP: seconds from this
# script's start after which no ncu run starts (default 560), each run's limit at most what is left.
# Output: $OUT/ncu-{strided,fine,rank8}.csv and stages.txt (tools/gpu/ncu_table.py: a line a kernel).
set -u
source tools/gpu/env.sh
T0=$SECONDS
SH=${SH:-64x151936,128x151936}
for v in strided fine rank8; do
  f=0; [ "$v" = fine ] && f=1
  A=(--topk1000 --bench-inputs --shapes "$SH")
  if [ "$v" = rank8 ]; then
    unset ROCSAMPLE_TILE_LARGE ROCSAMPLE_TILE_FINE
    A=(--topk1000 --chain --bench-inputs --shapes "${SH8:-8x151936}")
  else
    export ROCSAMPLE_TILE_LARGE=1 ROCSAMPLE_TILE_FINE=$f
  fi
  export NUMBA_CACHE_DIR=/tmp/nc-$v
  timeout 200 python3 tools/gpu/kprofile.py "${A[@]}" > /dev/null 2>&1   # JIT into the cache
  echo "== warm $v rc=$? at $((SECONDS - T0)) s"
  left=$(( ${STOP:-560} - (SECONDS - T0) ))
  if [ "$left" -lt 30 ]; then echo "== $v skipped: ${left} s left" | tee -a "$OUT/stages.txt"; continue; fi
  timeout $(( left < 240 ? left : 240 )) ncu --clock-control none --csv \
    --metrics gpu__time_duration.sum python3 tools/gpu/kprofile.py "${A[@]}" 2>/dev/null \
    > "$OUT/ncu-$v.csv"
  echo "== $v rc=$? at $((SECONDS - T0)) s" | tee -a "$OUT/stages.txt"
  python3 tools/gpu/ncu_table.py "$OUT/ncu-$v.csv" | tee -a "$OUT/stages.txt"
done
echo "== done at $((SECONDS - T0)) s"
