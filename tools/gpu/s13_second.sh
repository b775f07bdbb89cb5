#!/usr/bin/env bash
# On the lent H200 (<= 600 s): why bench/test_host_overhead.py's first Sampler cases (the chain
# at 1 x 151936 on the legacy default stream) miss 10 us when a process of their own meets it
# (s13_first.sh: 12.5-12.9 us in the host run, 6.1-6.3 in first_cases_probe.py's process just
# before). The host run as s13_first.sh made it, now with the C path's parts in the idle loop
# (the arguments' reads, the entry match, probe, launch) and the CPU each case ran on; then the
# Sampler's chain cases alone in a new process, and again pinned to one CPU; then the decode loop
# with nine rounds and every round's figure. Carry .whl and .peers.
# Output: $OUT/host-perf.json, host-perf-summary.txt, host-sampler.json, host-pinned.json,
# decode.json, decode.md, machine.txt
source tools/gpu/env.sh
use_flashinfer fi074
T0=$SECONDS
source tools/gpu/steps.sh
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  nproc; grep -m1 "model name" /proc/cpuinfo; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1
  nvidia-smi topo -m 2>&1 | head -4; uptime
  ps -eo pcpu,pid,comm --sort=-pcpu | head -8; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
timeout 40 python3 tools/gpu/first_cases_probe.py 1 2>&1 | grep -v Warning | tail -4
host_bench "${HOST_LIMIT:-80}"
grep "Sampler.__call__ chain" "$OUT/host-perf-summary.txt"
for run in "host-sampler.json" "host-pinned.json 3"; do  # (json name, CPU to pin to)
  set -- $run
  HOST_K="sampler_call_torch and not new and chain" HOST_JSON=$1 HOST_PIN=${2:-} host_bench 45
  cat "$OUT/${1%.json}-summary.txt"; rm -f "$OUT/${1%.json}-summary.txt"  # (eight files come back)
done
decode_loop "${DECODE_LIMIT:-120}"
python3 - "$OUT/decode.json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    e = b["extra_info"]
    for k, v in e.get("samplers", {}).items():
        print(e["batch"], e["mode"], f"{k:18s}", v.get("round_step_us"))
PY
echo "== done at $((SECONDS - T0)) s"
