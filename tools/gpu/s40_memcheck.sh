#!/usr/bin/env bash
# The fortieth session's memcheck probe (carry .whl and .alt/1d95d9c, made by `mkdir -p
# .alt/1d95d9c && git archive 1d95d9c rocsample | tar -x -C .alt/1d95d9c`; about 130 s): the
# captured device-route tests of tests/kernels/test_graph_cond.py, plain and then under
# compute-sanitizer memcheck, with this tree and with 1d95d9c's package (the last tree whose
# sanitizers ran clean, on an H200) side by side. In tools/gpu/s34_san.sh's run of the three
# tools at once (H100, fortieth session) four of these tests failed under memcheck with
# CUDA_ERROR_ILLEGAL_ADDRESS while memcheck reported 0 errors; here, alone, both trees pass.
# Output: $OUT/warm-{new,old}.log, mc-{new,old}.log
set -u
source tools/gpu/env.sh
T0=$SECONDS
rm -rf /tmp/old && mkdir /tmp/old && cp -r tests pyproject.toml /tmp/old/ && cp -r .alt/1d95d9c/rocsample /tmp/old/ && cp rocsample/_fastcall*.so /tmp/old/rocsample/ 2>/dev/null
K='test_a_captured_device_route or captured_rank_route'
A=(--backend cuda -q -p no:cacheprovider tests/kernels/test_graph_cond.py -k "$K")
( timeout 150 python3 -m pytest "${A[@]}" > $OUT/warm-new.log 2>&1 ) &
( cd /tmp/old && NUMBA_CACHE_DIR=/tmp/nc-old timeout 150 python3 -m pytest "${A[@]}" > $OUT/warm-old.log 2>&1 ) &
wait
echo "warm at $((SECONDS-T0)) s: new $(tail -1 $OUT/warm-new.log) | old $(tail -1 $OUT/warm-old.log)"
( timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 50 python3 -m pytest "${A[@]}" > $OUT/mc-new.log 2>&1 ) &
( cd /tmp/old && NUMBA_CACHE_DIR=/tmp/nc-old timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 50 python3 -m pytest "${A[@]}" > $OUT/mc-old.log 2>&1 ) &
wait
echo "memcheck at $((SECONDS-T0)) s"
for f in new old; do echo "$f: $(grep -E 'ERROR SUMMARY' $OUT/mc-$f.log | tail -1) | $(tail -1 $OUT/mc-$f.log)"; grep -E '^FAILED' $OUT/mc-$f.log | cut -c1-150; done
