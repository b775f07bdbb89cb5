#!/usr/bin/env bash
# The second call of the fifty-sixth session (carry .whl; <= STOP, default 540 s, warm or fresh):
# 1. racecheck over the whole of the fast path's racecheck subset (steps.sh's FAST_RACE_K over
#    FAST_SAN_FS, ROCSAMPLE_FUZZ=sanitize), in SHARDS (default 4) processes at once, each its own
#    share of the collected tests (round robin) under RLIM (default 300 s): the fifty-fifth
#    session's single racecheck was cut after 29 tests. Meanwhile fin_stages's nine builds
#    compile (numba's disk caches).
# 2. then, with the GPU to itself, the chain's finalize stage by stage at SH (default 1x32000):
#    tools/gpu/fin_stages.sh's timings (stop 9 phase 1 and an empty finalize, 1 the split
#    reduction, 2 the tile histogram, 3 the k-th tile's bin, 4 the tile list, 5 the gather, 6 the
#    rank and sorted prefix, 7 the filters, 0 the whole kernel).
# STAGES=0 leaves part 2 out (racecheck then gets STOP less 20 s; tools/gpu/s56_bench.sh runs it
# that way after the bench, STOP being what its call has left).
# Output: $OUT/race-N.log, san-summary.txt, stages.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
STOP=${STOP:-540}
STAGES=${STAGES:-1}
SH=${SH:-1x32000}
ROOT=$PWD
# fin_stages's tree and its nine compiles, in the background
[ "$STAGES" = 1 ] && {
rm -rf /tmp/st && mkdir /tmp/st && cp -a rocsample tools bench tests setup.py /tmp/st/ 2>/dev/null
python3 tools/gpu/fin_stages.py rocsample/kernels/sampling_fast.py /tmp/st/rocsample/kernels/sampling_fast.py \
  || echo "fin_stages.py failed"
STPATH=$(printf %s "$PYTHONPATH" | sed "s#$ROOT#/tmp/st#g")
STOPS="9 1 2 3 4 5 6 7 0"
for s in $STOPS; do
  ( cd /tmp/st && PYTHONPATH=$STPATH ROCSAMPLE_FIN_STOP=$s NUMBA_CACHE_DIR=/tmp/nc-$s timeout 200 \
      python3 tools/gpu/kprofile.py --chain --topk50 --shapes "$SH" > /tmp/stwarm-$s.log 2>&1
    echo "warm $s rc=$?" >> /tmp/stwarm-$s.log ) &
done
}
# racecheck's shards
export ROCSAMPLE_FUZZ=sanitize
FS=("${FAST_SAN_FS[@]}")
K=$FAST_RACE_K
python3 -m pytest "${FS[@]}" "${BH[@]}" -k "$K" --collect-only 2>/dev/null | grep '::' > /tmp/race-ids.txt
N=$(wc -l < /tmp/race-ids.txt)
SHARDS=${SHARDS:-4}
echo "== racecheck: $N tests in $SHARDS shards at $((SECONDS - T0)) s" | tee -a "$OUT/san-summary.txt"
# warm numba's cache for these tests once, without the sanitizer
left=$((STOP - (SECONDS - T0)))
[ "$left" -ge 150 ] || { echo "== racecheck skipped: $left s left"; exit 0; }
timeout 150 python3 -m pytest "${BH[@]}" $(cat /tmp/race-ids.txt) > "$OUT/race-warm.log" 2>&1
echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/race-warm.log")" | tee -a "$OUT/san-summary.txt"
RLIM=${RLIM:-300}
if [ "$STAGES" = 0 ]; then RLIM=$((STOP - 20 - (SECONDS - T0))); fi
[ "$RLIM" -ge 60 ] || { echo "== racecheck skipped: $RLIM s left"; exit 0; }
for i in $(seq 0 $((SHARDS - 1))); do
  awk -v n="$SHARDS" -v i="$i" '(NR - 1) % n == i' /tmp/race-ids.txt > /tmp/race-$i.txt
  ( timeout "$RLIM" compute-sanitizer --tool racecheck --error-exitcode 99 --print-limit 50 \
      python3 -m pytest "${BH[@]}" -vv $(cat /tmp/race-$i.txt) > "$OUT/race-$i.log" 2>&1
    r=$?
    echo "shard $i rc=$r of $(wc -l < /tmp/race-$i.txt): passed $(grep -c ' PASSED' "$OUT/race-$i.log") failed $(grep -c ' FAILED' "$OUT/race-$i.log") reports $(san_reports "$OUT/race-$i.log") | $(grep -E 'RACECHECK SUMMARY' "$OUT/race-$i.log" | tail -1) at $((SECONDS - T0)) s" ) > /tmp/race-line-$i.txt &
done
wait
cat /tmp/race-line-*.txt | tee -a "$OUT/san-summary.txt"
[ "$STAGES" = 1 ] || { echo "== done at $((SECONDS - T0)) s"; exit 0; }
echo "== compiled: $(tail -qn1 /tmp/stwarm-*.log | paste -sd' ' -)"
# the stages, the GPU to themselves
for s in $STOPS; do
  [ $((SECONDS - T0)) -lt $((STOP - 25)) ] || { echo "-- no time for stop $s"; continue; }
  ( cd /tmp/st && PYTHONPATH=$STPATH ROCSAMPLE_FIN_STOP=$s NUMBA_CACHE_DIR=/tmp/nc-$s timeout 60 \
      python3 tools/gpu/kprofile.py --graph --chain --topk50 --shapes "$SH" 2>&1 ) | grep GRAPH \
    | sed "s/^/stop=$s /" | tee -a "$OUT/stages.txt"
done
echo "== done at $((SECONDS - T0)) s"
