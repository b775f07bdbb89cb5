#!/usr/bin/env bash
# The forty-sixth session's A/B of the large tile form's FINE layout (carry .whl and
# .alt/01e9436, made by `mkdir -p .alt/01e9436 && git archive 01e9436 rocsample | tar -x -C
# .alt/01e9436`; <= 595 s). While VARIANTS compile in the background (';' between variants, each
# VAR=VALUE ...; default: this tree as the router decides, this tree never taking the large
# form, 01e9436 (its strided tiles), this tree taking the large form at every row count), the
# cuda tests of the tile finalize's forms (tests/kernels/test_sampling_fast.py with the FINE
# layout's own test, the outlier row's regress test, tests/kernels/test_sampling.py -k "top_k
# or topk or large or tile" unless TK=0, --run-slow, under TLIM, default 170 s); then PASSES (default 1)
# kprofile passes of top_k 1000 alone (graph-timed, the bench's inputs) at SH, the last
# variant at SH1 only, none started after STOP_BY (default 470 s); then compute-sanitizer
# racecheck over the FINE layout's and the large form's tests at the simulator's shapes in the
# time left (stopping by STOP, default 585 s; none with 60 s or less left). Output: $OUT/ab.txt, tests.log, racecheck.log,
# san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-8x151936,64x32000,64x151936,64x262144,256x32000,256x151936,256x262144}
ARGS=(--graph --bench-inputs --topk1000 --shapes "$SH")
IFS=';' read -r -a VS <<< "${VARIANTS:-X=0;ROCSAMPLE_TILE_LARGE=0;TREE=01e9436;ROCSAMPLE_TILE_LARGE=1}"
ab_compile
timeout "${TLIM:-170}" bash -c 'python3 -m pytest tests/kernels/test_sampling_fast.py \
  tests/regress/test_an_outlier_row_overflows_the_gathered_list.py "$@" --run-slow;
  [ "${TK:-1}" = 1 ] && python3 -m pytest tests/kernels/test_sampling.py \
  -k "top_k or topk or large or tile" "$@" --run-slow' _ "${BH[@]}" > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(grep -E "[0-9]+ (passed|failed)" "$OUT/tests.log" | tr '\n' ' ')"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -20
wait
last=$((${#VS[@]} - 1))
ALL=("${VS[@]}")
VS=("${ALL[@]:0:$last}")
ab_passes "${STOP_BY:-470}"
VS=("${ALL[@]}")
ARGS=(--graph --bench-inputs --topk1000 --shapes "${SH1:-1x151936,8x151936}")
kp_v "$last" 2>&1 | graph_lines "v$last"
echo "== last variant done at $((SECONDS - T0)) s"
race_fine "${STOP:-585}"
echo "== done at $((SECONDS - T0)) s"
