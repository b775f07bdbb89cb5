#!/usr/bin/env bash
# The forty-eighth session's last call (carry .whl; about 450 s; the budget left no room for the
# gate beside it, and this tree's cuda suite had passed in the session's first call):
# s48_stages.sh (warm-ups and ncu runs, none started after SSTOP, default 290 s), then
# compute-sanitizer racecheck over the gathers' tests (gather_row() is this session's device
# change), the FINE layout's and the outlier row's, stopping by STOP (default 445 s).
# Output: $OUT/stages.txt, ncu-*.csv, racecheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
STOP=${SSTOP:-290} bash tools/gpu/s48_stages.sh | tail -120
RACE_K="gather or fine_tiles or outlier" race_fine "${STOP:-445}"
echo "== done at $((SECONDS - T0)) s"
