#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the eighth session's last call, on the commit that lands: the device
# gate (`python -m rocsample.check --backend cuda`) with compute-sanitizer (memcheck, racecheck,
# synccheck) beside it over the nucleus pass's tests and the fast draw's at the sanitize shapes
# (ROCSAMPLE_FUZZ=sanitize); then, for docs/PERF_NOTES.md, top_p alone and temperature at 64 and
# 256 x 151936 graph-timed with the drawing variants' registers capped at 64 (phase 1's TOP2 form
# holds 72, 3 blocks an SM) against the default. Carry .whl.
# Output: $OUT/check-report-h200.json, gate.log, san/, regcap.txt
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
N=tests/kernels/test_sampling_nucleus.py
F=tests/kernels/test_sampling_fast.py
SAN_FILES="$N $F::test_fast_pass_draws_the_reference_tokens" SAN_ENV="ROCSAMPLE_FUZZ=sanitize" \
  SAN_WARM=1 SAN_TOOLS="memcheck racecheck synccheck" SAN_LIMIT=${SAN_LIMIT:-100} \
  GATE_LIMIT=${GATE_LIMIT:-340} source tools/gpu/gate_san.sh
echo "== gate and sanitizers at $((SECONDS - T0)) s"
for cap in 0 64; do
  NUMBA_CACHE_DIR=/tmp/numba-cap$cap ROCSAMPLE_MAX_REGISTERS=partials_draw=$cap timeout 70 \
    python3 tools/gpu/kprofile.py --graph --topp_alone --temp --shapes 64x151936,256x151936 2>&1 \
    | grep GRAPH | sed "s/^/cap=$cap /" | tee -a "$OUT/regcap.txt"
done
echo "== done at $((SECONDS - T0)) s"
