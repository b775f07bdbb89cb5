#!/usr/bin/env bash
# The forty-fifth session's first call (carry .whl; <= 595 s): the top-k-only selection
# (ROCSAMPLE_TOPK_SELECT) on a GPU for the first time. While VARIANTS (as s35_nu.sh's: ';'
# between variants, each VAR=VALUE ...; default: the selection on, off, on with the large form
# at every row count) compile in the background, the cuda tests of the tile finalize's forms
# with the selection on (tests/kernels/test_sampling_fast.py, the outlier row's regress test,
# tests/kernels/test_sampling.py -k "top_k or topk or large or tile", under TLIM, default 170 s); then PASSES
# (default 2) kprofile passes (graph-timed, the bench's inputs, MODES at SH), no pass started
# after STOP_BY (default 400 s); then compute-sanitizer racecheck over the large form's and the
# selection's tests with the selection on, at the simulator's shapes, in the time left
# (stopping by STOP, default 585 s). Output: $OUT/ab.txt, tests.log, racecheck.log,
# san-summary.txt
# (The next commit made the selection the only path and removed ROCSAMPLE_TOPK_SELECT: the
# default VARIANTS are now one tree three times; this script stays as the record of that call,
# and its steps serve other VARIANTS.)
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-1x151936,8x151936,64x151936,64x262144,256x151936}
read -r -a MD <<< "${MODES:---topk1000 --chain}"
ARGS=(--graph --bench-inputs "${MD[@]}" --shapes "$SH")
IFS=';' read -r -a VS <<< "${VARIANTS:-ROCSAMPLE_TOPK_SELECT=1;ROCSAMPLE_TOPK_SELECT=0;ROCSAMPLE_TOPK_SELECT=1 ROCSAMPLE_TILE_LARGE=1}"
ab_compile
export ROCSAMPLE_TOPK_SELECT=1
timeout "${TLIM:-170}" bash -c 'python3 -m pytest tests/kernels/test_sampling_fast.py \
  tests/regress/test_an_outlier_row_overflows_the_gathered_list.py "$@" --run-slow;
  python3 -m pytest tests/kernels/test_sampling.py -k "top_k or topk or large or tile" "$@" \
  --run-slow' _ "${BH[@]}" > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(grep -E "[0-9]+ (passed|failed)" "$OUT/tests.log" | tr '\n' ' ')"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20
wait
ab_passes 400
export ROCSAMPLE_FUZZ=sanitize
FS=(tests/kernels/test_sampling_fast.py tests/regress/test_an_outlier_row_overflows_the_gathered_list.py)
PA=("${BH[@]}" -k "large or gather or outlier or selection")
LIMIT=$((${STOP:-585} - (SECONDS - T0))) san_tool racecheck | tee -a "$OUT/san-summary.txt"
echo "== done at $((SECONDS - T0)) s"
