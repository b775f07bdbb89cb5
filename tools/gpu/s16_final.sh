#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl and .peers), the sixteenth session's second call, on the
# tree that lands: the gate (python -m rocsample.check --backend cuda, --run-slow); every sampling
# mode at the twelve shapes with PyTorch, FlashInfer 0.2.14 and FlashInfer 0.7.4 in the same run
# (tools/gpu/bench.sh's steps 1, 2, 4 and 5, without the decode loop); then the large form's
# ordered gather (ROCSAMPLE_GATHER_ORDERED=1, its own numba cache, compiled while the gate runs)
# graph-timed against the default at top_k 1000, and the large form's cuda tests with it on.
# Output (8 files): check-report-h200.json, gate.log, report.md, s1-quick.json, s2-fi074.json,
# s4-shapes.json, s5-fi074-shapes.json, ab.txt.
# (Ran on 44f2c3a. The ordered gather lost at 64 x 262144 and was taken out in e143927, so on
# later trees the "ordered" lines time the default kernels a second time. GATE_LIMIT 250 cut the
# gate in its closing benchmark after its suite had passed: give it 300.)
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
K=(--topk1000 --shapes 64x151936,64x262144)
ORD=(env ROCSAMPLE_GATHER_ORDERED=1 NUMBA_CACHE_DIR=/tmp/nc-ord)
( timeout 200 "${ORD[@]}" python3 tools/gpu/kprofile.py "${K[@]}" > /tmp/warm-ord.log 2>&1
  echo "warm ord rc=$?" >> /tmp/warm-ord.log ) &
[ -n "${SKIP_GATE:-}" ] || run_gate "${GATE_LIMIT:-300}"
wait
tail -n1 /tmp/warm-ord.log
echo "== bench from $((SECONDS - T0)) s"
BENCH_LOG=/tmp/bench.log STEPS=${STEPS:-"s1 s2 s4 s5"} NO_DECODE=1 bash tools/gpu/bench.sh 2>&1 | tail -12
grep -E "^== " /tmp/bench.log
echo "== A/B from $((SECONDS - T0)) s"
for pass in 1 2; do
  [ $((560 - (SECONDS - T0))) -gt 40 ] || break
  timeout 30 python3 tools/gpu/kprofile.py --graph "${K[@]}" 2>&1 | graph_lines default
  timeout 30 "${ORD[@]}" python3 tools/gpu/kprofile.py --graph "${K[@]}" 2>&1 | graph_lines ordered
done
left=$((585 - (SECONDS - T0)))
if [ $left -gt 30 ]; then
  timeout $left "${ORD[@]}" python3 -m pytest "${BH[@]}" tests/kernels/test_sampling_fast.py -k large \
    > /tmp/ord-tests.log 2>&1
  echo "== ordered gather, large-form tests on cuda: rc=$? $(tail -1 /tmp/ord-tests.log)" | tee -a "$OUT/ab.txt"
fi
echo "== done at $((SECONDS - T0)) s"
