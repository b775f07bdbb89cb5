#!/usr/bin/env bash
# On the lent H200 (<= 150 s; carry .whl): tools/gpu/dev_probe.py, three passes, 1 x 151936 and
# 64 x 151936: per-row device parameters with the histogram lane as it is (base), without it
# (nohist) and with its histogram kernel alone (noselect): what a lane of one launch would cost.
# Output: $OUT/ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
for pass in 1 2 3; do
  timeout 60 python3 tools/gpu/dev_probe.py --shapes 1x151936,64x151936 \
    --variants base,nohist,noselect > "$OUT/p$pass.log" 2>&1
  echo "rc=$?"; graph_lines "p$pass" < "$OUT/p$pass.log" > /dev/null
  grep -E "Error|error" "$OUT/p$pass.log" | grep -v Warning | tail -3
done
cat "$OUT/ab.txt"
echo "== done at $((SECONDS - T0)) s"
