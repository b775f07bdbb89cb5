#!/usr/bin/env bash
# The twenty-fifth session's A/B of the argmax kernel's prologue through split_block (this tree)
# against d70ae0e's inline one (.alt/d70ae0e/rocsample, made by `git archive d70ae0e rocsample |
# tar -x -C .alt/d70ae0e`; carry .whl and .alt; <= 300 s): kprofile's graph-timed greedy,
# alternating three times, each tree with its own numba cache. Output: $OUT/ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
copy_tree /tmp/base && rm -rf /tmp/base/rocsample && cp -a .alt/d70ae0e/rocsample /tmp/base/ \
  && cp rocsample/_fastcall*.so /tmp/base/rocsample/ 2>/dev/null
BASE_PYTHONPATH=$(tree_path /tmp/base)
S=${S:-64x262144,64x151936,256x32000,1x32000,256x262144}
run_v() {  # limit, variant, kprofile args
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" env NUMBA_CACHE_DIR=/tmp/nc-new python3 tools/gpu/kprofile.py "$@" ;;
    base) timeout "$lim" env PYTHONPATH="$BASE_PYTHONPATH" NUMBA_CACHE_DIR=/tmp/nc-base \
        python3 /tmp/base/tools/gpu/kprofile.py "$@" ;;
  esac
}
for v in new base; do
  ( run_v 150 $v --greedy --shapes 1x32000 > /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for pass in 1 2 3; do
  for v in new base; do
    run_v 60 $v --graph --greedy --shapes "$S" 2>&1 | graph_lines $v
  done
  echo "-- pass $pass at $((SECONDS - T0)) s"
done
echo "== done at $((SECONDS - T0)) s"
