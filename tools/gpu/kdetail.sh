#!/usr/bin/env bash
# On the lent H200: ncu's speed-of-light, occupancy, launch and warp-state sections of the kernels
# whose name matches KERNELS (a regex; default the histogram path's) in tools/gpu/kprofile.py's
# run of the given modes and shapes (same arguments). About 60-90 s.
# Usage: KERNELS='hist|select' bash tools/gpu/kdetail.sh --minp --topp_alone --shapes 64x151936
source tools/gpu/env.sh
python3 tools/gpu/kprofile.py "$@" > /dev/null 2>&1   # JIT warm-up into the disk cache
ncu --clock-control none -k "regex:${KERNELS:-_sample_hist_kernel|_sample_select_kernel}" \
  --launch-count "${COUNT:-6}" --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section MemoryWorkloadAnalysis \
  python3 tools/gpu/kprofile.py "$@" > "$OUT/kdetail.txt" 2>&1
grep -E "MARK|_kernel|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issued Ipc|Waves Per SM|L1/TEX Hit|L2 Hit|Shared Memory Configuration Size|Dynamic Shared|Static Shared" "$OUT/kdetail.txt" | sed 's/  */ /g' | head -150
