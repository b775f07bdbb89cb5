#!/usr/bin/env bash
# On the lent H200, the third call (<= 600 s), after final_a.sh and final_b.sh: compute-sanitizer
# racecheck and synccheck over the parts of tools/gpu/sanitize.sh (<= 305 s; the JIT cache of the
# earlier calls is on the machine, so no warm-up), then the other ten sampling shapes of the
# benchmark with PyTorch and both FlashInfers (bench.sh STEPS="s4 s5", <= 260 s), alone on the GPU
# after the sanitizers. Carry .whl and .peers.
source tools/gpu/env.sh
mkdir -p "$OUT/san2"
OUT=$OUT/san2 WARM=0 TOOLS="${SAN_TOOLS:-racecheck synccheck}" bash tools/gpu/sanitize.sh 2>&1 | tail -12
STEPS="s4 s5" bash tools/gpu/bench.sh
