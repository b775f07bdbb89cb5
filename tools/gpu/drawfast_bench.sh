#!/usr/bin/env bash
# On the lent H200: the benchmarks the fast draw can move (temperature-only rows, the chain and
# the per-row device parameters, all twelve shapes), with PyTorch and FlashInfer 0.2.14 in one
# pytest process and FlashInfer 0.7.4 in a second (one version a process: BENCHMARKS.md), then
# bench.report over both. Carry .whl and .peers. Output: $OUT/t1.json, t2.json, report.md.
# Used by tools/gpu/drawfast_final.sh, drawfast_check.sh and the seventh session's s7_*.sh;
# B1_LIMIT / B2_LIMIT bound the two; K picks the cases, TAG names the files ($OUT/${TAG}1.json,
# ${TAG}2.json; t), REPORT the report ($OUT/report.md), REPORT_MODES the modes printed.
source tools/gpu/env.sh
T0=$SECONDS
BARGS=(--backend cuda -q -rfEs -p no:cacheprovider --bench-drop-data --benchmark-max-time=0.02
       --benchmark-min-rounds=5 --benchmark-columns=median,rounds --bench-shapes=all)
K=${K:-"(temperature or chain or rows) and not reference"}  # (K=... other modes)
use_flashinfer fi0214
timeout -s INT -k 10 ${B1_LIMIT:-150} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/${TAG:-t}1.json" \
  bench/test_sampling.py -k "$K" > /tmp/t1.log 2>&1
echo "== t1 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/t1.log)"
use_flashinfer fi074
timeout -s INT -k 10 ${B2_LIMIT:-80} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/${TAG:-t}2.json" \
  bench/test_sampling.py -k "($K) and flashinfer" > /tmp/t2.log 2>&1
echo "== t2 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/t2.log)"
use_flashinfer fi0214
python3 -m bench.report "$OUT/${TAG:-t}1.json" "$OUT/${TAG:-t}2.json" > "$OUT/${REPORT:-report.md}" 2>> /tmp/t2.log
grep -E "^\| (${REPORT_MODES:-temperature|chain_dev}) \|" "$OUT/${REPORT:-report.md}" | cut -c1-400 | head -40
