#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the sixteenth session's first call: the round trips
# trimmed from the split kernels (seed and position with the row's parameters, the row's state
# before the branches on it, the last block's decrement after its fence, tile rows uncounted in
# phase 1, the fast draw's two logits loaded together) graph-timed against 45d35d3's kernels
# (BASE_DIR holds sampling_fast_45d35d3.py and sampling_hist_45d35d3.py, made by `git show
# 45d35d3:rocsample/kernels/<file>.py > tools/gpu/probe/<file>_45d35d3.py`, carried untracked),
# alternating new, base, new, base; then the changed kernels' cuda tests.
# Output: $OUT/ab.txt (lines "VARIANT GRAPH mode shape gpu_us=..."), $OUT/tests.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
run_v() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" python3 tools/gpu/kprofile.py "$@" ;;
    base)
      timeout "$lim" env PYTHONPATH="$BASE_PYTHONPATH" NUMBA_CACHE_DIR=/tmp/nc-base \
        python3 /tmp/base/tools/gpu/kprofile.py "$@" ;;
  esac
}
base_tree "${REV:-45d35d3}" sampling_fast sampling_hist
A=(--greedy --temp --topp_alone --minp --chain --chain_dev --shapes 1x32000,64x32000,64x151936)
B=(--temp --topp_alone --shapes 8x32000,256x32000)
C=(--topk1000 --shapes 1x32000,64x151936)
for v in new base; do
  ( run_v 200 $v "${A[@]}" > /tmp/warm-$v.log 2>&1
    run_v 60 $v "${B[@]}" >> /tmp/warm-$v.log 2>&1
    run_v 60 $v "${C[@]}" >> /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for pass in 1 2; do
  for v in new base; do
    run_v 70 $v --graph "${A[@]}" 2>&1 | graph_lines $v
    run_v 30 $v --graph "${B[@]}" 2>&1 | graph_lines $v
    run_v 30 $v --graph "${C[@]}" 2>&1 | graph_lines $v
    echo "-- $v pass $pass at $((SECONDS - T0)) s"
  done
done
left=$((585 - (SECONDS - T0)))
if [ $left -gt 40 ]; then
  timeout $left python3 -m pytest "${BH[@]}" -x tests/kernels/test_sampling_fast.py \
    tests/kernels/test_sampling_hist.py tests/kernels/test_sampling_nucleus.py > "$OUT/tests.log" 2>&1
  echo "== kernel tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
fi
(python3 - "$OUT/ab.txt" <<'PY'
import collections, re, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) GRAPH (\S+) (\S+) gpu_us=([0-9.]+)", line)
    if m:
        d[(m[2], m[3], m[1])].append(float(m[4]))
keys = sorted({(a, b) for a, b, _ in d})
print(f"{'mode':<12}{'shape':<12}{'new':>16}{'base':>16}{'new/base':>10}")
for a, b in keys:
    n, o = d.get((a, b, "new"), []), d.get((a, b, "base"), [])
    if n and o:
        r = statistics.median(n) / statistics.median(o)
        print(f"{a:<12}{b:<12}{'/'.join(f'{x:.1f}' for x in n):>16}{'/'.join(f'{x:.1f}' for x in o):>16}{r:>10.3f}")
PY
) | tee "$OUT/ab-summary.txt"
echo "== done at $((SECONDS - T0)) s"
