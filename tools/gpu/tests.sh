#!/usr/bin/env bash
# On the lent H200: the whole suite on cuda (slow tests included), then the demo.
# Usage (repo root, on the GPU machine): bash tools/gpu/tests.sh [pytest args...]
source tools/gpu/env.sh
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
python3 -m pytest tests --backend cuda --run-slow -q -p no:cacheprovider -rfEs \
  --junitxml="$OUT/junit.xml" --durations=15 "$@" 2>&1 | tee "$OUT/tests.log" | tail -60
rc=${PIPESTATUS[0]}
python3 -m rocsample.demo 2>&1 | tee "$OUT/demo.log"
exit $rc
