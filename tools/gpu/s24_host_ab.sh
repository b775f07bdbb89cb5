#!/usr/bin/env bash
# The twenty-fourth session's host A/B (carry .whl and .alt; about 200 s): Sampler.__call__'s
# torch cases (bench/test_host_overhead.py, pinned to CPU 3) on this tree and on 11d5845's,
# the thirteenth session's tree that met #17's 10 us at every point (.alt/h13, made by
# `git archive 11d5845 rocsample 'bench/*.py' tools setup.py pyproject.toml | tar -x -C .alt/h13`,
# its own _fastcall built there), alternating twice.
# Output: $OUT/host-{cur,base}{1,2}.json and their -summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
K="sampler_call_torch and not new"
cur() { HOST_PIN=3 HOST_K="$K" HOST_JSON=host-cur$1.json host_bench 100; }
base() {
  ( cd .alt/h13 && { ls rocsample/_fastcall*.so >/dev/null 2>&1 \
      || python3 setup.py -q build_ext --inplace > /tmp/b13.log 2>&1 || cat /tmp/b13.log; } \
    && export PYTHONPATH=/tmp/site:$PWD NUMBA_CACHE_DIR=/tmp/nc-h13 \
    && HOST_PIN=3 HOST_K="$K" HOST_JSON=host-base$1.json host_bench 100 )
}
for i in 1 2; do cur $i; base $i; done
for f in "$OUT"/host-*-summary.txt; do
  echo "$(basename "$f"): met $(grep -c ' MET ' "$f") of $(grep -cE ' (MET|MISSED) ' "$f");" \
    "median $(grep -oE '^ *[0-9.]+ us' "$f" | awk '{print $1}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') us"
done
echo "== done at $((SECONDS - T0)) s"
