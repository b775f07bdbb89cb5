#!/usr/bin/env bash
# On the lent H200, a short call (<= 300 s) when too little device time is left for the gate:
# the sampling kernel tests and the regression tests on cuda (xdist), then the benchmarks of
# tools/gpu/drawfast_final.sh (temperature, the chain, per-row device parameters; PyTorch and
# both FlashInfers). Carry .whl and .peers. Output: $OUT/tests.log, t1.json, t2.json, report.md
source tools/gpu/env.sh
T0=$SECONDS
timeout ${T_LIMIT:-120} python3 -m pytest -q -p no:cacheprovider --backend cuda -n 8 tests/kernels/test_sampling.py \
  tests/kernels/test_sampling_fast.py tests/kernels/test_sampling_philox.py tests/kernels/test_sampler_branches.py \
  tests/kernels/test_sampler_capture.py tests/test_sampling_plan_splits.py tests/regress > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
BARGS=(--backend cuda -q -rfEs -p no:cacheprovider --bench-drop-data --benchmark-max-time=0.02
       --benchmark-min-rounds=5 --benchmark-columns=median,rounds --bench-shapes=all)
K="(temperature or chain or rows) and not reference"
use_flashinfer fi0214
timeout -s INT -k 10 ${B1_LIMIT:-80} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/t1.json" \
  bench/test_sampling.py -k "$K" > /tmp/t1.log 2>&1
echo "== t1 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/t1.log)"
use_flashinfer fi074
timeout -s INT -k 10 ${B2_LIMIT:-35} python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/t2.json" \
  bench/test_sampling.py -k "($K) and flashinfer" > /tmp/t2.log 2>&1
echo "== t2 rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/t2.log)"
use_flashinfer fi0214
python3 -m bench.report "$OUT"/t1.json "$OUT"/t2.json > "$OUT/report.md" 2>> /tmp/t2.log
grep -E "^\| (temperature|chain_dev) \|" "$OUT/report.md" | head -20
