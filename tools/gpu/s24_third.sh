#!/usr/bin/env bash
# The twenty-fourth session's last call (carry .whl; about 200 s): the misaligned-logits check
# (tests/regress/test_misaligned_logits_reached_the_kernels.py, which makes the misaligned
# array itself on cuda) with the binder and one-off tests beside it, then the host cases
# (bench/test_host_overhead.py's torch cases, pinned to CPU 3), since the check runs in every
# call served in Python. Output: $OUT/tests.log, host-perf.json, host-perf-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
timeout 240 python3 -m pytest "${BH[@]}" tests/regress/test_misaligned_logits_reached_the_kernels.py \
  tests/test_binder.py tests/kernels/test_argmax_kernel.py -rs > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head
HOST_PIN=${HOST_PIN:-3} host_bench 120
echo "== done at $((SECONDS - T0)) s"
