#!/usr/bin/env bash
# The forty-sixth session's H200 calls (carry .whl, and .peers/fi074 for PART=2; each <= 595 s).
# PART=1: the device gate (python -m rocsample.check --backend cuda under GLIM, default 320 s;
# it runs the forty-fifth session's tests added after its last device call), then
# compute-sanitizer memcheck alone over the tile finalize's tests (tests/kernels/
# test_sampling_fast.py and the outlier row's regress test at the simulator's shapes,
# ROCSAMPLE_FUZZ=sanitize) in the time left, stopping by STOP (default 585 s).
# PART=2: every mode of bench/test_sampling.py at the twelve shapes with PyTorch and FlashInfer
# 0.7.4 (tools/gpu/s32_bench.sh's run, BLIM default 380 s), then synccheck alone over the same
# tests as PART=1's memcheck in the time left.
# Output: PART=1 $OUT/gate.log, check-report-h200.json, warm.log, memcheck.log, san-summary.txt;
# PART=2 $OUT/bench.json, bench.md, warm.log, synccheck.log, san-summary.txt
set -u
[ "${PART:-1}" = 2 ] && export FLASHINFER=fi074
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
FS=(tests/kernels/test_sampling_fast.py tests/regress/test_an_outlier_row_overflows_the_gathered_list.py)
PA=("${BH[@]}")
if [ "${PART:-1}" = 1 ]; then
  run_gate "${GLIM:-320}"
  tool=memcheck
else
  BK="${BK:-not reference}" NUMBA_CACHE_DIR=/tmp/nc-new topp_bench "${BLIM:-380}"
  grep -E "^\| (top_k1000|chain|min_p|temperature|chain_dev|mixed_dev|top_p095|greedy) " \
    "$OUT/bench.md" | head -100
  tool=synccheck
fi
export ROCSAMPLE_FUZZ=sanitize
timeout 100 python3 -m pytest "${FS[@]}" "${PA[@]}" > "$OUT/warm.log" 2>&1
echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
LIMIT=$((${STOP:-585} - (SECONDS - T0))) san_tool "$tool" | tee -a "$OUT/san-summary.txt"
echo "== done at $((SECONDS - T0)) s"
