#!/usr/bin/env bash
# Prepared in the twenty-first session for the next session's first call (carry .whl; <= 600 s):
# what that session's device budget left undone on the tree that put the histogram lane of
# device-parameter calls into a conditional node (docs/PERF_NOTES.md "Twenty-first session",
# Next 1): the device gate with room to finish (GLIM, default 400 s; its JSON report, skip audit
# and demo), then bench/test_sampling.py's chain and per-row device parameters (chain_dev,
# mixed_dev) with PyTorch beside them at the twelve shapes and the per-row shapes (no
# FlashInfer: .peers is not carried). Then `bash tools/gpu/s22_san.sh` in a second call.
# Output: $OUT/check-report-h200.json, gate.log, sampling.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-400}"
timeout -s INT -k 10 "${BENCH_LIMIT:-140}" python3 -m pytest bench/test_sampling.py "${BH[@]}" \
  --bench-drop-data --benchmark-max-time=0.02 --benchmark-min-rounds=5 --bench-shapes=all \
  -k "(test_rocsample or torch_peer) and (chain or mixed_dev)" \
  --benchmark-json="$OUT/sampling.json" > /tmp/sampling-bench.log 2>&1
echo "== bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/sampling-bench.log)"
echo "== done at $((SECONDS - T0)) s"
