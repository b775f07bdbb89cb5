#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the eleventh session's second call (issue #17): the device gate on
# the tree with the C path's stream fix (789e097) and the one torch fixture; the host figures
# again (C path, served counts); whether the Sampler's slow first cases are the process's early
# calls (the same case run three times in one process: --keep-duplicates, node ids in order);
# the decode loop (torch's pipeline, rocsample's Sampler, FlashInfer where carried). Carry .whl
# (and .peers for FlashInfer). Output: $OUT/check-report-h200.json, gate.log,
# host-perf{.json,-summary.txt}, order{.json,-summary.txt}, decode.json, decode.log
source tools/gpu/env.sh
FLASHINFER=${FLASHINFER:-fi074}; use_flashinfer "$FLASHINFER"
source tools/gpu/steps.sh
banner
T0=$SECONDS
if [ "${GATE:-1}" = 1 ]; then
  timeout ${GATE_LIMIT:-285} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
    > "$OUT/gate.log" 2>&1
  echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
  grep -E "^(FAILED|ERROR)" "$OUT/gate.log" | head -10
fi
timeout -s INT ${HOST_LIMIT:-80} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
  --benchmark-json="$OUT/host-perf.json" > "$OUT/host-bench.log" 2>&1
echo "== host bench rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host-bench.log")"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" | tee "$OUT/host-perf-summary.txt"
T=bench/test_host_overhead.py::test_sampler_call_torch
timeout -s INT ${ORDER_LIMIT:-40} python3 -m pytest --keep-duplicates "${BH[@]}" \
  "$T[default-chain-1x151936-fresh]" "$T[default-chain-1x151936-fresh]" "$T[default-chain-1x151936-fresh]" \
  "$T[default-chain-1x151936-same]" "$T[side-chain-1x151936-fresh]" "$T[default-chain-1x151936-fresh]" \
  --benchmark-json="$OUT/order.json" > "$OUT/order.log" 2>&1
echo "== order probe rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/order.log")"
python3 - "$OUT/order.json" <<'PY' | tee "$OUT/order-summary.txt"
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:  # in the order they ran
    e = b["extra_info"]
    print(f"{e['host_us_median']:7.1f} us (idle {e['host_us_idle_median']:.1f})  {b['name']}  C {e.get('c_served')}")
PY
timeout -s INT ${DECODE_LIMIT:-150} python3 -m pytest bench/test_decode_loop.py "${BH[@]}" -rs \
  --benchmark-json="$OUT/decode.json" > "$OUT/decode.log" 2>&1
echo "== decode loop rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/decode.log")"
grep -E "SKIPPED" "$OUT/decode.log" | head -5
python3 - "$OUT/decode.json" <<'PY' | tee "$OUT/decode-summary.txt"
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
for b in sorted(rows, key=lambda b: (b["extra_info"].get("mode", ""), b["extra_info"].get("batch", 0), b["name"])):
    e = b["extra_info"]
    print(f"{b['name']:55s} step {e.get('step_us', float('nan')):8.1f} us  forward {e.get('forward_us', float('nan')):8.1f}"
          f"  sampling {e.get('sampling_us', float('nan')):8.1f}  {e.get('capture_error', '')}")
PY
echo "== done at $((SECONDS - T0)) s"
