#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the seventeenth session's last call, on the tree that
# lands (the tile finalize's exit test after its split reduction, no longer behind a flag): the
# gate (python -m rocsample.check --backend cuda, --run-slow), then compute-sanitizer memcheck,
# racecheck and synccheck over sanitize.sh's fuzz part (every public call and every kernel at
# small shapes), LIMIT seconds a tool from the time left; then, with any time still left, the
# chain, top_k 50 and the per-row device parameters with PyTorch beside them at the twelve shapes
# (bench/test_sampling.py, no FlashInfer: .peers is not carried). Output (8 files):
# check-report-h200.json, gate.log, sanitize.json, sanitize-warmup-fuzz.log,
# sanitize-{memcheck,racecheck,synccheck}-fuzz.log, chain.json.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
run_gate "${GATE_LIMIT:-290}"
TOTAL=${TOTAL:-590}   # the seconds the call may run
left=$((TOTAL - 30 - (SECONDS - T0)))
if [ $left -gt 120 ]; then
  echo "== sanitizers from $((SECONDS - T0)) s, $(( (left - 40) / 3 )) s a tool"
  PARTS=fuzz LIMIT=$(( (left - 40) / 3 )) bash tools/gpu/sanitize.sh 2>&1 | tail -8
fi
left=$((TOTAL - (SECONDS - T0)))
if [ $left -gt 30 ]; then
  timeout -s INT -k 10 $left python3 -m pytest bench/test_sampling.py "${BH[@]}" --bench-drop-data \
    --benchmark-max-time=0.02 --benchmark-min-rounds=5 --bench-shapes=all \
    -k "(test_rocsample or torch_peer) and (chain or top_k50)" --benchmark-json="$OUT/chain.json" \
    > /tmp/chain-bench.log 2>&1
  echo "== chain bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/chain-bench.log)"
fi
echo "== done at $((SECONDS - T0)) s"
