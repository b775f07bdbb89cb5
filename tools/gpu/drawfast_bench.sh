#!/usr/bin/env bash
# On the lent H200: the benchmarks the fast draw can move (temperature-only rows, the chain and
# the per-row device parameters, all twelve shapes), with PyTorch and FlashInfer 0.2.14 in one
# pytest process and FlashInfer 0.7.4 in a second (one version a process: BENCHMARKS.md), then
# bench.report over both. Carry .whl and .peers. Output: $OUT/t1.json, t2.json, report.md.
# Used by tools/gpu/drawfast_final.sh and drawfast_check.sh; B1_LIMIT / B2_LIMIT bound the two.
source tools/gpu/env.sh
T0=$SECONDS
BARGS=(--backend cuda -q -rfEs -p no:cacheprovider --bench-drop-data --benchmark-max-time=0.02
       --benchmark-min-rounds=5 --benchmark-columns=median,rounds --bench-shapes=all)
K=${K:-"(temperature or chain or rows) and not reference"}  # (K=... other modes)
use_flashinfer fi0214
timeout -s INT -k 10 ${B1_LIMIT:-150} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/t1.json" \
  bench/test_sampling.py -k "$K" > /tmp/t1.log 2>&1
echo "== t1 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/t1.log)"
use_flashinfer fi074
timeout -s INT -k 10 ${B2_LIMIT:-80} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/t2.json" \
  bench/test_sampling.py -k "($K) and flashinfer" > /tmp/t2.log 2>&1
echo "== t2 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/t2.log)"
use_flashinfer fi0214
python3 -m bench.report "$OUT"/t1.json "$OUT"/t2.json > "$OUT/report.md" 2>> /tmp/t2.log
grep -E "^\| (${REPORT_MODES:-temperature|chain_dev}) \|" "$OUT/report.md" | cut -c1-400 | head -40
