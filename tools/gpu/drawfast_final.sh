#!/usr/bin/env bash
# On the lent H200, one call (<= 600 s), the sixth session's last: the device gate with
# compute-sanitizer (memcheck, racecheck, synccheck) over the fast draw's own test beside it, then
# tools/gpu/drawfast_bench.sh (temperature-only rows, the chain and the per-row device parameters
# at all twelve shapes, PyTorch and both FlashInfers). Carry .whl and .peers (BENCHMARKS.md,
# "The lent H200").
# Output: $OUT/check-report-h200.json, gate.log, san/ (sanitize.json, logs), t1.json (rocsample,
# torch, FlashInfer 0.2.14), t2.json (FlashInfer 0.7.4), report.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
SAN_FILES="tests/kernels/test_sampling_fast.py -k near_ties" SAN_DELAY=30 GATE_LIMIT=330 \
  source tools/gpu/gate_san.sh
bash tools/gpu/drawfast_bench.sh
