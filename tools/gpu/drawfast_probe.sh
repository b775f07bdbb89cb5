#!/usr/bin/env bash
# On the lent H200, one call (<= 600 s), before the gate: the measurements that decide the sixth
# session's defaults (docs/PERF_NOTES.md, "Sixth session"). Carry .whl.
#   1. the fast draw (rocsample.kernels.sampling_fast.DRAW_FAST) against the exact one, graph-timed,
#      temperature-only rows and device per-row parameters, each setting its own numba cache
#   2. (ran once: the partials_dev register cap for device-parameter launches, the fifth
#      session's Next 2; no gain, and the knob was removed, so the step is gone)
#   3. the fast draw's own tests: gumbel_fast within its bound for all 2**23 uniforms, near ties
#   4. tools/gpu/legacy_probe.py (the legacy default stream's excess, the fifth session's Next 3)
#   5. ncu on greedy at 64 x 151936 (duration, DRAM throughput, warps active)
# Output: $OUT/drawfast-ab.txt, tests.txt, legacy-probe.txt, greedy-ncu.txt
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
VAR=ROCSAMPLE_DRAW_FAST SETS="1 0" timeout 200 bash tools/gpu/reg_sweep.sh --temp --chain_dev \
  --shapes 1x32000,8x32000,64x32000,1x151936,64x151936,256x32000,256x151936,256x262144 \
  > "$OUT/drawfast-ab.txt" 2>&1
echo "== 1 done at $((SECONDS - T0)) s"; cat "$OUT/drawfast-ab.txt"
timeout 120 python3 -m pytest -q -p no:cacheprovider --backend cuda tests/kernels/test_sampling_philox.py \
  tests/kernels/test_sampling_fast.py -k "fast_gumbel or near_ties or quads or split_longer" \
  > "$OUT/tests.txt" 2>&1
echo "== 3 done at $((SECONDS - T0)) s"; tail -3 "$OUT/tests.txt"
(cd tools/gpu && timeout 90 python3 legacy_probe.py) > "$OUT/legacy-probe.txt" 2>&1
echo "== 4 done at $((SECONDS - T0)) s"; tail -20 "$OUT/legacy-probe.txt"
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
  timeout 120 bash tools/gpu/kprofile.sh --greedy --shapes 64x151936,256x151936 > "$OUT/greedy-ncu.txt" 2>&1
echo "== 5 done at $((SECONDS - T0)) s"; tail -12 "$OUT/greedy-ncu.txt"
