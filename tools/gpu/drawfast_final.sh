#!/usr/bin/env bash
# On the lent H200, one call (<= 600 s), the sixth session's last: the device gate with
# compute-sanitizer (memcheck, racecheck, synccheck) over the fast draw's own test beside it, then
# tools/gpu/drawfast_bench.sh (temperature-only rows, the chain and the per-row device parameters
# at all twelve shapes, PyTorch and both FlashInfers). Carry .whl and .peers (BENCHMARKS.md,
# "The lent H200").
# Output: $OUT/check-report-h200.json, gate.log, san/ (sanitize.json, logs), t1.json (rocsample,
# torch, FlashInfer 0.2.14), t2.json (FlashInfer 0.7.4), report.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
mkdir -p "$OUT/san"
(sleep 30; OUT=$OUT/san FILES="tests/kernels/test_sampling_fast.py" PYARGS="-k near_ties" \
   TOOLS="memcheck racecheck synccheck" LIMIT=90 WARM=0 bash tools/gpu/sanitize.sh > "$OUT/san/san.out" 2>&1;
   echo "sanitize rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt") &
timeout ${GATE_LIMIT:-330} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "gate rc=$? at $((SECONDS - T0)) s" >> "$OUT/done.txt"
wait
cat "$OUT/done.txt"; tail -4 "$OUT/gate.log"; cat "$OUT/san/san.out" | grep -E "errors|hazards|rc " | tail -8
bash tools/gpu/drawfast_bench.sh
