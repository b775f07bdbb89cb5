#!/usr/bin/env bash
# The twenty-sixth session's A/B and gate, run from a checkout of bf4e350 (`git worktree add
# /tmp/m4 bf4e350`; 9b880fb reverted its device code) with .whl and .alt/3d45059 (made by `git
# archive 3d45059 rocsample | tar -x -C .alt/3d45059`) carried; <= 590 s: kprofile's
# graph-timed top_p alone at the twelve shapes, that tree (phase 1 leaves a top-p-only row's
# four best scores, NUC_M) against 3d45059's (two), each with its own numba cache, alternating
# twice; that tree
# also with the finishing route at every row count (ROCSAMPLE_NUC_FINISH_ROWS=1000000: at 64
# and 256 rows, where the default bound of 8 takes the row-strided passes). Then the device
# gate (GLIM, default 300 s).
# Output: $OUT/ab.txt ("VARIANT GRAPH topp_alone shape gpu_us=..."), gate.log,
# check-report-h200.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
rev_tree 3d45059
S=${S:-1x32000,8x32000,64x32000,256x32000,1x151936,8x151936,64x151936,256x151936,1x262144,8x262144,64x262144,256x262144}
kp_warm --topp_alone --shapes 1x32000
for pass in 1 2; do
  kp_ab 80 topp_alone "$S"
  ROCSAMPLE_NUC_FINISH_ROWS=1000000 kp_tree 40 new --graph --topp_alone \
    --shapes 64x32000,256x32000 2>&1 | graph_lines new_finish
  echo "-- pass $pass at $((SECONDS - T0)) s"
done
NUMBA_CACHE_DIR=/tmp/nc-new run_gate "${GLIM:-300}"
echo "== done at $((SECONDS - T0)) s"
