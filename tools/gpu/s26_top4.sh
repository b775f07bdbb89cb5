#!/usr/bin/env bash
# The twenty-sixth session's A/B, gate and sanitizers of the finishing route's TOP4 form (carry
# .whl and .alt/3d45059, made by `git archive 3d45059 rocsample | tar -x -C .alt/3d45059`;
# <= 590 s): kprofile's graph-timed top_p alone at the twelve shapes, this tree against
# 3d45059's, each with its own numba cache; the device gate (GLIM, default 285 s); then
# compute-sanitizer memcheck, racecheck and synccheck over the nucleus tests (LIMIT each,
# default 45 s; the simulator's shapes).
# Output: $OUT/ab.txt ("VARIANT GRAPH topp_alone shape gpu_us=..."), gate.log,
# check-report-h200.json, warm.log, {memcheck,racecheck,synccheck}.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
rev_tree 3d45059
S=${S:-1x32000,8x32000,64x32000,256x32000,1x151936,8x151936,64x151936,256x151936,1x262144,8x262144,64x262144,256x262144}
kp_warm --topp_alone --shapes 1x32000
for pass in ${PASSES:-1}; do
  kp_ab 80 topp_alone "$S"
  echo "-- pass $pass at $((SECONDS - T0)) s"
done
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-285}"
export ROCSAMPLE_FUZZ=sanitize NUMBA_CACHE_DIR=/tmp/nc-new
FS=(tests/kernels/test_sampling_nucleus.py)
PA=(--backend cuda -q -p no:cacheprovider)
LIMIT=${LIMIT:-45} sanitizers
echo "== done at $((SECONDS - T0)) s"
