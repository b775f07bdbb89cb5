#!/usr/bin/env bash
# On the lent GPU: ncu's speed-of-light, occupancy, launch, warp-state, scheduler and instruction
# sections of the kernels whose name matches KERNELS (a regex; default the histogram path's) in
# tools/gpu/kprofile.py's run of the given modes and shapes (same arguments), with each stall
# reason's warps per issued instruction (smsp__average_warps_issue_stalled_*) and each pipe's
# share of its peak (sm__inst_executed_pipe_*; first in the thirty-ninth session's script, not
# yet run). About 60-120 s.
# Usage: KERNELS='hist|select' bash tools/gpu/kdetail.sh --minp --topp_alone --shapes 64x151936
# (COUNT: how many matching launches, default 6; KD: the output's name, default kdetail)
# Output: $OUT/$KD.txt (ncu's whole report), the lines that matter printed
source tools/gpu/env.sh
kd=${KD:-kdetail}
python3 tools/gpu/kprofile.py "$@" > /dev/null 2>&1   # JIT warm-up into the disk cache
args=("$@")
prof() {  # METRICS_REGEX: ncu over kprofile.py with the script's arguments -> $OUT/$kd.txt
  ncu --clock-control none -k "regex:${KERNELS:-_sample_hist_kernel|_sample_select_kernel}" \
    --launch-count "${COUNT:-6}" --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    --section InstructionStats --metrics "regex:$1" \
    python3 tools/gpu/kprofile.py "${args[@]}" > "$OUT/$kd.txt" 2>&1
}
stalls='smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
pipes='sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active'
# (the stall regex alone ran in the thirty-ninth session; the alternation with the pipes' has
# not: should ncu refuse it, the stall regex alone again)
prof "($stalls|$pipes)"
if grep -q "==ERROR==" "$OUT/$kd.txt"; then
  grep "==ERROR==" "$OUT/$kd.txt" | head -3
  prof "$stalls"
fi
grep -E "MARK|_kernel|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issued Ipc|Issue Slots Busy|Executed Instructions  |No Eligible|One or More Eligible|Eligible Warps|Waves Per SM|L1/TEX Hit|L2 Hit|Dynamic Shared" "$OUT/$kd.txt" | sed 's/  */ /g' | head -120
# the stall reasons above 0.3 warps an issue, and the pipes above 5% of their peak, per kernel
awk '/_kernel/ {print} /issue_stalled/ && $NF+0 > 0.3 {print "   ", $1, $NF}
     /inst_executed_pipe_/ && $NF+0 > 5 {print "   ", $1, $NF}' "$OUT/$kd.txt" | head -100
