#!/usr/bin/env bash
# The thirtieth session's first device call (carry .whl and .alt/328cd23, made by `mkdir -p
# .alt/328cd23 && git archive 328cd23 rocsample | tar -x -C .alt/328cd23`; <= 590 s): phase 1's
# redraw behind the tree's own barrier (this tree) against 328cd23's barrier after the fast loop,
# kprofile graph-timed, each tree with its own numba cache: top_p alone and temperature 0.8 at
# four shapes, their logprob variants at two; then the redraw tests on cuda and
# tools/gpu/s29_left.py at 256 x 32000 (the bench's rows: the nucleus pass's decision per row).
# Output: $OUT/ab.txt ("VARIANT GRAPH mode shape gpu_us=..."), tests.log, left.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
rev_tree 328cd23
kp_warm --topp_alone --temp --temp_lp --topp_alone_lp --shapes 64x32000,64x151936
S4="64x32000,256x32000,64x151936,256x151936"
kp_ab 60 topp_alone "$S4"
kp_ab 50 temp "$S4"
kp_ab 40 temp_lp "64x32000,256x151936"
kp_ab 40 topp_alone_lp "64x32000,256x151936"
echo "== A/B done at $((SECONDS - T0)) s"
timeout 100 env NUMBA_CACHE_DIR=/tmp/nc-new python3 -m pytest "${BH[@]}" \
  tests/kernels/test_sampling_nucleus.py tests/regress/test_straddling_row_took_the_one_block_histogram_finish.py \
  -k "unsettled or straddl" > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -5
timeout 90 env NUMBA_CACHE_DIR=/tmp/nc-new python3 tools/gpu/s29_left.py 256 32000 2>&1 | tail -20 | tee "$OUT/left.txt"
echo "== done at $((SECONDS - T0)) s"
