#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the ninth session's last call, on the commit that lands: the device
# gate (`python -m rocsample.check --backend cuda`, the whole cuda suite with --run-slow), the
# row-strided passes' grid at 2 and 8 blocks a compute unit (ROCSAMPLE_FIN_BLOCKS_PER_CU;
# graph-timed top_p alone), then the benchmarks the session's kernels can move, with peers (top_p
# alone, greedy beside it, min_p alone and top_k 1000 through the histogram and select kernels, the
# per-row device parameters; all twelve shapes; tools/gpu/drawfast_bench.sh). Carry .whl and
# .peers. Output: $OUT/check-report-h200.json, gate.log, variants.txt, t1.json, t2.json, report.md
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$SECONDS
timeout ${GATE_LIMIT:-330} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
  > "$OUT/gate.log" 2>&1
echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
for v in 2 8; do
  ROCSAMPLE_FIN_BLOCKS_PER_CU=$v timeout 40 python3 tools/gpu/kprofile.py --graph --topp_alone \
    --shapes 64x32000,64x151936,256x32000,256x262144 2>&1 | grep GRAPH | sed "s/^/fin_blocks=$v /" \
    | tee -a "$OUT/variants.txt"
done
echo "== variants at $((SECONDS - T0)) s"
OUT=$OUT K="(top_p095 or greedy or min_p005 or top_k1000 or rows) and not reference and not min_p005_t08" \
  REPORT_MODES="top_p095|min_p005|top_k1000|chain_dev" \
  B1_LIMIT=${B1_LIMIT:-150} B2_LIMIT=${B2_LIMIT:-60} bash tools/gpu/drawfast_bench.sh | cut -c1-200
echo "== done at $((SECONDS - T0)) s"
