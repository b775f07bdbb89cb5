#!/usr/bin/env bash
# On the lent H200 (<= 300 s; carry .whl): tools/gpu/dev_probe.py's timing variants, two passes:
# per-row device parameters at 1 x 151936 and 64 x 151936 (where does chain_dev's 1.22x go),
# the chain's finalize block and split count at 1 x 32000. Output: $OUT/ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
for pass in 1 2; do
  timeout 120 python3 tools/gpu/dev_probe.py --shapes 1x151936,64x151936 \
    --variants base,nohist,strided,splits,nodraw,nodraw_nohist 2>&1 | graph_lines p$pass
  timeout 60 python3 tools/gpu/dev_probe.py --shapes 1x32000 --variants fin512,fin256,s16,s24 \
    2>&1 | graph_lines p$pass
done
echo "== done at $((SECONDS - T0)) s"
