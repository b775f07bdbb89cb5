#!/usr/bin/env bash
# The twenty-fourth session's check of its final tree (carry .whl; about 150 s): the argmax
# kernel's cuda tests (the half-precision rows at any alignment are new since the gate) and the
# touched regress tests, then bench/test_sampling.py's greedy at the twelve shapes with
# torch.argmax beside it (blocks of 256 at every shape now). Output: $OUT/tests.log, greedy.json
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
timeout 200 python3 -m pytest "${BH[@]}" tests/kernels/test_argmax_kernel.py tests/kernels/test_vload.py \
  tests/regress/test_argmax_kernel_missing_from_the_kernel_record.py \
  tests/regress/test_row_counters_shared_by_two_split_counts.py -rs > "$OUT/tests.log" 2>&1
echo "== tests rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head
greedy_bench "${BENCH_LIMIT:-100}"
echo "== done at $((SECONDS - T0)) s"
