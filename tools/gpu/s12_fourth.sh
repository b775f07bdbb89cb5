#!/usr/bin/env bash
# On the lent H200 (about 150 s), the twelfth session's fourth call: issue #17's host cases and
# the decode loop (interleaved form, FlashInfer 0.7.4 beside PyTorch's pipeline) in one run on
# one machine, after a warm-up process (tools/gpu/first_cases_probe.py: the numba cache filled,
# and the first process after a machine's start is the slow one, PERF_NOTES "Twelfth session").
# The same rocsample tree as s12_second.sh's gate. Carry .whl and .peers.
# Output: $OUT/probe.txt, host-perf.json, host-perf-summary.txt, decode.json, decode.md
source tools/gpu/env.sh
use_flashinfer fi074
source tools/gpu/steps.sh
banner
T0=$SECONDS
timeout 60 python3 tools/gpu/first_cases_probe.py 1 2>&1 | grep -v Warning | tee "$OUT/probe.txt"
host_bench "${HOST_LIMIT:-80}"
decode_loop "${DECODE_LIMIT:-100}"
echo "== done at $((SECONDS - T0)) s"
