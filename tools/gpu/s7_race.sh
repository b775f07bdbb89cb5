#!/usr/bin/env bash
# On the lent H200 (<= 400 s): racecheck (then memcheck and synccheck) over the tile finalize's
# large form and the fast draw's tests at the sanitize profile's shapes (ROCSAMPLE_FUZZ=sanitize:
# the large form at 2 x 4096, top_k 300, forced), then issue #17's host figures again on this
# machine with the parts split (tools/host_harness.py's sampler cases over the no-op driver: this
# host's Python speed; tools/gpu/host_calib.py; bench/test_host_overhead.py's Sampler cases).
# Carry .whl. Output: $OUT/san/, harness-h200.txt, host-calib.txt, host2.json, host2-summary.txt
source tools/gpu/env.sh
T0=$SECONDS
mkdir -p "$OUT/san"
F=tests/kernels/test_sampling_fast.py
# (WARM=1: sanitize.sh's plain run first fills numba's disk cache, so no tool pays the cold JIT)
ROCSAMPLE_FUZZ=sanitize OUT=$OUT/san FILES="$F::test_large_form_past_the_small_limit $F::test_fast_pass_draws_the_reference_tokens $F::test_drawing_near_ties_fall_back_to_the_exact_draw" \
  TOOLS="racecheck memcheck synccheck" LIMIT=${SAN_LIMIT:-120} WARM=1 bash tools/gpu/sanitize.sh > "$OUT/san/san.out" 2>&1
echo "== sanitize rc=$? at $((SECONDS - T0)) s"; grep -E "custom" "$OUT/san/san.out" | tail -4
timeout 60 python3 tools/host_harness.py -n 1000 -k sampler 2>&1 | tee "$OUT/harness-h200.txt" | tail -8
timeout 60 python3 tools/gpu/host_calib.py 2>&1 | grep -v Warning | tee "$OUT/host-calib.txt" | tail -25
timeout 90 python3 -m pytest bench/test_host_overhead.py --backend cuda -q -p no:cacheprovider \
  -k "torch and (sampler or peer)" --benchmark-json="$OUT/host2.json" > "$OUT/host2.log" 2>&1
echo "== host rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/host2.log")"
python3 tools/gpu/host_summary.py "$OUT/host2.json" | tee "$OUT/host2-summary.txt"
