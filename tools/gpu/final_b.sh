#!/usr/bin/env bash
# Second call after tools/gpu/final.sh: the sampling / capture / scratch / regression tests on cuda
# (slow ones included), compute-sanitizer over the fast-path tests, the host-overhead and
# warm-start benchmarks.
source tools/gpu/env.sh
timeout 130 python3 -m pytest tests/kernels/test_sampling_fast.py tests/kernels/test_sampling.py \
  tests/kernels/test_sampler_capture.py tests/regress tests/scratch --backend cuda --run-slow -q \
  -p no:cacheprovider 2>&1 | grep -E "passed|failed|^FAILED|^E  " | head -20
FILES="tests/kernels/test_sampling_fast.py tests/regress/test_fast_finalize_fold_past_256_splits.py" \
  TOOLS="memcheck racecheck synccheck" LIMIT=60 bash tools/gpu/sanitize.sh 2>&1 | grep -v -i warn
timeout 130 python3 -m pytest bench/test_host_overhead.py bench/test_warm_start.py --backend cuda -q \
  -p no:cacheprovider --benchmark-json="$OUT/overhead.json" --benchmark-columns=median 2>&1 \
  | grep -E "passed|failed|^FAILED" | head
