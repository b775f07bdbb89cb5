#!/usr/bin/env bash
# On the lent H200 (<= 420 s), after the large form's gather became a coalesced scan of the row:
# the device gate, with racecheck / memcheck / synccheck over the large form and the fast draw at
# the sanitize shapes beside it (numba cache warmed first); then top_k 1000 at all twelve shapes
# (PyTorch and both FlashInfers), and rocsample's top_k 1000 again with the large form forced at
# every shape (ROCSAMPLE_TILE_LARGE=1: where it beats the histogram path). Carry .whl and .peers.
# Output: $OUT/check-report-h200.json, gate.log, san/, k1.json, k2.json, kf.json, report*.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
mkdir -p "$OUT/san"
F=tests/kernels/test_sampling_fast.py
SAN="$F::test_large_form_past_the_small_limit $F::test_fast_pass_draws_the_reference_tokens $F::test_drawing_near_ties_fall_back_to_the_exact_draw"
(sleep 20; ROCSAMPLE_FUZZ=sanitize timeout 100 python3 -m pytest -q -p no:cacheprovider --backend cuda $SAN > "$OUT/san/warm.log" 2>&1
 ROCSAMPLE_FUZZ=sanitize OUT=$OUT/san FILES="$SAN" TOOLS="racecheck memcheck synccheck" LIMIT=${SAN_LIMIT:-90} WARM=0 \
   bash tools/gpu/sanitize.sh > "$OUT/san/san.out" 2>&1
 echo "sanitize rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt") &
timeout ${GATE_LIMIT:-280} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "gate rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt"
wait
cat "$OUT/done.txt"; tail -2 "$OUT/gate.log"; grep -E "custom" "$OUT/san/san.out" | tail -3
BARGS=(--backend cuda -q -rfEs -p no:cacheprovider --bench-drop-data --benchmark-max-time=0.02
       --benchmark-min-rounds=5 --benchmark-columns=median,rounds --bench-shapes=all)
use_flashinfer fi0214
timeout -s INT -k 10 ${K1_LIMIT:-60} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/k1.json" \
  bench/test_sampling.py -k "top_k1000 and not reference" > /tmp/k1.log 2>&1
echo "== k1 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/k1.log)"
use_flashinfer fi074
timeout -s INT -k 10 ${K2_LIMIT:-30} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/k2.json" \
  bench/test_sampling.py -k "top_k1000 and flashinfer" > /tmp/k2.log 2>&1
echo "== k2 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/k2.log)"
use_flashinfer fi0214
ROCSAMPLE_TILE_LARGE=1 timeout -s INT -k 10 ${KF_LIMIT:-40} python3 -m pytest "${BARGS[@]}" \
  --benchmark-json="$OUT/kf.json" bench/test_sampling.py -k "top_k1000 and rocsample and not reference" > /tmp/kf.log 2>&1
echo "== kf rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/kf.log)"
python3 -m bench.report "$OUT"/k1.json "$OUT"/k2.json > "$OUT/report.md" 2>> /tmp/k2.log
grep -E "^\| top_k1000 \|" "$OUT/report.md" | cut -c1-300
python3 -m bench.report "$OUT"/kf.json > "$OUT/report-forced.md" 2>> /tmp/kf.log
grep -E "^\| top_k1000 \|" "$OUT/report-forced.md" | cut -c1-80
