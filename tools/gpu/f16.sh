#!/usr/bin/env bash
# On the lent H200 (repo root): float16 logits on cuda after they became uint16 bits + the f16
# kernels (issue #14). The float16 sampling tests (tile path, histogram path, draw-only), the
# regression file (uint16 reaches the kernels; special values vs the reference; all 65536
# widenings bit-exact against NumPy) and the dtype tests.
#   bash tools/gpu/f16.sh        (~90 s: the f16 kernels compile cold, ~13 of them)
# Success: "N passed" with no failed/error line, exit 0, in $OUT/f16.log (the gfx1151 compile
# test there skips: "cpu-only: needs the offline AMD toolchain").
source tools/gpu/env.sh
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
timeout 240 python3 -m pytest --backend cuda -q -p no:cacheprovider -rfEs \
  tests/regress/test_float16_logits_unsupported_by_numba_hip.py \
  tests/regress/test_sampling_dtype_argument_ignored.py \
  "tests/kernels/test_sampling.py::test_half_precision_logits" > "$OUT/f16.log" 2>&1
rc=$?
tail -15 "$OUT/f16.log"
exit $rc
