# Sourced by the device scripts (after tools/gpu/env.sh; the steps but banner need T0 set): the
# steps they share, each a function writing into $OUT, and BH, the cuda pytest arguments.
#   banner               the GPU (name, driver, clocks) and whether rocsample._fastcall is built
#   run_gate [LIMIT]     python -m rocsample.check --backend cuda -> check-report-h200.json,
#                        gate.log (prints the verdict and any failure)
#   host_bench [LIMIT]   bench/test_host_overhead.py's torch cases (HOST_K selects; HOST_PIN=CPU
#                        runs the process on that CPU alone, taskset -c) -> HOST_JSON
#                        (host-perf.json), its summary beside it (.json -> -summary.txt; prints
#                        the met count and misses)
#   decode_loop [LIMIT]  bench/test_decode_loop.py (every sampler importable) -> decode.json,
#                        decode.md (the report's "Decode loop" table)
#   graph_lines VARIANT  kprofile.py --graph's lines on stdin as "VARIANT GRAPH mode shape
#                        gpu_us=N", printed and appended to $OUT/ab.txt
#   copy_tree DIR, tree_path DIR  a copy of this tree's rocsample, tools and bench at DIR; this
#                        PYTHONPATH pointed there (the two alternative-tree steps below use them)
#   alt_tree NAME FILE   /tmp/t-NAME: this tree's rocsample, tools and bench with FILE as
#                        rocsample/kernels/sampling_hist.py (an alternative kernel file, carried
#                        untracked in tools/gpu/probe)
#   base_tree REV NAME...  /tmp/base: this tree's rocsample, tools and bench, each
#                        rocsample/kernels/NAME.py replaced by $BASE_DIR/NAME_REV.py (default
#                        tools/gpu/probe; made by `git show REV:rocsample/kernels/NAME.py`,
#                        carried untracked); sets BASE_PYTHONPATH (PYTHONPATH pointed there)
#   rev_tree REV         /tmp/base: this tree's tools and bench with .alt/REV's rocsample (made by
#                        `git archive REV rocsample | tar -x -C .alt/REV`, carried); sets
#                        BASE_PYTHONPATH
#   kp_tree LIMIT new|base ARGS  tools/gpu/kprofile.py ARGS under LIMIT in this tree or rev_tree's
#                        /tmp/base, each with its own numba cache (/tmp/nc-new, /tmp/nc-base)
#   kp_var NAME [VAR=VALUE ...] -- ARGS  tools/gpu/kprofile.py ARGS in this tree under KLIM
#                        with those variables set and its own numba cache (/tmp/nc-NAME)
#   kp_warm ARGS         kp_tree 200 new|base ARGS in parallel (numba's disk caches), then
#                        their last lines
#   kp_ab LIMIT MODE SHAPES  kp_tree LIMIT new, then base: --graph --MODE --shapes SHAPES, each
#                        through graph_lines (VARIANT new / base)
#   greedy_bench [LIMIT] bench/test_sampling.py's greedy at the twelve shapes with torch.argmax
#                        beside it, graph-timed -> greedy.json, greedy.log (prints its table)
#   sanitizers           compute-sanitizer memcheck, racecheck and synccheck over pytest with the
#                        caller's FS (files) and PA (arguments) arrays, each under LIMIT (default
#                        90 s), after one warm run without a sanitizer (numba's disk cache) ->
#                        warm.log, {memcheck,racecheck,synccheck}.log, san-summary.txt
#                        (SAN_PAR=1: the three tools at once, each under LIMIT: instrumented
#                        runs are bound by the host's CPU, and the machine has 16 cores;
#                        RACE_SKIP: a -k expression racecheck leaves out)
#   race_fine STOP       racecheck over the large form's tests (the FINE layout's among them) at
#                        the simulator's shapes, stopping by STOP s from T0 -> racecheck.log
#   race_probe COND ORDER  tools/gpu/racecheck_probe.py under racecheck -> race-COND-ORDER.log
#                        (prints a summary line and the probe's lines)
#   ncu_sections NAME CSV SUMMARY LIMIT KERNELS -- ARGS  ncu's sections (NCU_SEC; clocks left
#                        alone) of the kernels matching KERNELS over kprofile.py ARGS under LIMIT
#                        -> CSV, then its lines by tools/gpu/ncu_sections.py, appended to SUMMARY
BH=(--backend cuda -q -p no:cacheprovider)
# the sampling fast path's tests under the sanitizers (s50_san.sh, both modes; with
# ROCSAMPLE_FUZZ=sanitize, the simulator's shapes) and the -k expression of racecheck's subset
FAST_SAN_FS=(tests/kernels/test_sampling_fast.py
             tests/regress/test_an_outlier_row_overflows_the_gathered_list.py)
