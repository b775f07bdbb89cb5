#!/usr/bin/env bash
# On the lent H200: every benchmark suite that needs it, JSON to $OUT, most important first so that a
# run cut short still has the headline figures. Carry: .whl (numpy 2.4 etc.) and .peers (FlashInfer
# 0.2.14.post1 and 0.7.4, prebuilt for sm_90a; BENCHMARKS.md "FlashInfer peers").
#
#   1. sampling, the quick shapes (1 x 151936, 64 x 151936): rocsample, PyTorch, FlashInfer 0.2.14
#   2. FlashInfer 0.7.4 at those shapes, then the decode loop (torch / rocsample / FlashInfer 0.7.4)
#   3. set_rows, host overhead, warm start (others' suites, by file name)
#   4. sampling, the other ten shapes, rocsample + PyTorch + FlashInfer 0.2.14   (skipped if QUICK=1)
#   5. FlashInfer 0.7.4 at those shapes                                          (skipped if QUICK=1)
#   then bench.report over every JSON -> $OUT/report.md.
#
# Each step runs under `timeout -s INT` (pytest stops cleanly and pytest-benchmark still writes the
# benchmarks finished so far). Budget: see BENCHMARKS.md ("GPU budget"); SCALE=0.5 halves every
# step's limit; BENCH_BACKEND=cpu dry-runs the flow without a GPU; STEPS="s4 s5" runs only those
# steps (QUICK=1 is STEPS="s1 s2 s3"), so the whole set fits two device calls of <= 600 s; NO_DECODE=1
# leaves the decode loop out of step 2. Files back (<= 8): bench.log, report.md, s1-quick.json, s2-fi074.json, s3-rest.json,
# s4-shapes.json, s5-fi074-shapes.json.
source tools/gpu/env.sh
SCALE=${SCALE:-1}
lim() { python3 -c "print(max(20, int($1 * $SCALE)))"; }
LOG=${BENCH_LOG:-$OUT/bench.log}
BARGS=(--backend "${BENCH_BACKEND:-cuda}" -q -rfEs -p no:cacheprovider --bench-drop-data --benchmark-max-time=0.02
       --benchmark-min-rounds=5 --benchmark-columns=median,rounds)
step() {  # step NAME LIMIT_S FLASHINFER pytest-args...
  local name=$1 limit; limit=$(lim "$2"); use_flashinfer "$3"; shift 3
  local t0=$SECONDS
  echo "== $name (limit ${limit}s, PYTHONPATH tail ${PYTHONPATH##*:})" | tee -a "$LOG"
  timeout -s INT -k 15 "$limit" python3 -m pytest "${BARGS[@]}" --benchmark-json="$OUT/$name.json" "$@" \
    > "/tmp/$name.log" 2>&1
  local rc=$?
  cat "/tmp/$name.log" >> "$LOG"
  echo "== $name rc=$rc in $((SECONDS - t0))s: $(grep -E ' in [0-9.]+s' "/tmp/$name.log" | tail -1)" | tee -a "$LOG"
}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true; } | tee -a "$LOG"
T0=$SECONDS
STEPS=${STEPS:-$([ "${QUICK:-0}" = 1 ] && echo "s1 s2 s3" || echo "s1 s2 s3 s4 s5")}
on() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
on s1 && step s1-quick 150 fi0214 bench/test_sampling.py --bench-shapes=quick
S2=(100 bench/test_sampling.py bench/test_decode_loop.py -k "flashinfer or decode")
[ -n "${NO_DECODE:-}" ] && S2=(60 bench/test_sampling.py -k flashinfer)   # FlashInfer 0.7.4 alone
on s2 && step s2-fi074 "${S2[0]}" fi074 "${S2[@]:1}" --bench-shapes=quick
on s3 && step s3-rest 170 fi0214 bench/test_set_rows.py bench/test_host_overhead.py bench/test_warm_start.py
on s4 && step s4-shapes 180 fi0214 bench/test_sampling.py --bench-shapes=rest
on s5 && step s5-fi074-shapes 80 fi074 bench/test_sampling.py --bench-shapes=rest -k flashinfer
echo "== total $((SECONDS - T0))s" | tee -a "$LOG"
use_flashinfer fi0214
python3 -m bench.report "$OUT"/s*.json > "$OUT/report.md" 2>> "$LOG"
grep -E "^\| (chain|top_p095|min_p005|top_k1000|chain_dev|mixed_dev) \| (1|64) x 151936" "$OUT/report.md" | head -20
grep -A12 "^### Decode loop" "$OUT/report.md"
