#!/usr/bin/env bash
# The forty-third session's last call (carry .whl; <= 595 s): the device gate (python -m
# rocsample.check --backend cuda, under GLIM, default 330 s; GATE=0: none), then
# compute-sanitizer racecheck alone over the nucleus passes' and the conditional lane's tests
# and the large tile finalize's tau and gather tests (tests/kernels/test_sampling_fast.py: its
# lists, device parameters through it; the outlier row's overflow, tests/regress), at the
# simulator's shapes (ROCSAMPLE_FUZZ=sanitize), after one plain run of them for numba's disk
# cache, in the time left (stopping by STOP, default 585 s). RACE_SKIP (default
# captured_rank_route): the tool's own crash on that conditional node's replay (thirty-fifth
# session). Output: $OUT/gate.log, check-report-h200.json, warm.log, racecheck.log,
# san-summary.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
[ "${GATE:-1}" = 1 ] && run_gate "${GLIM:-330}"   # (GATE=0: racecheck alone)
export ROCSAMPLE_FUZZ=sanitize
FS=(tests/kernels/test_sampling_nucleus.py tests/kernels/test_graph_cond.py
    tests/kernels/test_sampling_fast.py::test_the_gather_kernel_lists_every_token_from_its_least_candidate_up
    tests/kernels/test_sampling_fast.py::test_device_parameters_through_the_large_form
    tests/regress/test_an_outlier_row_overflows_the_gathered_list.py)
PA=("${BH[@]}")
timeout 120 python3 -m pytest "${FS[@]}" "${PA[@]}" > "$OUT/warm.log" 2>&1
echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
left=$((${STOP:-585} - (SECONDS - T0)))
RACE_SKIP=${RACE_SKIP-captured_rank_route} LIMIT=$left san_tool racecheck | tee -a "$OUT/san-summary.txt"
echo "== done at $((SECONDS - T0)) s"
