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
mkdir -p "$OUT/san"
F=tests/kernels/test_sampling_fast.py
(sleep 30; OUT=$OUT/san FILES="$F::test_large_form_past_the_small_limit $F::test_fast_pass_draws_the_reference_tokens $F::test_drawing_near_ties_fall_back_to_the_exact_draw" \
   TOOLS="memcheck racecheck synccheck" LIMIT=${SAN_LIMIT:-85} WARM=0 bash tools/gpu/sanitize.sh > "$OUT/san/san.out" 2>&1;
   echo "sanitize rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt") &
timeout ${GATE_LIMIT:-300} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "gate rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt"
wait
cat "$OUT/done.txt"; tail -3 "$OUT/gate.log"; grep -E "custom" "$OUT/san/san.out" | tail -6
timeout ${HOST_LIMIT:-150} python3 -m pytest bench/test_host_overhead.py --backend cuda -q -p no:cacheprovider \
  -k "torch" --benchmark-json="$OUT/host-perf.json" > "$OUT/host-perf-bench.log" 2>&1
echo "== host rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host-perf-bench.log")"
python3 - "$OUT/host-perf.json" <<'PY' | tee "$OUT/host-perf-summary.txt"
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
for b in sorted(rows, key=lambda b: b["name"]):
    e = b["extra_info"]
    t = e.get("target_us")
    mark = "" if t is None else ("  MET" if e["host_us_median"] <= t else f"  MISSED (<= {t})")
    idle = e.get("host_us_idle_median")
    idle = "" if idle is None else f" (idle {idle:.1f})"
    print(f"{e['host_us_median']:7.1f} us  {e.get('impl', b['name'])}{mark}{idle}")
PY
BARGS=(--backend cuda -q -rfEs -p no:cacheprovider --bench-drop-data --benchmark-max-time=0.02
       --benchmark-min-rounds=5 --benchmark-columns=median,rounds --bench-shapes=all)
use_flashinfer fi0214
timeout -s INT -k 10 ${K1_LIMIT:-70} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/k1.json" \
  bench/test_sampling.py -k "top_k1000 and not reference" > /tmp/k1.log 2>&1
echo "== k1 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/k1.log)"
use_flashinfer fi074
timeout -s INT -k 10 ${K2_LIMIT:-35} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/k2.json" \
  bench/test_sampling.py -k "top_k1000 and flashinfer" > /tmp/k2.log 2>&1
echo "== k2 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/k2.log)"
use_flashinfer fi0214
python3 -m bench.report "$OUT"/k1.json "$OUT"/k2.json > "$OUT/report.md" 2>> /tmp/k2.log
grep -E "^\| top_k1000 \|" "$OUT/report.md" | cut -c1-300
