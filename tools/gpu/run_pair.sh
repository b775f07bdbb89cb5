#!/usr/bin/env bash
# On the lent H200 pair: the exit regress test, the device gate (whole suite incl. slow and
# two-device tests, short benchmark, JSON report), and memcheck over the capture tests.
source tools/gpu/env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest tests/regress/test_exit_two_devices.py --backend cuda -q -rs \
  -p no:cacheprovider 2>&1 | grep -E "passed|failed|SKIPPED|^E " | head; echo "exit-test rc ${PIPESTATUS[0]}"
timeout 260 python3 -m rocsample.check --backend cuda --report "$OUT/check-cuda.json" 2>&1 \
  | grep -v -i "warn" | grep -E "^device|passed|failed|^FAILED|^E  |^bench|PASS|FAIL|SKIPPED|died" | head -30
echo "gate rc ${PIPESTATUS[0]}"
FILES="tests/kernels/test_sampler_capture.py tests/regress/test_scratch_isolation.py tests/regress/test_set_rows_graph_reuse.py tests/scratch" \
  TOOLS="memcheck" LIMIT=150 WARM=0 bash tools/gpu/sanitize.sh
