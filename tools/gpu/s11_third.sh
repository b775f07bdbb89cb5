#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the eleventh session's third call: min_p alone through its own
# kernel (issue #13; sampling_hist._sample_minp_kernel): per-kernel durations (ncu) and
# graph-timed min_p and chain at six shapes with this tree and with ae301d7's (the histogram
# kernel served min_p; `git archive ae301d7 rocsample | tar -x -C .alt/ae301d7`); min_p and the
# chain at the twelve shapes with PyTorch and FlashInfer 0.7.4 (carried in .peers) in the run;
# the host figures (issue #17, run long after the process start of anything else); the decode
# loop with FlashInfer; then the device gate on this tree. Carry .whl, .alt (and .peers).
# Output: $OUT/check-report-h200.json, $OUT/all.tgz (logs, JSON), printed summaries.
source tools/gpu/env.sh
use_flashinfer fi074
W=$OUT/w; mkdir -p "$W"
source tools/gpu/steps.sh
banner
T0=$SECONDS
SH=1x32000,1x151936,64x151936,64x262144,256x151936,256x262144
PP0=$PYTHONPATH
for t in head ae301d7; do
  if [ $t = head ]; then export PYTHONPATH=$PP0; else export PYTHONPATH=$PWD/.alt/$t:$PP0; fi
  if [ $t = head ]; then
    mkdir -p "$W/k-$t"; OUT=$W/k-$t timeout ${K_LIMIT:-70} bash tools/gpu/kprofile.sh --minp --shapes 64x151936,64x262144,256x262144 2>&1 \
      | grep -v "^MARK" | grep -E "minp|hist|partials|GRAPH" | sed "s/^/$t /" | tail -12
  fi
  timeout ${AB_LIMIT:-50} python3 tools/gpu/kprofile.py --graph --minp --chain --shapes $SH 2>&1 | grep GRAPH \
    | sed -E "s/gpu_us=\{'gpu_us': ([0-9.]+).*/\1/; s/^/$t /" | tee -a "$W/ab.txt"
  echo "== $t at $((SECONDS - T0)) s"
done
export PYTHONPATH=$PP0
timeout -s INT ${BENCH_LIMIT:-110} python3 -m pytest bench/test_sampling.py "${BH[@]}" --bench-drop-data \
  -k "(test_rocsample or test_torch_peer or test_flashinfer_peer) and ((min_p005 and not t08) or (chain and not chain_dev and not chain_joint))" \
  --benchmark-json="$W/sampling.json" > "$W/sampling.log" 2>&1
echo "== sampling bench rc=$? at $((SECONDS - T0)) s: $(tail -1 "$W/sampling.log")"
python3 -m bench.report "$W/sampling.json" > "$W/report.md" 2>/dev/null
grep -E "^\| (min_p005|chain) \|" "$W/report.md" | cut -c1-200
timeout -s INT ${HOST_LIMIT:-60} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
  --benchmark-json="$W/host-perf.json" > "$W/host-bench.log" 2>&1
echo "== host bench rc=$? at $((SECONDS - T0)) s: $(tail -1 "$W/host-bench.log")"
python3 tools/gpu/host_summary.py "$W/host-perf.json" > "$OUT/host-perf-summary.txt"
grep -E "MISSED|chain \(torch, (fresh|same), default" "$OUT/host-perf-summary.txt"
timeout -s INT ${DECODE_LIMIT:-100} python3 -m pytest bench/test_decode_loop.py "${BH[@]}" -rs \
  --benchmark-json="$W/decode.json" > "$W/decode.log" 2>&1
echo "== decode loop rc=$? at $((SECONDS - T0)) s: $(tail -1 "$W/decode.log")"
python3 -m bench.report "$W/decode.json" 2>/dev/null | grep -A14 "^### Decode loop" | tee "$OUT/decode.md"
if [ "${GATE:-1}" = 1 ]; then
  timeout ${GATE_LIMIT:-280} python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
    > "$W/gate.log" 2>&1
  echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$W/gate.log"
  grep -E "^(FAILED|ERROR)" "$W/gate.log" | head -10
fi
tar czf "$OUT/all.tgz" -C "$OUT" w && rm -rf "$W"
echo "== done at $((SECONDS - T0)) s"
