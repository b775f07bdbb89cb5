#!/usr/bin/env bash
# The forty-third session's second call (carry .whl; <= 595 s): what the forty-second left
# undone after its gate and A/B. FIN=1 (default): the tile finalize's stages
# (tools/gpu/fin_stages.sh: the chain and top_k50 at SH, top_k 1000 at 64 x 151936, about 200 s);
# RACE=1 (default): compute-sanitizer racecheck alone over the nucleus passes' and the
# conditional lane's tests (RACE_SKIP, default captured_rank_route: the tool's own crash on that
# conditional node's replay, thirty-fifth session), under RLIM (default 330 s), after one plain
# run for numba's disk cache; RACE_FIRST=1 runs it before the stages.
# Output: $OUT/stages.txt, warm.log, racecheck.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
race() {
  FS=(tests/kernels/test_sampling_nucleus.py tests/kernels/test_graph_cond.py)
  PA=("${BH[@]}")
  timeout 120 python3 -m pytest "${FS[@]}" "${PA[@]}" > "$OUT/warm.log" 2>&1
  echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
  RACE_SKIP=${RACE_SKIP-captured_rank_route} LIMIT=${RLIM:-330} san_tool racecheck \
    | tee -a "$OUT/san-summary.txt"
}
stages() {
  ( bash tools/gpu/fin_stages.sh ) 2>&1 | grep -E "^(== |-- |stop=|fin_stages|FIN_STOP)" | tail -40
  echo "== stages done at $((SECONDS - T0)) s"
}
if [ "${RACE_FIRST:-0}" = 1 ]; then
  [ "${RACE:-1}" = 1 ] && race
  [ "${FIN:-1}" = 1 ] && stages
else
  [ "${FIN:-1}" = 1 ] && stages
  [ "${RACE:-1}" = 1 ] && race
fi
echo "== done at $((SECONDS - T0)) s"
