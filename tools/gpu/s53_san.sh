#!/usr/bin/env bash
# The three sanitizers over phase 1's warp-shuffle forms (the fifty-third session; carry .whl;
# <= 130 + LIMIT s): test_phase1_partials_by_warp_shuffles_match_the_tree at every mode on the
# process's form (ROCSAMPLE_WARP, else rocsample.kernels.WARP_DEFAULT), a warm-up under 120 s,
# then memcheck, racecheck and synccheck at once, each under LIMIT (default 200 s).
# Output: $OUT/{warm,memcheck,racecheck,synccheck}.log, san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
export ROCSAMPLE_FUZZ=sanitize
FS=(tests/kernels/test_sampling_fast.py)
PA=("${BH[@]}" -k warp_shuffles)
LIMIT=${LIMIT:-200} SAN_PAR=1 sanitizers
echo "== done at $((SECONDS - T0)) s"
