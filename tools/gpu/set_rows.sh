#!/usr/bin/env bash
# On the lent H200 (repo root), one call: issue #15 / #12 set_rows work.
#   1. the set_rows tests on cuda (kernels, fused path, audits, set_rows / ring regressions),
#   2. compute-sanitizer memcheck and racecheck over the word-quant, tiled-vec and reference tests,
#   3. the set_rows benchmark with ggml's CUDA set_rows, torch index_copy_ and the NumPy reference
#      as peers, into $OUT/set_rows.json (+ $OUT/set_rows.md, the tables).
# Carry: .whl (numpy 2.4, via tools/gpu/env.sh; 17 MB) and .peers (its ggml/ is the ggml peer, 2.3 MiB,
# built on the CPU machine first with `bash tools/peers/build_ggml.sh`; the rest is FlashInfer, 18 MB,
# unused here: carrying only .peers/ggml is enough).
# Budget ~240 s (cold numba cache; expected ~200): tests <= 100 (four processes at once),
# memcheck <= 35, racecheck <= 35, bench <= 100 (kernels cached by then).
# Success: "passed" with no "failed" in step 1; "ERROR SUMMARY: 0 errors" and "RACECHECK
# SUMMARY: 0 hazards" in step 2; set_rows.json with gpu_us for every impl/case/type;
# vs_rocsample.rows_differing == 0 for ggml's f32 / f16 / bf16 rows. Its quantized rows may differ
# (ggml-cuda is built with -use_fast_math: approximate 1/d, FMA contraction; its CPU reference,
# which ours equals bit for bit, has neither): the counts are the finding, iq4_nl most of all.
source tools/gpu/env.sh
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "from bench import ggml_peer as g; print('ggml peer:', g.library_path(), 'loaded' if g.load() else 'MISSING')"

echo "== 1. set_rows tests on cuda (four pytest processes at once: the cold numba JIT compiles"
echo "   each kernel signature in the process that meets it first, and they share the disk cache)"
run_group() {  # name, pytest args...
  local name=$1; shift
  timeout 100 python3 -m pytest "$@" --backend cuda --run-slow -q -p no:cacheprovider -rfE \
    --junitxml="$OUT/set_rows-tests-$name.xml" > "$OUT/set_rows-tests-$name.log" 2>&1
  echo "$name exit $?"
}
run_group kernels tests/kernels/test_set_rows.py &
run_group fused tests/kernels/test_set_rows_fused.py &
run_group audit tests/kernels/test_set_rows_errors_audit.py &
run_group regress tests/regress -k "set_rows or ring" &
wait
echo "after $((SECONDS - t0)) s"
grep -HE "passed|failed|^FAILED|^ERROR" "$OUT"/set_rows-tests-*.log | head -20

echo "== 2. compute-sanitizer (memcheck, racecheck)"
# memcheck: every type through both launch plans and both quant kernel families; racecheck (slow
# on shared memory): the word-quant and tiled-vec kernels plus the 4096-wide reference rows
for tool in memcheck racecheck; do
  if [ $tool = memcheck ]; then K="matches_reference or word_and_byte or tiles or f16_nan"
  else K="word_and_byte or tiles or (matches_reference and 4096-11)"; fi
  timeout 35 compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
    python3 -m pytest tests/kernels/test_set_rows.py tests/kernels/test_set_rows_fused.py \
    tests/regress/test_set_rows_f16_nan_payload.py --backend cuda -q -p no:cacheprovider -x \
    -k "$K" > "$OUT/set_rows-sanitize-$tool.log" 2>&1
  echo "$tool exit $? after $((SECONDS - t0)) s"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|Invalid|Race reported" \
    "$OUT/set_rows-sanitize-$tool.log" | sort | uniq -c | head
done

echo "== 3. benchmark (ggml, torch, NumPy peers)"
timeout 100 python3 -m pytest bench/test_set_rows.py --backend cuda -q -p no:cacheprovider \
  --benchmark-json="$OUT/set_rows.json" --bench-drop-data --benchmark-max-time=0.05 --benchmark-min-rounds=3 \
  --benchmark-columns=median,rounds > "$OUT/set_rows-bench.log" 2>&1
echo "exit $? after $((SECONDS - t0)) s"
grep -E "passed|failed|^FAILED|Error" "$OUT/set_rows-bench.log" | head -10
python3 -m bench.set_rows_report "$OUT/set_rows.json" > "$OUT/set_rows.md" 2>&1 && cat "$OUT/set_rows.md"
echo "total $((SECONDS - t0)) s"
