#!/usr/bin/env bash
# On the lent H200 (<= 600 s), the twelfth session's second call: the gate on the tree with the
# C path's re-point, the one-off outputs' blocks and the MINP kernel's cleanup; then issue #17's
# figures on the same machine: the one-off probe (blocks of 16 calls against each call's own
# outputs, where the C path's time goes), the first cases, the host benchmark's torch cases
# (served counts) and the decode loop with FlashInfer 0.7.4 beside PyTorch's pipeline.
# Carry .whl and .peers. Output: $OUT/check-report-h200.json, gate.log, probe.txt,
# host-perf.json, host-perf-summary.txt, decode.json, decode.md
source tools/gpu/env.sh
use_flashinfer fi074
source tools/gpu/steps.sh
banner
T0=$SECONDS
run_gate "${GATE_LIMIT:-330}"
echo "== one-off probe at $((SECONDS - T0)) s" | tee "$OUT/probe.txt"
timeout 60 python3 tools/gpu/oneoff_streams_probe.py 1 2>&1 | grep -v Warning | tee -a "$OUT/probe.txt"
echo "== first cases at $((SECONDS - T0)) s" | tee -a "$OUT/probe.txt"
timeout 30 python3 tools/gpu/first_cases_probe.py 1 2>&1 | grep -v Warning | tee -a "$OUT/probe.txt"
host_bench "${HOST_LIMIT:-90}"
decode_loop "${DECODE_LIMIT:-80}"
echo "== done at $((SECONDS - T0)) s"
