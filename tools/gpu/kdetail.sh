#!/usr/bin/env bash
# On the lent GPU: ncu's speed-of-light, occupancy, launch, warp-state, scheduler and instruction
# sections of the kernels whose name matches KERNELS (a regex; default the histogram path's) in
# tools/gpu/kprofile.py's run of the given modes and shapes (same arguments), with each stall
# reason's warps per issued instruction (smsp__average_warps_issue_stalled_*). About 60-120 s.
# Usage: KERNELS='hist|select' bash tools/gpu/kdetail.sh --minp --topp_alone --shapes 64x151936
# (COUNT: how many matching launches, default 6; KD: the output's name, default kdetail)
# Output: $OUT/$KD.txt (ncu's whole report), the lines that matter printed
source tools/gpu/env.sh
kd=${KD:-kdetail}
python3 tools/gpu/kprofile.py "$@" > /dev/null 2>&1   # JIT warm-up into the disk cache
ncu --clock-control none -k "regex:${KERNELS:-_sample_hist_kernel|_sample_select_kernel}" \
  --launch-count "${COUNT:-6}" --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  --section InstructionStats \
  --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
  python3 tools/gpu/kprofile.py "$@" > "$OUT/$kd.txt" 2>&1
grep -E "MARK|_kernel|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issued Ipc|Issue Slots Busy|Executed Instructions  |No Eligible|One or More Eligible|Eligible Warps|Waves Per SM|L1/TEX Hit|L2 Hit|Dynamic Shared" "$OUT/$kd.txt" | sed 's/  */ /g' | head -120
# the stall reasons above 0.3 warps an issue, per kernel
awk '/_kernel/ {print} /issue_stalled/ && $NF+0 > 0.3 {print "   ", $1, $NF}' "$OUT/$kd.txt" | head -80
