#!/usr/bin/env bash
# On the lent H200, the call after tools/gpu/final_a.sh (<= 600 s): the benchmarks, alone on the
# GPU. Carry .whl and .peers.
#   1. tools/gpu/bench.sh with STEPS (default "s1 s2 s3": sampling at the quick shapes with
#      PyTorch and both FlashInfers, the decode loop, set_rows with ggml and torch, host overhead,
#      warm start; <= 380 s); STEPS="s4 s5" is the next call (the other ten sampling shapes,
#      <= 260 s)
#   2. tools/gpu/host_calib.py: the parts of a repeated call on the real driver and torch (<= 60 s;
#      only with s3), and tools/gpu/host_probe.py: a graph launch against the kernel launches it
#      replaces, cProfiles of the one-off calls (<= 90 s; only with s3)
# Everything lands in $OUT (bench.sh's files, host-calib.txt).
source tools/gpu/env.sh
STEPS=${STEPS:-s1 s2 s3} bash tools/gpu/bench.sh
case " ${STEPS:-s1 s2 s3} " in
  *" s3 "*) mkdir -p /tmp/calib; OUT=/tmp/calib timeout 60 python3 tools/gpu/host_calib.py 2>&1 | grep -v NumbaPerformanceWarning \
              > "$OUT/host-calib.txt"; echo "CALIB rc=${PIPESTATUS[0]}"; tail -14 "$OUT/host-calib.txt"
            mkdir -p /tmp/calib; OUT=/tmp/calib timeout 90 python3 tools/gpu/host_probe.py 2>&1 | grep -v NumbaPerformanceWarning \
              > "$OUT/host-probe.txt"; echo "PROBE rc=${PIPESTATUS[0]}"
            grep -E "^ +[0-9.]+ us" "$OUT/host-probe.txt" | head -30 ;;
esac
