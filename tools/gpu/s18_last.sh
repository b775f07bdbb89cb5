#!/usr/bin/env bash
# On the lent H200 (<= 330 s; carry .whl), the eighteenth session's last short call on e2863f7's
# device code: the chain and the per-row device parameters graph-timed at 1 x 151936 and 64 x
# 151936, two passes (the 1.2x target read 1.21x at 64 x 151936 in s18_final.sh's benchmark),
# then compute-sanitizer memcheck, racecheck and synccheck over the MINP stream's test
# (test_sampling_hist.py -k stream_whole: whole rounds, the tail and split edges at 8266 logits).
# Output: $OUT/ab.txt, sanitize.json, sanitize-*-custom.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
for pass in 1 2; do
  timeout 120 python3 tools/gpu/kprofile.py --graph --chain --chain_dev --shapes 1x151936,64x151936 \
    2>&1 | graph_lines p$pass
done
echo "== timed at $((SECONDS - T0)) s"
FILES="tests/kernels/test_sampling_hist.py" PYARGS="-k stream_whole" LIMIT=${LIMIT:-50} \
  bash tools/gpu/sanitize.sh 2>&1 | tail -5
echo "== done at $((SECONDS - T0)) s"
