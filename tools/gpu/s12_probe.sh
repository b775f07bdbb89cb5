#!/usr/bin/env bash
# On the lent H200 (about 150 s), the twelfth session's first call: issue #17's two open host
# questions on a fresh machine, before any other process has used the GPU:
# tools/gpu/first_cases_probe.py (are the host run's slow first cases the process's first
# calls?) and tools/gpu/oneoff_streams_probe.py (one-off sample on a side stream against the
# legacy default one; where a new address's call goes, by cProfile). Carry .whl.
# Output: $OUT/probe.txt
source tools/gpu/env.sh
source tools/gpu/steps.sh
banner
T0=$SECONDS
echo "== first cases on the fresh machine" | tee "$OUT/probe.txt"
timeout 200 python3 tools/gpu/first_cases_probe.py 3 2>&1 | tee -a "$OUT/probe.txt"
echo "== one-off cases at $((SECONDS - T0)) s" | tee -a "$OUT/probe.txt"
timeout 150 python3 tools/gpu/oneoff_streams_probe.py 2 2>&1 | tee -a "$OUT/probe.txt"
echo "== first cases again, a second process, at $((SECONDS - T0)) s" | tee -a "$OUT/probe.txt"
timeout 60 python3 tools/gpu/first_cases_probe.py 1 2>&1 | tee -a "$OUT/probe.txt"
echo "== done at $((SECONDS - T0)) s"
