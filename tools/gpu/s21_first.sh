#!/usr/bin/env bash
# On the lent H200 (<= 600 s; carry .whl), the twenty-first session's first call: the histogram
# lane as a conditional node of captured graphs (rocsample.kernels.graph_cond,
# GpuBackend.conditional), run on that session's first form of it (the lane conditional at every
# batch size and on the nucleus routes too, the driver call inside phase 1; BENCHMARKS.md has
# its figures). On the landed tree the same script times the landed form.
#   1. tools/gpu/cond_probe.py: the synthetic feasibility and cost probe (cond.log);
#   2. the cuda tests of what the change touches (cuda-tests.log);
#   3. graph-timed, kprofile.py's chain_dev, top_p alone and the chain with the lane as a
#      conditional node where routed ("cond") and with ROCSAMPLE_CONDITIONAL=0 ("plain"),
#      PASSES passes. (The call also ran dev_probe.py variants with stream and node priorities,
#      which swapped phase 1 off the capture's stream and failed; they are not kept.)
# Output: $OUT/ab.txt ("VARIANT GRAPH mode shape gpu_us=N"), *.log
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
timeout 120 python3 tools/gpu/cond_probe.py > "$OUT/cond.log" 2>&1
echo "== cond_probe rc=$? at $((SECONDS - T0)) s"
grep -E "COND|Error" "$OUT/cond.log" | head -12
timeout "${TLIM:-300}" python3 -m pytest "${BH[@]}" -x tests/kernels/test_graph_cond.py \
  tests/kernels/test_sampler_branches.py tests/kernels/test_sampling_nucleus.py \
  tests/kernels/test_sampler_capture.py \
  tests/regress/test_rows_left_by_the_nucleus_pass_took_the_drawing_splits.py \
  tests/backends/test_bound_fast_path.py tests/test_binder.py > "$OUT/cuda-tests.log" 2>&1
echo "== cuda tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/cuda-tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/cuda-tests.log" | head -10
SH=1x32000,64x32000,1x151936,64x151936
for pass in $(seq "${PASSES:-1}"); do
  for v in cond plain; do
    c=1; [ "$v" = plain ] && c=0
    ROCSAMPLE_CONDITIONAL=$c timeout 200 python3 tools/gpu/kprofile.py --graph --chain_dev \
      --topp_alone --chain --shapes $SH > "$OUT/kp-$v-$pass.log" 2>&1
    echo "== kprofile $v rc=$? at $((SECONDS - T0)) s"
    graph_lines "p$pass-$v" < "$OUT/kp-$v-$pass.log" > /dev/null
  done
done
cat "$OUT/ab.txt"
grep -E "Error|error" "$OUT"/kp-*.log | grep -v Warning | head -5
echo "== all done at $((SECONDS - T0)) s"
