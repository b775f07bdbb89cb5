#!/usr/bin/env bash
# On the lent H200 (about 400 s; carry .whl), prepared for the fifteenth session's first call:
# the tile finalize stage by stage (tools/gpu/fin_stages.sh) at the chain's and top_k50's 1 x 32000
# and 64 x 151936, built with the warp forms (the default) and without (ROCSAMPLE_WARP=0, the
# forms the simulator and numba-hip build, 1.8-2.4 us slower than 85f900e on the H200 in the
# fourteenth session: docs/PERF_NOTES.md "Fourteenth session" says which changes are suspects).
# Output: $OUT/stages.txt (lines "stop=S ..." and "plain stop=S ...").
# The next call: bash tools/gpu/s14_first.sh (the sanitizers over the sampling kernel tests).
set -u
export SH=${SH:-1x32000,64x151936}
bash tools/gpu/fin_stages.sh
TAG=plain ROCSAMPLE_WARP=0 bash tools/gpu/fin_stages.sh
