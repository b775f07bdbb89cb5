#!/usr/bin/env bash
# On the lent H200 (<= 600 s), prepared for the thirteenth session's first call: the gate on the
# twelfth session's final tree (its rocsample code: 3179e89's, which passed, plus minp_row's
# ROCSAMPLE_MINP_UNROLL setting at its default; the setting was removed after this run), then issue #17's host cases and the decode loop
# (interleaved, FlashInfer 0.7.4) in one run, then issue #13's MINP round of 8 loads timed
# against 4 (min_p and the chain graph-timed at six shapes; each setting its own numba cache).
# Carry .whl and .peers. Output: $OUT/check-report-h200.json, gate.log, host-perf.json,
# host-perf-summary.txt, decode.json, decode.md, minp-unroll.txt
source tools/gpu/env.sh
use_flashinfer fi074
source tools/gpu/steps.sh
banner
T0=$SECONDS
run_gate "${GATE_LIMIT:-300}"
# (a process between the gate and the host cases: the first process after the gate is slow)
timeout 40 python3 tools/gpu/first_cases_probe.py 1 2>&1 | grep -v Warning | tail -4
host_bench "${HOST_LIMIT:-70}"
decode_loop "${DECODE_LIMIT:-80}"
SH=1x32000,1x151936,64x32000,64x151936,64x262144,256x262144
for cfg in "4 32" "8 32" "8 40"; do
  set -- $cfg
  NUMBA_CACHE_DIR=/tmp/numba-minp-$1-$2 ROCSAMPLE_MINP_UNROLL=$1 ROCSAMPLE_MAX_REGISTERS="minp=$2" \
    timeout ${AB_LIMIT:-45} python3 tools/gpu/kprofile.py --graph --minp --chain --shapes $SH 2>&1 | grep GRAPH \
    | sed -E "s/gpu_us=\{'gpu_us': ([0-9.]+).*/\1/; s/^/unroll $1 cap $2 /" | tee -a "$OUT/minp-unroll.txt"
  echo "== minp unroll $1 cap $2 at $((SECONDS - T0)) s"
done
echo "== done at $((SECONDS - T0)) s"
