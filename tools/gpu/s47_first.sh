#!/usr/bin/env bash
# The forty-seventh session's first call (carry .whl; <= 595 s): the device gate on this tree
# (python -m rocsample.check --backend cuda under GLIM, default 400 s: its closing benchmark follows the suite, and 290 s cut the first run there) while VARIANTS compile in
# the background (';' between variants, each VAR=VALUE ...), then one kprofile pass of top_k 1000
# alone (graph-timed, the bench's inputs) at SH for every variant, none started after STOP_BY
# (default 540 s), then compute-sanitizer racecheck over the large form's tests (the FINE
# layout's among them) in the time left (stopping by STOP, default 588 s; none with 60 s or
# less left). Default variants: the router's choice; the FINE large form forced at every row
# count at one unit a round (ROCSAMPLE_FINE_UNITS=1) and at two; the rank route (no large
# form). Output: $OUT/gate.log, check-report-h200.json, ab.txt, racecheck.log, san-summary.txt
# (Ran once, the forty-seventh session's first call; ROCSAMPLE_FINE_UNITS is gone since, so its
# second variant is now the third's twin.)
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SH=${SH:-8x151936,64x151936,64x262144,128x151936,256x151936}
ARGS=(--graph --bench-inputs --topk1000 --shapes "$SH")
IFS=';' read -r -a VS <<< "${VARIANTS:-X=0;ROCSAMPLE_TILE_LARGE=1 ROCSAMPLE_TILE_FINE=1 ROCSAMPLE_FINE_UNITS=1;ROCSAMPLE_TILE_LARGE=1 ROCSAMPLE_TILE_FINE=1;ROCSAMPLE_TILE_LARGE=0}"
ab_compile
run_gate "${GLIM:-400}"
wait
PASSES=1 ab_passes "${STOP_BY:-540}"
race_fine "${STOP:-588}"
echo "== done at $((SECONDS - T0)) s"
