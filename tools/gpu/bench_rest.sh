#!/usr/bin/env bash
# On the lent H200: set_rows, host-overhead and warm-start benchmarks (peers in the same run),
# then compute-sanitizer over the set_rows tests.
source tools/gpu/env.sh
python3 -m pytest bench/test_set_rows.py bench/test_host_overhead.py bench/test_warm_start.py --backend cuda -q \
  -p no:cacheprovider --benchmark-json="$OUT/rest.json" --benchmark-columns=median,min,rounds 2>&1 \
  | grep -v -i "warn" | grep -E "^test_|passed|failed|Error" | head -80
FILES=tests/kernels/test_set_rows.py TOOLS="memcheck racecheck" LIMIT=200 \
  PYARGS="--deselect=tests/kernels/test_set_rows.py::test_rows_past_2_31_elements" bash tools/gpu/sanitize.sh
