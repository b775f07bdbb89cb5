#!/usr/bin/env bash
# On the lent H200 (<= 200 s; carry .whl): tools/gpu/dev_probe.py, two passes, at 1 x 151936
# and 64 x 151936: whether the histogram lane costs the device-parameter route by holding SMs
# the tile finalize's 1024-thread blocks need whole (dfin512, serial; fin512 the chain's own
# finalize at 512). Output: $OUT/ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
for pass in 1 2; do
  timeout 120 python3 tools/gpu/dev_probe.py --shapes 1x151936,64x151936 \
    --variants base,nohist,dfin512,serial,fin512 2>&1 | graph_lines p$pass
done
echo "== done at $((SECONDS - T0)) s"
