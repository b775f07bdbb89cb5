#!/usr/bin/env bash
# On the lent H200 (<= 120 s, most of it the cold JIT of the sampling kernels): issue #12
# defect 7's sampling parts and the set_rows index-vs-non-finite order on cuda, with real torch
# (the regress tests' "real" variants, skipped on this machine without torch): a NumPy out=, a
# NumPy position with advance_position, one-off calls and Sampler() inside a capture, torch CPU
# tensors, Sampler.capture(dtype=), and the audit tests that asserted the old refusals.
# Success: pytest's last line "N passed" with no failure or error, exit 0; the real-torch tests
# must show as passed, not skipped ($OUT/defect7.log has -rs's skip reasons).
source tools/gpu/env.sh
timeout ${LIMIT:-120} python3 -m pytest --backend cuda -q -p no:cacheprovider -rs \
  tests/regress/test_numpy_out_refused_on_gpu_backends.py \
  tests/regress/test_numpy_position_advance_backend_dependent.py \
  tests/regress/test_sampling_inside_a_capture_on_cpu.py \
  tests/regress/test_sampler_capture_dtype_missing.py \
  tests/regress/test_torch_cpu_tensors_backend_dependent.py \
  tests/regress/test_set_rows_unchecked_index_vs_nonfinite.py \
  tests/kernels/test_sampling_errors_audit.py > "$OUT/defect7.log" 2>&1
rc=$?
grep -E "^(FAILED|ERROR|SKIPPED)|passed|failed" "$OUT/defect7.log" | tail -30
exit $rc
