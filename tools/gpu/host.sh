#!/usr/bin/env bash
# On the lent H200: the host-path work of issue #17 (+ #12 defect 2).
#   1. the new regression tests on cuda (torch.cuda.graph both modes, raw capture, torch current
#      stream, CuPy, DLPack, the binder's re-pointing, the one-off thread race)
#   2. the host-overhead benchmark, fresh torch tensors vs the same object, with torch peers
# Usage (repo root, on the GPU machine): bash tools/gpu/host.sh
# Budget: ~180 s with a cold numba cache (about 20 kernels compile, 3-5 s each), ~90 s warm
# (after gate.sh in the same machine session: NUMBA_CACHE_DIR=/tmp/numba-cache is shared).
# Success: "HOST TESTS rc=0" (junit in $OUT/host-tests.xml: 0 failures, 0 skips but cpu-only
# ones) and $OUT/host.json + $OUT/host-summary.txt (host_us_median per case; targets: Sampler
# <= 10 us fresh and same, one-off <= 30 us, set_rows <= 10 us).
source tools/gpu/env.sh
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
timeout 300 python3 -m pytest --backend cuda -q -p no:cacheprovider -rfEs \
  --junitxml="$OUT/host-tests.xml" \
  tests/regress/test_set_rows_inside_a_torch_graph_invalidated_it.py \
  tests/regress/test_torch_inputs_ran_on_the_default_stream.py \
  tests/regress/test_foreign_capture_unseen_by_the_global_probe.py \
  tests/regress/test_one_off_calls_share_output_buffers.py \
  tests/test_binder.py tests/kernels/test_sampler_capture.py \
  tests/regress/test_captured_graph_keeps_parameter_copies.py \
  "tests/kernels/test_set_rows_fused.py::test_repeated_unchecked_calls_reuse_one_bound_launch" \
  2>&1 | grep -v NumbaPerformanceWarning | tee "$OUT/host-tests.log" | tail -40
rc=${PIPESTATUS[0]}
echo "HOST TESTS rc=$rc"
timeout 300 python3 -m pytest bench/test_host_overhead.py --backend cuda -q -p no:cacheprovider \
  --benchmark-json="$OUT/host.json" 2>&1 | grep -v NumbaPerformanceWarning \
  | tee "$OUT/host-bench.log" | tail -15
brc=${PIPESTATUS[0]}
echo "HOST BENCH rc=$brc"
python3 - "$OUT/host.json" <<'PY' | tee "$OUT/host-summary.txt"
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
for b in sorted(rows, key=lambda b: b["name"]):
    e = b["extra_info"]
    t = e.get("target_us")
    mark = "" if t is None else ("  MET" if e["host_us_median"] <= t else f"  MISSED (<= {t})")
    print(f"{e['host_us_median']:8.1f} us  {e.get('impl', b['name'])} {e.get('shape', '')}{mark}")
    if e.get("args"):
        print(f"             args: {e['args']}")
PY
exit $((rc || brc))
