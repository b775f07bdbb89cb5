#!/usr/bin/env bash
# The twenty-fifth session's benchmark (carry .whl and .peers/fi074; <= 300 s):
# bench/test_sampling.py's top_p095 and greedy at the twelve shapes, rocsample, PyTorch and
# FlashInfer 0.7.4 in one process (the tracked tree, the wheels and both FlashInfers are over a
# call's 64 MiB), graph-timed. Output: $OUT/topp.json, topp.md
set -u
FLASHINFER=fi074 source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
timeout -s INT -k 10 "${BLIM:-240}" python3 -m pytest bench/test_sampling.py "${BH[@]}" \
  --bench-drop-data --benchmark-max-time=0.02 --benchmark-min-rounds=5 --bench-shapes=all \
  -k "top_p095 or greedy" --benchmark-json="$OUT/topp.json" > /tmp/topp.log 2>&1
echo "== bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/topp.log)"
grep -E "SKIPPED|FAILED|Error" /tmp/topp.log | head -5
python3 -m bench.report "$OUT/topp.json" > "$OUT/topp.md" 2>/dev/null
grep -E "^\| (top_p095|greedy) " "$OUT/topp.md" | head -30
echo "== done at $((SECONDS - T0)) s"
