#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the seventh session's last call, on the code that lands: the
# device gate with compute-sanitizer (memcheck, racecheck, synccheck) beside it over the fast
# draw's tests and the tile finalize's large form; then issue #17's host figures
# (bench/test_host_overhead.py's torch cases, PyTorch peers in the run) and top_k 1000 at all
# twelve shapes (PyTorch and both FlashInfers). Carry .whl and .peers.
# Output: $OUT/check-report-h200.json, gate.log, san/, host-perf.json, host-perf-summary.txt,
# k1.json, k2.json, report.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
F=tests/kernels/test_sampling_fast.py
SAN_FILES="$F::test_large_form_past_the_small_limit $F::test_fast_pass_draws_the_reference_tokens $F::test_drawing_near_ties_fall_back_to_the_exact_draw" \
  SAN_DELAY=30 SAN_LIMIT=${SAN_LIMIT:-85} source tools/gpu/gate_san.sh
timeout ${HOST_LIMIT:-150} python3 -m pytest bench/test_host_overhead.py --backend cuda -q -p no:cacheprovider \
  -k "torch" --benchmark-json="$OUT/host-perf.json" > "$OUT/host-perf-bench.log" 2>&1
echo "== host rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host-perf-bench.log")"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" | tee "$OUT/host-perf-summary.txt"
K="top_k1000 and not reference" TAG=k REPORT_MODES=top_k1000 B1_LIMIT=${K1_LIMIT:-70} \
  B2_LIMIT=${K2_LIMIT:-35} bash tools/gpu/drawfast_bench.sh
