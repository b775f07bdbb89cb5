#!/usr/bin/env bash
# The next session's first call (written in the forty-eighth session, not yet run; carry .whl
# and .alt/9d7949a, made by `mkdir -p .alt/9d7949a && git archive 9d7949a rocsample | tar -x -C
# .alt/9d7949a`; <= 595 s): the device gate on this tree alone (python -m rocsample.check
# --backend cuda under GLIM, default 420 s), then the A/B of tau()'s rounds (b41737e: its tile
# maxima TPRE a thread a round) against 9d7949a (a load then a count a tile), top_k 1000 alone,
# graph-timed, the bench's inputs at SH: the router's choice (strided at 64 rows, FINE from
# 128) and the FINE layout forced, in each tree (compiled together after the gate, then one
# pass each, none started after STOP_BY, default 575 s).
# The gate runs with nothing beside it: in the forty-second session it took 320 s alone and
# 405 s beside two kprofile builds. (Its time also varies from machine to machine: 1434 s of
# tests in the forty-sixth session's gate, 2338 s in the forty-seventh's, both alone; 2837 s in
# the forty-eighth's first call, beside two variants' JIT, a 392 s suite.) The gate writes its
# report, verdict INCOMPLETE, before its closing benchmark, so a cut there still says whether
# the suite passed. Then `bash tools/gpu/s48_stages.sh` (about 4 min) in the next call.
# Output: $OUT/gate.log, check-report-h200.json (+ .junit.xml), ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-420}"
grep -E "^suite: " "$OUT/gate.log"
B=${BASE:-9d7949a}
SH=${SH:-64x151936,64x262144,256x151936}
ARGS=(--graph --bench-inputs --topk1000 --shapes "$SH")
VS=("X=0" "TREE=$B" "ROCSAMPLE_TILE_FINE=1" "TREE=$B ROCSAMPLE_TILE_FINE=1")
KLIM=${KLIM:-150} ab_compile
wait
PASSES=1 ab_passes "${STOP_BY:-575}"
echo "== done at $((SECONDS - T0)) s"