FAST_RACE_K="tau_counts or gather or fine_tiles or outlier or ties_at_the_kth or overflow_fallback or large"

NCU_SEC=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
         --section SchedulerStats)
ncu_sections() {
  local name=$1 csv=$2 sum=$3 lim=$4 kern=$5
  shift 6
  timeout "$lim" ncu --clock-control none --csv --page details -k "$kern" "${NCU_SEC[@]}" \
    python3 tools/gpu/kprofile.py "$@" 2>/dev/null > "$csv"
  echo "== $name rc=$? at $((SECONDS - T0)) s" | tee -a "$sum"
  python3 tools/gpu/ncu_sections.py "$csv" | tee -a "$sum"
}

sanitizers() {
  local tool
  timeout 120 python3 -m pytest "${FS[@]}" "${PA[@]}" > "$OUT/warm.log" 2>&1
  echo "== warm rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/warm.log")"
  for tool in memcheck racecheck synccheck; do
    if [ "${SAN_PAR:-0}" = 1 ]; then
      san_tool "$tool" > "/tmp/san-$tool.line" &
    else
      san_tool "$tool" | tee -a "$OUT/san-summary.txt"
    fi
  done
  if [ "${SAN_PAR:-0}" = 1 ]; then
    wait
    cat /tmp/san-{memcheck,racecheck,synccheck}.line | tee -a "$OUT/san-summary.txt"
  fi
}

san_reports() {  # LOG: how many reports a compute-sanitizer log holds (a memcheck error, a
  # race or hazard, a barrier error), by their first lines; neither their indented continuation
  # lines ("=========     and Read access ... [4 hazards]") nor the summary lines count
  # ("RACECHECK SUMMARY: 0 hazards displayed" had counted as one: every racecheck read reports=1)
  grep -E "^========= (Invalid|Race|Barrier|Error|Warning|WARN|ERROR:|Potential)" "$1" | grep -vc "SUMMARY"
}

san_tool() {  # TOOL: one sanitizer over FS / PA under LIMIT -> $OUT/TOOL.log, one summary line
  # (RACE_SKIP: a -k expression of tests racecheck leaves out, for the tool's own crash on a
  # conditional node's replay: docs/PERF_NOTES.md, thirty-fifth session)
  local tool=$1 t0=$SECONDS r found api=() sel=()
  [ "$tool" = memcheck ] && api=(--report-api-errors no)
  [ "$tool" = racecheck ] && [ -n "${RACE_SKIP:-}" ] && sel=(-k "not (${RACE_SKIP})")
  timeout "${LIMIT:-90}" compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 99 \
    --print-limit 50 python3 -m pytest "${FS[@]}" "${PA[@]}" "${sel[@]}" > "$OUT/$tool.log" 2>&1
  r=$?
  found=$(san_reports "$OUT/$tool.log")
  echo "$tool rc=$r seconds=$((SECONDS - t0)) reports=$found | $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/$tool.log" | tail -1) | $(grep -E "[0-9]+ (passed|failed)" "$OUT/$tool.log" | tail -1)"
}

