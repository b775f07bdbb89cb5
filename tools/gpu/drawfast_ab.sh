#!/usr/bin/env bash
# On the lent H200, one call (<= 600 s): the fast draw's settings against the exact draw
# (docs/PERF_NOTES.md, "Sixth session"), then greedy's split count at 64 rows. Carry .whl.
#   1. ROCSAMPLE_DRAW_FAST 0 / 1 with ROCSAMPLE_DRAW_QUADS 1 / 2, graph-timed (reg_sweep.sh, VAR=env):
#      temperature-only rows at eight shapes, device per-row parameters, the chain's host scalars
#   2. the fast draw's tests on cuda (the bound over all 2**23 uniforms, near ties, quads)
#   3. tools/gpu/split_sweep.py, greedy at 64 x 151936 and 64 x 262144 (the 1.25x-floor target)
# Output: $OUT/drawfast-ab2.txt, tests2.txt, greedy-splits.txt, split-sweep.json
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
VAR=env SETS="ROCSAMPLE_DRAW_FAST=0 ROCSAMPLE_DRAW_FAST=1,ROCSAMPLE_DRAW_QUADS=1 ROCSAMPLE_DRAW_FAST=1,ROCSAMPLE_DRAW_QUADS=2" \
  timeout 300 bash tools/gpu/reg_sweep.sh --temp --chain_dev --chain \
  --shapes 1x32000,8x32000,64x32000,1x151936,64x151936,256x32000,256x151936,256x262144 \
  > "$OUT/drawfast-ab2.txt" 2>&1
echo "== 1 done at $((SECONDS - T0)) s"; cat "$OUT/drawfast-ab2.txt"
for q in 1 2; do
  ROCSAMPLE_DRAW_QUADS=$q NUMBA_CACHE_DIR=/tmp/nc-t$q timeout 100 python3 -m pytest -q -p no:cacheprovider --backend cuda \
    tests/kernels/test_sampling_philox.py tests/kernels/test_sampling_fast.py tests/kernels/test_sampling.py \
    -k "fast_gumbel or near_ties or quads or split_longer or temperature" >> "$OUT/tests2.txt" 2>&1
  echo "== 2 (quads $q) done at $((SECONDS - T0)) s"; tail -2 "$OUT/tests2.txt"
done
SWEEP_MODES=greedy SWEEP_SHAPES=64x151936,64x262144,256x32000 timeout 120 python3 tools/gpu/split_sweep.py \
  > "$OUT/greedy-splits.txt" 2>&1
echo "== 3 done at $((SECONDS - T0)) s"; cat "$OUT/greedy-splits.txt" | grep -v -i warn | tail -5
