#!/usr/bin/env bash
# The twenty-third session's first call on its tree (carry the numpy wheel; <= 560 s): greedy
# through phase 1's argmax kernel against the general phase 1 (ROCSAMPLE_ARGMAX=0, its own numba
# cache), bench/test_sampling.py's greedy at the twelve shapes with torch.argmax beside the first,
# graph-timed; then the device gate (GLIM, default 360 s).
# Output: $OUT/greedy-argmax.json, greedy-general.json, check-report-h200.json, gate.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
for v in argmax general; do
  a=1; k="greedy and (test_rocsample or torch_peer)"
  [ "$v" = general ] && { a=0; k="greedy and test_rocsample"; }
  ROCSAMPLE_ARGMAX=$a NUMBA_CACHE_DIR=/tmp/nc-$v timeout -s INT -k 10 "${BENCH_LIMIT:-90}" \
    python3 -m pytest bench/test_sampling.py "${BH[@]}" --bench-drop-data \
    --benchmark-max-time=0.02 --benchmark-min-rounds=5 --bench-shapes=all -k "$k" \
    --benchmark-json="$OUT/greedy-$v.json" > "$OUT/greedy-$v.log" 2>&1
  echo "== greedy $v rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/greedy-$v.log")"
done
python3 -m bench.report "$OUT/greedy-argmax.json" 2>&1 | grep -E "greedy|mode" | head -30
python3 -m bench.report "$OUT/greedy-general.json" 2>&1 | grep -E "greedy" | head -14
run_gate "${GLIM:-360}"
echo "== done at $((SECONDS - T0)) s"
