#!/usr/bin/env bash
# The forty-fourth session's second call (carry .whl; <= 595 s): where the tile finalize's time
# goes, stage by stage (tools/gpu/fin_stages.sh: the chain and top_k 50 at SH, top_k 1000 at
# 64 x 151936 through the large form, whose stop 9 holds phase 1, tau() and gather()), then
# compute-sanitizer racecheck alone over the large form's tests (tests/kernels/
# test_sampling_fast.py's large / gather / tau tests and the outlier row's regress test, at the
# simulator's shapes: ROCSAMPLE_FUZZ=sanitize), after one plain run of them for numba's disk
# cache, stopping by STOP (default 585 s). FIN=0: racecheck alone. Output: $OUT/stages.txt,
# warm.log, racecheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
if [ "${FIN:-1}" = 1 ]; then
  timeout "${FLIM:-260}" bash tools/gpu/fin_stages.sh > /tmp/fin.log 2>&1
  echo "== fin_stages rc=$? at $((SECONDS - T0)) s"; grep -E "^-- stop|failed" /tmp/fin.log | tail -3
fi
export ROCSAMPLE_FUZZ=sanitize
FS=(tests/kernels/test_sampling_fast.py tests/regress/test_an_outlier_row_overflows_the_gathered_list.py)
PA=("${BH[@]}" -k "large or gather or outlier")
timeout 120 python3 -m pytest "${FS[@]}" "${PA[@]}" > "$OUT/warm.log" 2>&1
echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
LIMIT=$((${STOP:-585} - (SECONDS - T0))) san_tool racecheck | tee -a "$OUT/san-summary.txt"
echo "== done at $((SECONDS - T0)) s"
