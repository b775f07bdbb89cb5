#!/usr/bin/env bash
# One call on the lent machine: sampling benchmark with peers, the sampling / capture / scratch /
# regression tests (slow ones included), compute-sanitizer memcheck, racecheck and synccheck over
# the fast-path and matches-reference sampling tests. Then, in a second call,
# tools/gpu/bench_rest.sh (set_rows, host overhead, warm start).
source tools/gpu/env.sh
timeout 170 bash tools/gpu/bench_sampling.sh | tail -4
timeout 150 python3 -m pytest tests/kernels/test_sampling_fast.py tests/kernels/test_sampling.py \
  tests/kernels/test_sampler_capture.py tests/regress tests/scratch --backend cuda --run-slow -q \
  -p no:cacheprovider 2>&1 | grep -E "passed|failed|^FAILED|^E  " | head -20
FILES="tests/kernels/test_sampling_fast.py tests/kernels/test_sampling.py" \
  TOOLS="memcheck racecheck synccheck" LIMIT=70 \
  PYARGS="--keyword=chains_match_reference or overflow or matches_reference" bash tools/gpu/sanitize.sh