race_fine() {  # STOP: compute-sanitizer racecheck over the large form's tests (both layouts;
  # the FINE layout's own) at the simulator's shapes (ROCSAMPLE_FUZZ=sanitize), stopping by
  # STOP seconds from T0; none with 60 s or less left (RACE_K: another -k) -> racecheck.log,
  # san-summary.txt
  local left=$(($1 - (SECONDS - T0)))
  [ "$left" -gt 60 ] || return 0
  FS=(tests/kernels/test_sampling_fast.py tests/regress/test_an_outlier_row_overflows_the_gathered_list.py)
  PA=("${BH[@]}" -k "${RACE_K:-large or gather or outlier or selection or fine_tiles or rank_pass}")
  (export ROCSAMPLE_FUZZ=sanitize; LIMIT=$left san_tool racecheck) | tee -a "$OUT/san-summary.txt"
}

race_probe() {  # COND ORDER: tools/gpu/racecheck_probe.py under compute-sanitizer racecheck
  # (120 s) -> $OUT/race-COND-ORDER.log; prints one summary line, then the probe's own lines
  local log=$OUT/race-$1-$2.log
  timeout 120 env COND="$1" ORDER="$2" compute-sanitizer --tool racecheck --error-exitcode 99 \
    python3 tools/gpu/racecheck_probe.py > "$log" 2>&1
  echo "racecheck probe COND=$1 ORDER=$2 rc=$? at $((SECONDS - T0)) s | $(grep -E "RACECHECK SUMMARY" "$log" | tail -1) | $(grep -cE "^step .* ok$" "$log") replays ok | $(grep -c "PROBE OK" "$log") probe ok"
  grep -E "^(eager|captured|step|PROBE)|Fatal|hazard" "$log" | head -12
}

greedy_bench() {
  timeout -s INT -k 10 "${1:-100}" \
    python3 -m pytest bench/test_sampling.py "${BH[@]}" --bench-drop-data \
    --benchmark-max-time=0.02 --benchmark-min-rounds=5 --bench-shapes=all \
    -k "greedy and (test_rocsample or torch_peer)" --benchmark-json="$OUT/greedy.json" \
    > "$OUT/greedy.log" 2>&1
  echo "== greedy bench rc=$? at $((SECONDS - T0)) s: $(tail -1 "$OUT/greedy.log")"
  python3 -m bench.report "$OUT/greedy.json" 2>&1 | grep -E "greedy|mode" | head -16
}

topp_bench() {
  # bench/test_sampling.py's top_p095 and greedy (BK: another -k) at the twelve shapes
  # (rocsample, PyTorch and the sourced FlashInfer in one process, graph-timed) within ${1:-240}
  # s: $OUT/$BJ.json, $BJ.md (BJ: default bench; its log /tmp/$BJ.log)
  local bj=${BJ:-bench}
  timeout -s INT -k 10 "${1:-240}" python3 -m pytest bench/test_sampling.py "${BH[@]}" \
    --bench-drop-data --benchmark-max-time=0.02 --benchmark-min-rounds=5 --bench-shapes=all \
    -k "${BK:-top_p095 or greedy}" --benchmark-json="$OUT/$bj.json" > "/tmp/$bj.log" 2>&1
  echo "== $bj rc=$? at $((SECONDS - T0)) s: $(tail -1 "/tmp/$bj.log")"
  grep -E "SKIPPED|FAILED|Error" "/tmp/$bj.log" | head -5
  python3 -m bench.report "$OUT/$bj.json" > "$OUT/$bj.md" 2>/dev/null
  grep -E "^\| (top_p095|greedy) " "$OUT/$bj.md" | head -40
}

banner() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c "import rocsample._fastcall as f; print('fastcall built:', f.__file__)" || cat /tmp/fastcall-build.log
}

run_gate() {
  timeout "${1:-300}" python3 -m rocsample.check --backend cuda --report "$OUT/check-report-h200.json" \
    > "$OUT/gate.log" 2>&1
  echo "== gate rc=$? at $((SECONDS - T0)) s"; tail -4 "$OUT/gate.log"
  grep -E "^(FAILED|ERROR)" "$OUT/gate.log" | head -10
}

