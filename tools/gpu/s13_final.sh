#!/usr/bin/env bash
# On the lent H200 (<= 600 s): the thirteenth session's final tree (the C path's timing parts,
# minp_row back to its one round of 4 loads): the device gate, then issue #17's one run: the host
# cases with the process on one CPU (taskset -c 3; s13_second.sh: every unpinned process met a
# slow phase of a few cases on the CPU the scheduler gave it, 10.7-12.9 us, the pinned one none)
# and unpinned beside it, and the decode loop (nine interleaved rounds, FlashInfer 0.7.4).
# Carry .whl and .peers. Output: $OUT/check-report-h200.json (+ .junit.xml), gate.log,
# host-perf.json, host-perf-summary.txt (pinned), host-unpinned.json, decode.json, machine.txt
source tools/gpu/env.sh
use_flashinfer fi074
T0=$SECONDS
source tools/gpu/steps.sh
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; uptime
  for c in 3 15; do echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>&1)"; done
  ps -eLo psr,pcpu,comm --sort=-pcpu | head -8; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
run_gate "${GATE_LIMIT:-300}"
timeout 40 python3 tools/gpu/first_cases_probe.py 1 2>&1 | grep -v Warning | tail -4
HOST_PIN=3 host_bench "${HOST_LIMIT:-70}"
HOST_JSON=host-unpinned.json host_bench "${HOST_LIMIT:-70}"
rm -f "$OUT/host-unpinned-summary.txt"  # (eight files come back: bench/report or host_summary.py remake it)
decode_loop "${DECODE_LIMIT:-100}"
rm -f "$OUT/decode.md"
ps -eLo psr,pcpu,comm --sort=-pcpu | head -5 >> "$OUT/machine.txt"
echo "== done at $((SECONDS - T0)) s"
