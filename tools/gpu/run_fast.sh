#!/usr/bin/env bash
# On the lent H200: the sampling tests on cuda (fast path first), then compute-sanitizer
# memcheck / racecheck / synccheck over the fast-path tests and the matches-reference tests.
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 240 python3 -m pytest tests/kernels/test_sampling_fast.py tests/kernels/test_sampling.py \
  tests/kernels/test_sampler_capture.py --backend cuda -q -p no:cacheprovider -x --run-slow 2>&1 \
  | grep -v -i warn | tail -15
FILES="tests/kernels/test_sampling_fast.py tests/kernels/test_sampling.py" \
  TOOLS="memcheck racecheck synccheck" LIMIT=100 \
  PYARGS="--keyword=topk_chains_match_reference or overflow or matches_reference" \
  bash tools/gpu/sanitize.sh
