#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the eighteenth session's last call, on the tree that
# lands: bench/test_sampling.py's min_p 0.05 alone (temperature 1 and 0.8), the chain, top_k 50
# and the per-row device parameters, with PyTorch beside them, at the twelve shapes (no
# FlashInfer: .peers is not carried); then compute-sanitizer memcheck, racecheck and synccheck over
# sanitize.sh's fuzz part with the time left. Output: sampling.json, sanitize.json,
# sanitize-warmup-fuzz.log, sanitize-{memcheck,racecheck,synccheck}-fuzz.log.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
TOTAL=${TOTAL:-590}   # the seconds the call may run
timeout -s INT -k 10 "${BENCH_LIMIT:-330}" python3 -m pytest bench/test_sampling.py "${BH[@]}" \
  --bench-drop-data --benchmark-max-time=0.02 --benchmark-min-rounds=5 --bench-shapes=all \
  -k "(test_rocsample or torch_peer) and (chain or top_k50 or min_p005)" \
  --benchmark-json="$OUT/sampling.json" > /tmp/sampling-bench.log 2>&1
echo "== bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/sampling-bench.log)"
left=$((TOTAL - 20 - (SECONDS - T0)))
if [ $left -gt 120 ]; then
  echo "== sanitizers from $((SECONDS - T0)) s, $(( (left - 40) / 3 )) s a tool"
  PARTS=fuzz LIMIT=$(( (left - 40) / 3 )) bash tools/gpu/sanitize.sh 2>&1 | tail -8
fi
echo "== done at $((SECONDS - T0)) s"
