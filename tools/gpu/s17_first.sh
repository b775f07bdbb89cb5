#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), prepared in the sixteenth session for the next one's
# first call: the tile finalize's exit test after the split reduction (ROCSAMPLE_FIN_EARLY=1, its
# own numba cache) graph-timed against the default, two passes, for the routes that launch the
# tile finalize (chain, top_k 50, the per-row device parameters, mixed rows); then racecheck over
# the histogram path's tests (tools/gpu/s16_san.sh with its other tools off), which no call has
# finished yet. Output: $OUT/ab.txt (lines "VARIANT GRAPH mode shape gpu_us=..."), racecheck.log,
# san-summary.txt, warm.log. SAN=0: no racecheck.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
A=(--chain --topk50 --chain_dev --shapes 1x32000,1x151936,64x32000,64x151936)
EARLY=(env ROCSAMPLE_FIN_EARLY=1 NUMBA_CACHE_DIR=/tmp/nc-early)
( timeout 200 python3 tools/gpu/kprofile.py "${A[@]}" > /tmp/warm-default.log 2>&1 ) &
( timeout 200 "${EARLY[@]}" python3 tools/gpu/kprofile.py "${A[@]}" > /tmp/warm-early.log 2>&1 ) &
wait
echo "== compiled at $((SECONDS - T0)) s"
for pass in 1 2; do
  timeout 60 python3 tools/gpu/kprofile.py --graph "${A[@]}" 2>&1 | graph_lines default
  timeout 60 "${EARLY[@]}" python3 tools/gpu/kprofile.py --graph "${A[@]}" 2>&1 | graph_lines early
done
timeout 90 "${EARLY[@]}" python3 -m pytest "${BH[@]}" tests/kernels/test_sampling_fast.py \
  tests/kernels/test_sampler_branches.py > /tmp/early-tests.log 2>&1
echo "== FIN_EARLY cuda tests rc=$? $(tail -1 /tmp/early-tests.log)" | tee -a "$OUT/ab.txt"
left=$((580 - (SECONDS - T0)))
if [ "${SAN:-1}" = 1 ] && [ $left -gt 200 ]; then
  RACE_LIMIT=$((left - 150)) MEM_LIMIT=0 SYNC_LIMIT=0 bash tools/gpu/s16_san.sh
fi
echo "== done at $((SECONDS - T0)) s"
