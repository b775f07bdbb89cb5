#!/usr/bin/env bash
# On the lent H200, one call (<= 600 s): the device gate, with the correctness jobs that need no
# quiet GPU running beside its test suite: the soak, the long fuzz profile and compute-sanitizer.
# Timing-sensitive work (benchmarks) goes in tools/gpu/final_b.sh, alone on the GPU.
#   gate      python -m rocsample.check --backend cuda (whole suite with --run-slow on xdist
#             workers, then its short benchmark) -> $OUT/check-report-h200.json
#   soak      tools/gpu/soak.sh (<= 300 s)
#   fuzz      tools/gpu/fuzz.sh, long profile, FUZZ_LIMIT (default 150 s)
#   sanitize  tools/gpu/sanitize.sh, SAN_TOOLS (default memcheck: <= 240 s) in parts; racecheck and
#             synccheck (<= 305 s) go in the next call (tools/gpu/final_c.sh)
# SOAK=0 / FUZZ=0 leave those out (a rerun of the gate after fixes). Logs in $OUT/a.tgz; summaries
# on stdout.
source tools/gpu/env.sh
mkdir -p "$OUT/a/soak" "$OUT/a/fuzz" "$OUT/a/san"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
(timeout 90 python3 tools/gpu/diag_torch_cpu.py > "$OUT/a/diag.txt" 2>&1; echo "diag rc=$? at $((SECONDS - T0)) s" >> "$OUT/a/done.txt") &
[ "${SOAK:-1}" = 1 ] && (OUT=$OUT/a/soak bash tools/gpu/soak.sh > "$OUT/a/soak.out" 2>&1; echo "soak rc=$? at $((SECONDS - T0)) s" >> "$OUT/a/done.txt") &
[ "${FUZZ:-1}" = 1 ] && (sleep 20; OUT=$OUT/a/fuzz LIMIT=${FUZZ_LIMIT:-150} ROCSAMPLE_FUZZ_EXAMPLES=${FUZZ_X:-3} bash tools/gpu/fuzz.sh \
   > "$OUT/a/fuzz.out" 2>&1; echo "fuzz rc=$? at $((SECONDS - T0)) s" >> "$OUT/a/done.txt") &
(sleep 40; OUT=$OUT/a/san WARM=0 TOOLS=${SAN_TOOLS:-memcheck} bash tools/gpu/sanitize.sh > "$OUT/a/san.out" 2>&1; \
   rc=$?; \
   if [ -n "${SAN2_TOOLS:-}" ]; then OUT=$OUT/a/san2 WARM=0 TOOLS=$SAN2_TOOLS PARTS=${SAN2_PARTS:-fuzz} \
     bash tools/gpu/sanitize.sh >> "$OUT/a/san.out" 2>&1 || rc=$?; fi; \
   echo "sanitize rc=$rc at $((SECONDS - T0)) s" >> "$OUT/a/done.txt") &
timeout ${GATE_LIMIT:-500} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/a/gate.log" 2>&1
echo "gate rc=$? at $((SECONDS - T0)) s" >> "$OUT/a/done.txt"
wait
cat "$OUT/a/done.txt"
grep -E "^(FAILED|ERROR)|[0-9]+ (passed|failed)|^PASS|^FAIL|^bench " "$OUT/a/gate.log" | cut -c1-200 | tail -30
grep -E "^[0-9.]+s (call|setup)" "$OUT/a/gate.log" | head -12
cat "$OUT/a/diag.txt" | grep -v Warning | tail -30
tail -3 "$OUT/a/soak.out"
grep -E "passed|failed|^E  " "$OUT/a/fuzz.out" | head -12
grep -E "errors|hazards|TIMED" "$OUT/a/san.out" | tail -12
tar czf "$OUT/a.tgz" -C "$OUT" a
rm -rf "$OUT/a"
