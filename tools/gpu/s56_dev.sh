#!/usr/bin/env bash
# A call for per-row device parameters at 64 x 151936 (1.22x the chain's host scalars in the
# fifty-fourth session's bench; the target is 1.2x). Their route runs phase 1's drawing variant,
# which the forty-second session gave three quads a round (FAST3) where threads stream 16 quads
# or more, though the chain's rows run its strided loop; the A/B of FAST3 on against off with
# chain_dev was listed from the forty-second session on and never ran. Here: kprofile's graph
# timings of FAST3 on (the default) against off, the chain (host scalars, untouched by FAST3:
# the control), chain_dev and temperature (the fast loop FAST3 was made for), at SH (default
# 1x151936, 64x151936, 256x151936, 64x262144), PASSES (default 2) passes, none after STOP - 40.
# If chain_dev gains with FAST3 off and temperature does not lose, the router keeps two quads for
# device-parameter routes (sampling_router._fast's q3: `and not r.dev`). Run in the
# fifty-seventh session (bench/results/nvidia-h100-s57-ab.txt): chain_dev level, temperature
# 5-10% slower at 64-256 x 151936 with FAST3 off, so FAST3 stays for every drawing route.
# GATE=1 runs the plain device gate (GLIM, default 450 s) while the variants compile, as the
# fifty-seventh session's first call did on a fresh machine: `GATE=1 STOP=585 bash
# tools/gpu/s56_dev.sh` (its gate beside the A/B's compiles needs more than 300 s).
# Carry .whl; <= STOP (default 400) s. Output: $OUT/ab.txt (and $OUT/gate.log,
# check-report-h200.json with GATE=1)
set -u
VARIANTS="ROCSAMPLE_FAST3=1|ROCSAMPLE_FAST3=0" MODES="--chain --chain_dev --temp" \
  SH=${SH:-1x151936,64x151936,256x151936,64x262144} STOP=${STOP:-400} exec bash tools/gpu/ab.sh