host_bench() {
  local json=${HOST_JSON:-host-perf.json}
  local sum=$OUT/${json%.json}-summary.txt
  timeout -s INT "${1:-90}" ${HOST_PIN:+taskset -c "$HOST_PIN"} python3 -m pytest \
    bench/test_host_overhead.py "${BH[@]}" \
    -k "${HOST_K:-(sampler_call_torch and not new) or one_off_torch or set_rows_torch or torch_peer}" \
    --benchmark-json="$OUT/$json" > /tmp/host-bench.log 2>&1
  echo "== host bench ($json${HOST_PIN:+, CPU $HOST_PIN}) rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/host-bench.log)"
  python3 tools/gpu/host_summary.py "$OUT/$json" > "$sum"
  echo "met: $(grep -c ' MET ' "$sum")"; grep -E "MISSED" "$sum"
}

graph_lines() {
  grep GRAPH | sed -E "s/gpu_us=\{'gpu_us': ([0-9.]+).*/gpu_us=\1/" | sed "s/^/$1 /" | tee -a "$OUT/ab.txt"
}

copy_tree() {  # DIR: a fresh copy of this tree's rocsample, tools and bench
  rm -rf "$1" && mkdir "$1" && cp -a rocsample tools bench "$1/"
}

tree_path() {  # DIR: this PYTHONPATH with the tree's entries pointed at DIR
  printf %s "$PYTHONPATH" | sed "s#$PWD#$1#g"
}

alt_tree() {
  copy_tree "/tmp/t-$1"
  cp "$2" "/tmp/t-$1/rocsample/kernels/sampling_hist.py"
}

base_tree() {
  local rev=$1 name
  shift
  copy_tree /tmp/base
  for name in "$@"; do
    cp "${BASE_DIR:-tools/gpu/probe}/${name}_$rev.py" "/tmp/base/rocsample/kernels/$name.py"
  done
  BASE_PYTHONPATH=$(tree_path /tmp/base)
}

rev_copy() {  # DIR REV: this tree's tools and bench with the package carried in .alt/REV
  copy_tree "$1" && rm -rf "$1/rocsample" && cp -a ".alt/$2/rocsample" "$1/" \
    && cp rocsample/_fastcall*.so "$1/rocsample/" 2>/dev/null
}

rev_tree() {
  rev_copy /tmp/base "$1"
  BASE_PYTHONPATH=$(tree_path /tmp/base)
}

kp_tree() {
  local lim=$1 v=$2; shift 2
  case $v in
    new) timeout "$lim" env NUMBA_CACHE_DIR=/tmp/nc-new python3 tools/gpu/kprofile.py "$@" ;;
    base) timeout "$lim" env PYTHONPATH="$BASE_PYTHONPATH" NUMBA_CACHE_DIR=/tmp/nc-base \
        python3 /tmp/base/tools/gpu/kprofile.py "$@" ;;
  esac
}

kp_var() {  # NAME [VAR=VALUE ...] -- ARGS: kprofile.py ARGS in this tree under KLIM (default
  # 200 s) with those variables set and its own numba cache, /tmp/nc-NAME (numba's disk cache
  # does not key on the settings). TREE=REV among them: another commit's package instead,
  # .alt/REV/rocsample (carried: mkdir -p .alt/REV && git archive REV rocsample | tar -x -C
  # .alt/REV), in a copy of this tree's tools and bench at /tmp/t-REV
  local name=$1 vars=() tree= root=$PWD
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
      TREE=*) tree=${1#TREE=} ;;
      *) vars+=("$1") ;;
    esac
    shift
  done
  shift
  if [ -n "$tree" ]; then
    root=/tmp/t-$tree
    [ -d "$root/rocsample" ] || rev_copy "$root" "$tree"
    vars+=("PYTHONPATH=$(tree_path "$root")")
  fi
  timeout "${KLIM:-200}" env "${vars[@]}" NUMBA_CACHE_DIR="/tmp/nc-$name" \
    python3 "$root/tools/gpu/kprofile.py" "$@"
}

