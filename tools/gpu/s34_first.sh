#!/usr/bin/env bash
# The next session's first call (carry .whl with numpy, gguf and ml_dtypes; <= 590 s): the device
# gate on this tree (GLIM, default 290 s: the thirty-third session's tree ran the suite only on
# an H100, cut at 2361 of 2364 tests; since then the rank pass's left rows row-strided at every
# row count, and the nucleus and rank passes' need_lane with the conditional lane behind
# NUC_COND_MAX_ROWS), then bench/test_sampling.py's top_p095 and top_k1000 (rocsample only, its
# own inputs, graph-timed) with the nucleus routes' lane unconditional (ROCSAMPLE_NUC_COND_MAX_ROWS
# 0, the default) and conditional at every row count, each in its own process (KLIM, default
# 75 s). Set NUC_COND_MAX_ROWS from it, then bash tools/gpu/s32_bench.sh (carry .whl and
# .peers/fi074) for every mode with the peers.
# Output: $OUT/gate.log, check-report-h200.json, cond-{off,on}.json, cond-{off,on}.md
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate "${GLIM:-290}"
for v in "off 0" "on 1073741824"; do
  set -- $v
  BJ=cond-$1 BK="test_rocsample and (top_k1000 or top_p095)" ROCSAMPLE_NUC_COND_MAX_ROWS=$2 \
    topp_bench "${KLIM:-75}"
  grep -E "^\| (top_k1000|top_p095) " "$OUT/cond-$1.md" | cut -d'|' -f2-5 | sed "s/^/$1 /"
done
echo "== done at $((SECONDS - T0)) s"
