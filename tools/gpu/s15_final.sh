#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the fifteenth session's second call, on the tree that
# lands: the gate (python -m rocsample.check --backend cuda, --run-slow), then
# bench/test_sampling.py's chain, top_k50, min_p and top_k1000 at every shape with PyTorch's
# sort pipeline beside the chain, and the per-row device parameters (chain_dev) against the
# same values as host scalars. Output: $OUT/check-report-h200.json, gate.log, bench-chain.json.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
[ -n "${SKIP_GATE:-}" ] || run_gate "${GATE_LIMIT:-290}"
left=$((${BENCH_END:-590} - (SECONDS - T0)))
if [ $left -gt 40 ]; then
  timeout -s INT $left python3 -m pytest bench/test_sampling.py "${BH[@]}" \
    -k "(test_rocsample and not rows and (chain or top_k50 or min_p005 or top_k1000)) or (test_torch_peer and not rows and chain) or (test_rocsample_rows and chain_dev)" \
    --benchmark-json="$OUT/bench-chain.json" > /tmp/bench-chain.log 2>&1
  echo "== bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/bench-chain.log)"
fi
echo "== done at $((SECONDS - T0)) s"
