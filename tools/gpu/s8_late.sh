#!/usr/bin/env bash
# On the lent H200 (<= 240 s): phase 1's TOP2 form with its partial first quads folded after the
# fast pass (ROCSAMPLE_TOP2_LATE=1: 64 registers instead of 72), against the default: the nucleus
# pass's tests on cuda with it on, then top_p alone graph-timed with it off and on (kprofile's
# inputs) and the per-kernel times with it on (ncu). Carry .whl.
# Output: $OUT/tests.log, late.txt, ncu-late.csv
source tools/gpu/env.sh
T0=$SECONDS
XD=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
ROCSAMPLE_TOP2_LATE=1 timeout 110 python3 -m pytest -q -p no:cacheprovider --backend cuda $XD \
  tests/kernels/test_sampling_nucleus.py > "$OUT/tests.log" 2>&1
echo "== tests (late) rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -5
for late in 0 1; do
  ROCSAMPLE_TOP2_LATE=$late timeout 50 python3 tools/gpu/kprofile.py --graph --topp_alone \
    --shapes 8x151936,64x151936,64x262144,256x151936 2>&1 | grep GRAPH | sed "s/^/late=$late /" \
    | tee -a "$OUT/late.txt"
done
echo "== done at $((SECONDS - T0)) s"
