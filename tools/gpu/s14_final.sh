#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the fourteenth session's final device-code call: the finalize's
# warp-form block maxima (rocsample.kernels.warp_parts) graph-timed against 85f900e's
# sampling_fast.py (tools/gpu/probe/sampling_fast_85f900e.py, carried untracked) and against
# this tree with ROCSAMPLE_WARP=0 (the simulator's and numba-hip's forms); each its own numba
# cache, compiled in parallel, then the gate on the tree, then bench/test_sampling.py's
# chain and top_k50 at every shape (PyTorch beside the chain). Carry .whl.
# Output: $OUT/warp-final.txt, check-report-h200.json, gate.log, bench-chain.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
ROOT=$PWD
BASE=${BASE:-tools/gpu/probe/sampling_fast_85f900e.py}  # made by: git show 85f900e:rocsample/kernels/sampling_fast.py
run_v() {  # limit, variant (base | final | plain: this tree without warp forms), kprofile args
  local lim=$1 v=$2; shift 2
  if [ "$v" = plain ]; then
    timeout "$lim" env ROCSAMPLE_WARP=0 NUMBA_CACHE_DIR=/tmp/nc-plain python3 tools/gpu/kprofile.py "$@"
  elif [ "$v" = base ]; then
    timeout "$lim" env PYTHONPATH="$(printf %s "$PYTHONPATH" | sed "s#$ROOT#/tmp/base#g")" \
      NUMBA_CACHE_DIR=/tmp/nc-base python3 /tmp/base/tools/gpu/kprofile.py "$@"
  else
    timeout "$lim" python3 tools/gpu/kprofile.py "$@"
  fi
}
VARS=final
if [ -f "$BASE" ]; then
  rm -rf /tmp/base && mkdir /tmp/base && cp -a rocsample tools bench /tmp/base/ && cp "$BASE" /tmp/base/rocsample/kernels/sampling_fast.py
  VARS="base final"
fi
VARS="$VARS plain"
for v in $VARS; do
  ( run_v 150 $v --greedy --chain --topk50 --topp_alone --minp --shapes 1x32000,64x32000,64x151936 > /tmp/warm-$v.log 2>&1
    run_v 90 $v --topk1000 --shapes 64x151936 >> /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
done
wait
echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-*.log
run_v 40 plain --graph --chain --topk50 --shapes 1x32000,64x151936 2>&1 | grep GRAPH | sed "s/^/plain /" >> "$OUT/warp-final.txt"
for v in ${VARS% plain}; do
  run_v 45 $v --graph --chain --topk50 --shapes 1x32000,1x151936,64x32000,64x151936 2>&1 | grep GRAPH | sed "s/^/$v /" >> "$OUT/warp-final.txt"
  run_v 40 $v --graph --greedy --topp_alone --minp --shapes 1x32000,64x151936 2>&1 | grep GRAPH | sed "s/^/$v /" >> "$OUT/warp-final.txt"
  run_v 30 $v --graph --topk1000 --shapes 64x151936 2>&1 | grep GRAPH | sed "s/^/$v /" >> "$OUT/warp-final.txt"
  echo "-- $v at $((SECONDS - T0)) s"
done
sed -E "s/gpu_us=\{'gpu_us': ([0-9.]+).*/\1/" "$OUT/warp-final.txt"
run_gate "${GATE_LIMIT:-250}"
left=$((590 - (SECONDS - T0)))
if [ $left -gt 40 ]; then
  timeout -s INT $left python3 -m pytest bench/test_sampling.py "${BH[@]}" \
    -k "(test_rocsample and not rows and (chain or top_k50)) or (test_torch_peer and not rows and chain)" \
    --benchmark-json="$OUT/bench-chain.json" > /tmp/bench-chain.log 2>&1
  echo "== bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/bench-chain.log)"
fi
echo "== done at $((SECONDS - T0)) s"
