#!/usr/bin/env bash
# One A/B call (carry .whl; <= STOP, default 400 s; keep STOP 15 s or more under the run's
# timeout_s, so that the summary is printed before the run's limit): kprofile's graph timings
# with the bench's inputs of MODES (kprofile's mode flags, default "--temp") at SH (default
# 64x151936) for each of VARIANTS ("|"-separated, each a space-separated list of VAR=VALUE
# settings, TREE=REV among them for another commit's package: steps.sh's kp_var), each variant
# compiled in its own numba cache in the background (KLIM, default 240 s); with GATE=1 the
# plain device gate runs meanwhile (GLIM, default 450 s: beside the compiles it needs more
# than 300). Then PASSES (default 2) passes of every variant in turn, none started after
# STOP - 40 s nor where the longest pass so far would end past STOP (steps.sh's ab_passes).
# Output: $OUT/ab.txt, its summary printed (tools/gpu/ab_summary.py); with GATE=1 also
# $OUT/gate.log and check-report-h200.json.
# e.g. VARIANTS="ROCSAMPLE_FAST3=1|ROCSAMPLE_FAST3=0" MODES="--chain --chain_dev --temp" \
#        SH=64x151936 bash tools/gpu/ab.sh
# An empty variant is this tree as it stands: VARIANTS="|TREE=REV" times it against another
# commit's package (carry .alt/REV), which the earlier ab.sh of this name did with .alt.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
[ -n "${VARIANTS:-}" ] || { echo "ab.sh: VARIANTS is empty (e.g. VARIANTS=\"A=1|A=0\")" >&2; exit 2; }
SH=${SH:-64x151936}
read -r -a modes <<< "${MODES:---temp}"
ARGS=(--graph --bench-inputs "${modes[@]}" --shapes "$SH")
IFS='|' read -r -a VS <<< "$VARIANTS"
KLIM=${KLIM:-240} ab_compile
[ "${GATE:-0}" = 1 ] && run_gate "${GLIM:-450}"
wait
STOP=${STOP:-400}
PASSES=${PASSES:-2} STOP_BY=$((STOP - 40)) ab_passes "$STOP"
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" 2>/dev/null | tail -30
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/ab.txt"
