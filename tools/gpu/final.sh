#!/usr/bin/env bash
# One call on the lent machine: sampling benchmark with peers, the device gate (whole suite,
# slow tests included, multi-GPU tests where two GPUs are present), compute-sanitizer on sampling.
source tools/gpu/env.sh
timeout 150 bash tools/gpu/bench_sampling.sh | tail -4
timeout 200 python3 -m rocsample.check --backend cuda --report "$OUT/check-cuda.json" 2>&1 \
  | grep -v -i "warn" | grep -E "^device|passed|failed|^FAILED|^E  |^bench|PASS|FAIL|SKIPPED" | head -30
FILES=tests/kernels/test_sampling.py TOOLS="memcheck racecheck" LIMIT=70 \
  PYARGS=--keyword=matches_reference bash tools/gpu/sanitize.sh
