#!/usr/bin/env bash
# On the lent H200 (about 150 s): the host figures (issue #17) first thing on a fresh machine,
# and the decode loop with FlashInfer 0.7.4 (carried in .peers/fi074) beside PyTorch's pipeline.
# Carry .whl and .peers. Written for the eleventh session's last call, which was refused (no
# device time left): not yet run.
# Output: $OUT/host-perf.json, host-perf-summary.txt, decode.json, decode.md
source tools/gpu/env.sh
use_flashinfer fi074
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import rocsample._fastcall as f; print('fastcall built:', f.__file__)" || cat /tmp/fastcall-build.log
T0=$SECONDS
BH=(--backend cuda -q -p no:cacheprovider)
timeout -s INT ${HOST_LIMIT:-75} python3 -m pytest bench/test_host_overhead.py "${BH[@]}" \
  -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
  --benchmark-json="$OUT/host-perf.json" > /tmp/host-bench.log 2>&1
echo "== host bench rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/host-bench.log)"
python3 tools/gpu/host_summary.py "$OUT/host-perf.json" | tee "$OUT/host-perf-summary.txt"
timeout -s INT ${DECODE_LIMIT:-70} python3 -m pytest bench/test_decode_loop.py "${BH[@]}" -rs \
  --benchmark-json="$OUT/decode.json" > /tmp/decode.log 2>&1
echo "== decode loop rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/decode.log)"
grep SKIPPED /tmp/decode.log | head -3
python3 -m bench.report "$OUT/decode.json" 2>/dev/null | grep -A20 "^### Decode loop" | tee "$OUT/decode.md"
echo "== done at $((SECONDS - T0)) s"
