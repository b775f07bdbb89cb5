#!/usr/bin/env bash
# The twenty-fifth session's A/B of the argmax kernel's prologue through split_block (this tree)
# against d70ae0e's inline one (.alt/d70ae0e/rocsample, made by `git archive d70ae0e rocsample |
# tar -x -C .alt/d70ae0e`; carry .whl and .alt; <= 300 s): kprofile's graph-timed greedy,
# alternating three times, each tree with its own numba cache. Output: $OUT/ab.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
rev_tree d70ae0e
S=${S:-64x262144,64x151936,256x32000,1x32000,256x262144}
for v in new base; do
  ( kp_tree 150 $v --greedy --shapes 1x32000 > /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
for pass in 1 2 3; do
  for v in new base; do
    kp_tree 60 $v --graph --greedy --shapes "$S" 2>&1 | graph_lines $v
  done
  echo "-- pass $pass at $((SECONDS - T0)) s"
done
echo "== done at $((SECONDS - T0)) s"
