#!/usr/bin/env bash
# The twenty-fourth session's A/B (carry .whl and .alt; <= 420 s): phase 1's argmax kernel with
# 16-byte loads (this tree) against b588301's (.alt/b588301/rocsample, made by `git archive
# b588301 rocsample | tar -x -C .alt/b588301`, ignored and carried), kprofile's graph-timed
# greedy at nine shapes, the two trees alternating twice, each with its own numba cache; then
# bench/test_sampling.py's greedy at the twelve shapes with torch.argmax beside it, and the
# package kernel's split sweep at the 64- and 256-row shapes.
# Output: $OUT/ab.txt ("VARIANT GRAPH greedy shape gpu_us=..."), greedy.json, split-sweep.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
rev_tree b588301
S=${S:-1x32000,1x151936,8x151936,64x32000,64x151936,64x262144,256x32000,256x151936,256x262144}
for v in new base; do
  ( kp_tree 150 $v --greedy --shapes 1x32000 > /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for pass in 1 2; do
  for v in new base; do
    kp_tree 60 $v --graph --greedy --shapes "$S" 2>&1 | graph_lines $v
  done
  echo "-- pass $pass at $((SECONDS - T0)) s"
done
NUMBA_CACHE_DIR=/tmp/nc-new greedy_bench "${BENCH_LIMIT:-100}"
NUMBA_CACHE_DIR=/tmp/nc-new SWEEP_MODES=greedy SWEEP_SHAPES=${SWEEP_SHAPES:-64x151936,64x262144,256x32000,256x151936,256x262144,8x151936} \
  SWEEP_SPLITS=${SWEEP_SPLITS:-1,2,3,4,5,6,8,16} SWEEP_BLOCKS=256,512 \
  timeout -s INT "${SWEEP_LIMIT:-120}" python3 tools/gpu/split_sweep.py > "$OUT/split-sweep.txt" 2>&1
echo "== sweep rc=$? at $((SECONDS - T0)) s"; grep -E "greedy" "$OUT/split-sweep.txt"
python3 - "$OUT/split-sweep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k, v in d.items():
    if isinstance(v, dict) and "points" in v:
        pts = sorted(v["points"].items(), key=lambda p: p[1])[:5]
        print(k, " ".join(f"{a}={b:.2f}" for a, b in pts))
PY
echo "== done at $((SECONDS - T0)) s"
