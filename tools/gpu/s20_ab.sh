#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the twentieth session's A/B of the histogram and
# select passes as one ticket-ordered launch (tools/gpu/one_launch.patch, applied to a copy of
# this tree: "new") against this tree's two launches ("old"). Not kept: new was slower (docs/
# PERF_NOTES.md "Twentieth session").
# (The session's first call ran the gate, the demo and new against old with the patch applied to
# the working tree itself and old from 1770d41; bench/results/nvidia-h200-s20-one-launch*.)
# Graph-timed (kprofile.py --graph), PASSES passes (default 1) of each VARIANTS entry
# (default "new old") over MODES (default: the chain and per-row device parameters, top_p alone,
# top_k 1000, min_p alone at 1 x 32000, 1 x 151936, 64 x 32000 and 64 x 151936), each tree its own
# numba cache, compiled in parallel first. Timing-only variants of new (tokens not guaranteed):
#   nofence  without the item loops' two fences (the one a histogram item ends with, before its
#            done count; the one every thread of a select item makes after the wait)
#   nospin   select items do not wait for the histogram items
# Output: $OUT/ab.txt ("VARIANT GRAPH mode shape gpu_us=N"), summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
VARIANTS=${VARIANTS:-new old}
for v in $VARIANTS; do
  [ "$v" = old ] && continue
  copy_tree "/tmp/t-$v"
  cp -a tests docs "/tmp/t-$v/"
  patch -d "/tmp/t-$v" -p1 -s < tools/gpu/one_launch.patch || echo "patch failed: $v"
  python3 - "/tmp/t-$v/rocsample/kernels/sampling_hist.py" "$v" <<'PY'
import sys
path, v = sys.argv[1:]
s = open(path).read()
edits = {
    "nofence": [("""            cuda.threadfence()
            cuda.syncthreads()
            if tid == 0:
                atomic_add(tk, 1, np.int32(1))""", """            cuda.syncthreads()
            if tid == 0:
                atomic_add(tk, 1, np.int32(1))"""),
                ("            cuda.threadfence()   # (every thread: what the histogram items wrote)\n",
                 "")],
    "nospin": [("while atomic_add(tk, 1, np.int32(0)) < G and polls < _SPIN_MAX:",
                "while polls < np.int32(0):")],
}.get(v, [])
for a, b in edits:
    assert a in s, (v, a)
    s = s.replace(a, b)
open(path, "w").write(s)
PY
done
run_v() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  if [ "$v" = old ]; then
    timeout "$lim" python3 tools/gpu/kprofile.py "$@"
  else
    timeout "$lim" env PYTHONPATH="$(tree_path /tmp/t-$v)" NUMBA_CACHE_DIR=/tmp/nc-$v \
      python3 /tmp/t-$v/tools/gpu/kprofile.py "$@"
  fi
}
read -r -a A <<< "${MODES:---chain --chain_dev --topp_alone --topk1000 --minp --shapes 1x32000,1x151936,64x32000,64x151936}"
for v in $VARIANTS; do
  ( run_v 250 "$v" "${A[@]}" > "/tmp/warm-$v.log" 2>&1; echo "warm $v rc=$?" >> "/tmp/warm-$v.log" ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for pass in $(seq "${PASSES:-1}"); do
  for v in $VARIANTS; do
    run_v 120 "$v" --graph "${A[@]}" 2>&1 | graph_lines "$v"
    echo "-- $v pass $pass at $((SECONDS - T0)) s"
  done
done
# shellcheck disable=SC2086
python3 tools/gpu/ab_summary.py "$OUT/ab.txt" $VARIANTS | tee "$OUT/summary.txt"
echo "== done at $((SECONDS - T0)) s"
