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
F=tests/kernels/test_sampling_fast.py
SAN_FILES="$F::test_large_form_past_the_small_limit $F::test_fast_pass_draws_the_reference_tokens $F::test_drawing_near_ties_fall_back_to_the_exact_draw" \
  SAN_ENV="ROCSAMPLE_FUZZ=sanitize" SAN_WARM=1 SAN_TOOLS="racecheck memcheck synccheck" \
  GATE_LIMIT=${GATE_LIMIT:-280} source tools/gpu/gate_san.sh
K="top_k1000 and not reference" TAG=k REPORT_MODES=top_k1000 B1_LIMIT=${K1_LIMIT:-60} \
  B2_LIMIT=${K2_LIMIT:-30} bash tools/gpu/drawfast_bench.sh
BARGS=(--backend cuda -q -rfEs -p no:cacheprovider --bench-drop-data --benchmark-max-time=0.02
       --benchmark-min-rounds=5 --benchmark-columns=median,rounds --bench-shapes=all)
ROCSAMPLE_TILE_LARGE=1 timeout -s INT -k 10 ${KF_LIMIT:-40} python3 -m pytest "${BARGS[@]}" \
  --benchmark-json="$OUT/kf.json" bench/test_sampling.py -k "top_k1000 and rocsample and not reference" > /tmp/kf.log 2>&1
echo "== kf rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/kf.log)"
python3 -m bench.report "$OUT"/kf.json > "$OUT/report-forced.md" 2>> /tmp/kf.log
grep -E "^\| top_k1000 \|" "$OUT/report-forced.md" | cut -c1-80
