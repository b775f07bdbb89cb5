#!/usr/bin/env bash
# On the lent H200 (<= 240 s; carry .whl): tools/gpu/dev_probe.py, two passes, 1 x 151936 and 64
# x 151936, the chain and per-row device parameters as they are and with every kernel's shared
# memory carveout set alike (100: the most shared memory; 0: the most L1): whether the
# histogram lane's kernels cost the device-parameter route by a carveout the finalize's SMs
# must change for. Output: $OUT/ab.txt, carve-*.log (each run's whole output)
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
for pass in 1 2; do
  for c in none 100 0; do
    arg=(); [ "$c" = none ] || arg=(--carveout "$c")
    timeout 60 python3 tools/gpu/dev_probe.py --shapes 1x151936,64x151936 --variants base,nohist \
      "${arg[@]}" > "$OUT/carve-$c.log" 2>&1
    echo "rc=$? c=$c"; graph_lines "p$pass-c$c" < "$OUT/carve-$c.log" >/dev/null
    grep -E "Error|error|assert" "$OUT/carve-$c.log" | grep -v Warning | tail -3
  done
done
cat "$OUT/ab.txt"
echo "== done at $((SECONDS - T0)) s"
