#!/usr/bin/env bash
# On the lent GPU (about 200 s; carry .whl): where the tile finalize's time goes. A copy of the
# tree whose finalize returns after stage ROCSAMPLE_FIN_STOP=s (tools/gpu/fin_stages.py puts the
# stops in at anchors of today's source: 9 at once (phase 1 and an empty finalize), 1 the split
# reduction, 2 the tile histogram, 3 the bin of the k-th tile, 4 the tile list, 5 the gather, 6
# the rank and sorted prefix, 7 the filters; 0 the whole kernel) is graph-timed at each stop,
# each stop its own numba cache (compiled in parallel first, timed one after another). A stage's
# cost is the difference of two stops. SH=1x32000,... picks the chain / top_k50 shapes; top_k
# 1000 runs at 64 x 151936 (the large form: its stop 9 includes the tau and gather launches
# before it, stops 2-4 are in the small form's branch, so its figures there are the whole
# kernel's, and stop 5 is the copy of the gather's lists). TAG=name keeps a second build's caches and lines
# apart (e.g. TAG=plain ROCSAMPLE_WARP=0). Output: $OUT/stages.txt.
set -u
source tools/gpu/env.sh
T0=$SECONDS
source tools/gpu/steps.sh
banner
rm -rf /tmp/st && mkdir /tmp/st && cp -a rocsample tools bench tests setup.py /tmp/st/ 2>/dev/null
cd /tmp/st && python3 tools/gpu/fin_stages.py rocsample/kernels/sampling_fast.py /tmp/staged.py \
  && mv /tmp/staged.py rocsample/kernels/sampling_fast.py || { echo "fin_stages.py failed"; exit 1; }
export PYTHONPATH=$(printf %s "$PYTHONPATH" | sed "s#$OLDPWD#/tmp/st#g")
python3 -c "import rocsample.kernels.sampling_fast as s; print('FIN_STOP ok', s.FIN_STOP, s.__file__)"
STOPS="9 1 2 3 4 5 6 7 0"
SH=${SH:-1x32000,1x151936,64x32000}
for s in $STOPS; do
  ( ROCSAMPLE_FIN_STOP=$s NUMBA_CACHE_DIR=/tmp/nc-${TAG:-}$s timeout 200 python3 tools/gpu/kprofile.py --chain --topk50 \
      --shapes "$SH" > /tmp/warm-$s.log 2>&1
    ROCSAMPLE_FIN_STOP=$s NUMBA_CACHE_DIR=/tmp/nc-${TAG:-}$s timeout 200 python3 tools/gpu/kprofile.py --topk1000 \
      --shapes 64x151936 >> /tmp/warm-$s.log 2>&1; echo "warm $s rc=$?" >> /tmp/warm-$s.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for s in $STOPS; do
  ROCSAMPLE_FIN_STOP=$s NUMBA_CACHE_DIR=/tmp/nc-${TAG:-}$s timeout 60 python3 tools/gpu/kprofile.py --graph --chain --topk50 \
    --shapes "$SH" 2>&1 | grep GRAPH | sed "s/^/${TAG:+$TAG }stop=$s /" | tee -a "$OUT/stages.txt"
  ROCSAMPLE_FIN_STOP=$s NUMBA_CACHE_DIR=/tmp/nc-${TAG:-}$s timeout 60 python3 tools/gpu/kprofile.py --graph --topk1000 \
    --shapes 64x151936 2>&1 | grep GRAPH | sed "s/^/${TAG:+$TAG }stop=$s /" | tee -a "$OUT/stages.txt"
  echo "-- stop $s at $((SECONDS - T0)) s"
done
