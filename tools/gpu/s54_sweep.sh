#!/usr/bin/env bash
# The fifty-fourth session's sweep (carry .whl; <= about 300 s on a fresh machine): phase 1's
# split counts at the narrow shapes where issue #13's targets miss by little (temperature and
# top_p alone at 64 x 32000 against FlashInfer 0.7.4, the chain at 1 x 32000 against PyTorch),
# the plan's own launch shapes beside every point (tools/gpu/split_sweep.py, under SLIM, default
# 200 s), then the Sampler's kernels one by one under ncu at 1 x 32000 and 64 x 32000
# (tools/gpu/kprofile.sh, under KLIM, default 120 s). Output: $OUT/split-sweep.json,
# sweep.log, ncu.csv, kprofile.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
SWEEP_MODES=${SWEEP_MODES:-temperature,top_p095,chain} \
SWEEP_SHAPES=${SWEEP_SHAPES:-1x32000,8x32000,64x32000,256x32000,64x151936} \
SWEEP_BLOCKS=256 SWEEP_SPLITS=${SWEEP_SPLITS:-1,2,3,4,5,6,8,10,12,16,20,24,31,48,64} \
  timeout "${SLIM:-200}" python3 tools/gpu/split_sweep.py > "$OUT/sweep.log" 2>&1
echo "== sweep rc=$? at $((SECONDS - T0)) s"
grep -E "plan b" "$OUT/sweep.log" || tail -20 "$OUT/sweep.log"
timeout "${KLIM:-120}" bash tools/gpu/kprofile.sh --temp --topp_alone --chain \
  --shapes 1x32000,64x32000 > "$OUT/kprofile.log" 2>&1
echo "== kprofile rc=$? at $((SECONDS - T0)) s"
tail -40 "$OUT/kprofile.log"
echo "== all done at $((SECONDS - T0)) s"