kp_warm() {
  local v
  for v in new base; do
    ( kp_tree 200 $v "$@" > /tmp/warm-$v.log 2>&1; echo "warm $v rc=$?" >> /tmp/warm-$v.log ) &
  done
  wait
  echo "== compiled at $((SECONDS - T0)) s"; tail -qn1 /tmp/warm-new.log /tmp/warm-base.log
}

kp_ab() {
  local lim=$1 mode=$2 shapes=$3 v
  for v in new base; do
    kp_tree "$lim" $v --graph "--$mode" --shapes "$shapes" 2>&1 | graph_lines $v
  done
}

decode_loop() {
  timeout -s INT "${1:-100}" python3 -m pytest bench/test_decode_loop.py "${BH[@]}" -rs \
    --benchmark-json="$OUT/decode.json" > /tmp/decode.log 2>&1
  echo "== decode loop rc=$? at $((SECONDS - T0)) s: $(tail -1 /tmp/decode.log)"
  grep -E "SKIPPED|FAILED|Error" /tmp/decode.log | head -5
  python3 -m bench.report "$OUT/decode.json" 2>/dev/null | grep -A22 "^### Decode loop" | tee "$OUT/decode.md"
}

# --- variant A/Bs (s35_nu.sh, s45_first.sh): VS (one "VAR=VALUE ..." a variant) and ARGS
# (kprofile.py's) set by the caller
kp_v() {  # I [KLIM]: kprofile with the I-th variant's settings (a pass under PLIM, default
  # 240 s: the forty-second session's pass of 3 modes at 6 shapes, then under a fixed 100 s, was
  # cut after 4 of its 18 cases)
  local -a set
  read -r -a set <<< "${VS[$1]}"
  KLIM=${2:-${PLIM:-240}} kp_var "v$1" "${set[@]}" -- "${ARGS[@]}"
}

ab_compile() {  # every variant compiled in the background (KLIM, default 300 s), a log each;
  # the caller waits
  local i
  for i in "${!VS[@]}"; do
    echo "v$i = ${VS[$i]}" | tee -a "$OUT/ab.txt"
    ( kp_v "$i" "${KLIM:-300}" > "/tmp/warm-$i.log" 2>&1; echo "warm v$i rc=$?" >> "/tmp/warm-$i.log" ) &
  done
}

ab_passes() {  # DEFAULT_STOP: PASSES (default 2) passes of every variant in turn, none started
  # after STOP_BY (default DEFAULT_STOP) seconds from T0, nor where the longest pass so far would
  # end past DEFAULT_STOP (the fifty-seventh session's first call started a 55 s pass at 540 s
  # of its 585 and the run's 600 s limit cut it, with the script's summary) -> $OUT/ab.txt
  local pass i now t1 took longest=0
  echo "== compiled at $((SECONDS - T0)) s"; for i in "${!VS[@]}"; do tail -n1 "/tmp/warm-$i.log"; done
  for pass in $(seq "${PASSES:-2}"); do
    for i in "${!VS[@]}"; do
      now=$((SECONDS - T0))
      if [ "$now" -gt "${STOP_BY:-$1}" ] || [ $((now + longest)) -gt "$1" ]; then
        echo "== stopped before pass $pass of v$i at $now s (STOP_BY ${STOP_BY:-$1} s, or a pass of $longest s ending past $1 s)" | tee -a "$OUT/ab.txt"
        return
      fi
      t1=$SECONDS
      kp_v "$i" 2>&1 | graph_lines "v$i"
      took=$((SECONDS - t1)); [ "$took" -gt "$longest" ] && longest=$took
    done
  done
  echo "== A/B done at $((SECONDS - T0)) s"
}
