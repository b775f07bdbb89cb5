#!/usr/bin/env bash
# On the lent H200: graph-timed per-call figures (tools/gpu/kprofile.py --graph) of the working
# tree and of another commit's tree unpacked in .alt/ (git archive REV rocsample bench tools |
# tar -x -C .alt; carry .alt), one after the other in the same run.
# Usage: bash tools/gpu/ab.sh [--greedy --chain ...]
source tools/gpu/env.sh
base=$PYTHONPATH
for tree in "$PWD" "$PWD/.alt"; do
  [ -d "$tree/rocsample" ] || continue
  echo "== tree ${tree#$PWD}"
  (cd "$tree" && PYTHONPATH=${base//$PWD/$tree} \
     timeout 200 python3 tools/gpu/kprofile.py --graph "$@" 2>&1 | grep -E "GRAPH|Error|error" | head -60)
done
