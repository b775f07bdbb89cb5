#!/usr/bin/env bash
# On the lent H200 (<= 520 s; carry .whl), the nineteenth session's first call on 5942f42 (the
# histogram kernel's MINP rows at rounds of four, dbf5536, had no GPU run): the device gate, the
# demo, then this machine's baseline for #13's two nearest targets graph-timed, two passes: the
# chain and per-row device parameters at 1 x 151936 and 64 x 151936, the chain at 1 x 32000.
# Output: $OUT/check-report-h200.json, gate.log, demo.log, ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
run_gate 330
python3 -m rocsample.demo 2>&1 | grep -v -i warn > "$OUT/demo.log"
echo "== demo rc=${PIPESTATUS[0]} at $((SECONDS - T0)) s"; tail -3 "$OUT/demo.log"
for pass in 1 2; do
  timeout 100 python3 tools/gpu/kprofile.py --graph --chain --chain_dev --shapes 1x32000,1x151936,64x151936 \
    2>&1 | graph_lines p$pass
done
echo "== done at $((SECONDS - T0)) s"
