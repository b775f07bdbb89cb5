#!/usr/bin/env bash
# On the lent H200, the seventh session's first call (<= 600 s): the device gate on HEAD with
# compute-sanitizer (memcheck, racecheck, synccheck) over the fast draw's tests beside it (the
# landed fast variant had no sanitizer run), then the split sweep of temperature-only rows at the 32000-wide shapes (PERF_NOTES,
# "Sixth session", Next 1). Carry .whl.
# Output: $OUT/check-report-h200.json, gate.log, san/, split-sweep.json
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
F=tests/kernels/test_sampling_fast.py
SAN_FILES="$F -k draw" SAN_DELAY=30 SAN_LIMIT=100 GATE_LIMIT=330 source tools/gpu/gate_san.sh
SWEEP_MODES=temperature SWEEP_SHAPES=8x32000,64x32000,256x32000 timeout 150 python3 tools/gpu/split_sweep.py 2>&1 \
  | grep -v Warning | tail -6
echo "sweep done at $((SECONDS - T0)) s"
