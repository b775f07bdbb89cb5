#!/usr/bin/env bash
# On the lent H200: compute-sanitizer memcheck, racecheck and synccheck over the cuda suite, in
# parts, each part under its own time limit; counts (errors, hazards, tests passed) per tool and
# part go to $OUT/sanitize.json and $OUT/sanitize-<tool>-<part>.log. About 9 minutes in all (TOOLS= picks tools, to split it over two device calls).
#
# The parts (chosen so that every kernel of the library runs under every tool at small shapes;
# `python tools/kernel_coverage.py` on a sim run of the same selection shows 50 of 50 kernels):
#   fuzz     tests/fuzz with ROCSAMPLE_FUZZ=sanitize: every public call, every kernel, fixed seed
#   kernels  the error audits, atomics, Sampler capture, the >256-split fold (1024 splits x 64K)
#   graphs   (memcheck only) the 4-site decode graph replayed 825 times, the scratch pool on device
# Left out (too slow under instrumentation, or no kernel of their own): the --run-slow tests
# (10^6-draw frequencies, vocab 2**20, 4096 rows, 64K-row set_rows), the full-size kernel tests
# (vocab 151936), two-device tests (one GPU), bench/, the notebook, the gate's own test.
#
# Time: a plain (unsanitized) run of the same parts first puts every kernel in numba's disk cache
# (NUMBA_CACHE_DIR), so no tool pays the cold JIT: <= 120 s cold, ~40 s when the gate ran just
# before on the same machine; WARM=0 skips it. Then the tools: <= 545 s (their limits below; memcheck 240, racecheck 170, synccheck 135).
#
# Success: every line of the summary reads "errors 0" / "hazards 0" with rc 0; the script exits
# non-zero otherwise. A part that hits its limit is reported "timed out" (its counts up to then).
#
# Legacy form (other scripts): FILES="tests/..." TOOLS="memcheck" LIMIT=150 PYARGS="-k x" runs
# one part named "custom" with those files (warmed first too, unless WARM=0).
source tools/gpu/env.sh
TOOLS=${TOOLS:-memcheck racecheck synccheck}
declare -A PART_ARGS PART_ENV
if [ -n "${FILES:-}" ]; then
  PARTS="custom"
  PART_ARGS[custom]="$FILES ${PYARGS:-}"
  PART_ENV[custom]=""
else
  PARTS=${PARTS:-fuzz kernels graphs}
  PART_ARGS[fuzz]="tests/fuzz"
  PART_ENV[fuzz]="ROCSAMPLE_FUZZ=sanitize"
  PART_ARGS[kernels]="tests/kernels/test_sampling_errors_audit.py tests/kernels/test_set_rows_errors_audit.py \
tests/kernels/test_atomics.py tests/kernels/test_sampler_capture.py \
tests/regress/test_fast_finalize_fold_past_256_splits.py"
  PART_ENV[kernels]=""
  PART_ARGS[graphs]="tests/regress/test_set_rows_graph_reuse.py tests/scratch/test_pool.py"
  PART_ENV[graphs]=""
fi
# seconds per (tool, part)
limit() {
  if [ -n "${LIMIT:-}" ]; then echo "$LIMIT"; return; fi
  case "$1:$2" in
    memcheck:fuzz) echo 150 ;; memcheck:kernels) echo 50 ;; memcheck:graphs) echo 40 ;;
    racecheck:fuzz) echo 110 ;; racecheck:kernels) echo 60 ;;
    synccheck:fuzz) echo 90 ;; synccheck:kernels) echo 45 ;;
    *) echo 0 ;;
  esac
}
rm -f "$OUT/sanitize-runs.txt"
if [ "${WARM:-1}" = 1 ]; then
  echo "== warm-up: the parts on cuda without a sanitizer (fills the JIT cache)"
  start=$(date +%s)
  for part in $PARTS; do
    env ${PART_ENV[$part]} python3 -m pytest ${PART_ARGS[$part]} --backend cuda -q -p no:cacheprovider \
      > "$OUT/sanitize-warmup-$part.log" 2>&1 &
    wait $!
    tail -1 "$OUT/sanitize-warmup-$part.log"
    [ $(( $(date +%s) - start )) -gt 120 ] && { echo "warm-up: past 120 s, going on"; break; }
  done
fi
rc=0
for tool in $TOOLS; do
  for part in $PARTS; do
    lim=$(limit "$tool" "$part")
    [ "$lim" = 0 ] && continue
    log="$OUT/sanitize-$tool-$part.log"
    echo "== compute-sanitizer --tool $tool: $part (limit ${lim}s)"
    start=$(date +%s)
    # memcheck also reports failed driver calls; rocsample's capture probe fails by design (a
    # legacy-stream cuStreamIsCapturing answers STREAM_CAPTURE_IMPLICIT, error 906, while a
    # blocking stream captures: docs/QA.md), so those are not counted (SAN_API_ERRORS=explicit
    # counts them)
    api=(); [ "$tool" = memcheck ] && api=(--report-api-errors "${SAN_API_ERRORS:-no}")
    env ${PART_ENV[$part]} timeout "$lim" compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 99 \
      --print-limit 50 python3 -m pytest ${PART_ARGS[$part]} --backend cuda -q -p no:cacheprovider \
      > "$log" 2>&1
    r=$?
    echo "$tool $part rc=$r seconds=$(( $(date +%s) - start ))" >> "$OUT/sanitize-runs.txt"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$log" | tail -3
    [ $r -ne 0 ] && rc=$r
  done
done
python3 - "$OUT" <<'PY'
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
runs = {}
for line in (out / "sanitize-runs.txt").read_text().splitlines():
    tool, part, r, sec = line.split()
    runs[(tool, part)] = (int(r.split("=")[1]), int(sec.split("=")[1]))
res = {}
for (tool, part), (r, sec) in runs.items():
    text = (out / f"sanitize-{tool}-{part}.log").read_text(errors="replace")
    errors = [int(m) for m in re.findall(r"ERROR SUMMARY: (\d+) error", text)]
    race = re.findall(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
    summary = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    tests = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)",
                                              summary[-1])} if summary else {}
    entry = {"rc": r, "seconds": sec, "timed_out": r in (124, 137),
             "errors": sum(errors) if errors else None,
             "hazards": sum(int(h) for h, _, _ in race) if race else None,
             "tests": tests}
    res.setdefault(tool, {})[part] = entry
    print(f"{tool:10s} {part:8s} rc {r:3d}  {sec:4d} s  errors {entry['errors']}  hazards "
          f"{entry['hazards']}  tests {entry['tests']}{'  TIMED OUT' if entry['timed_out'] else ''}")
(out / "sanitize.json").write_text(json.dumps(res, indent=2) + "\n")
PY
rm -f "$OUT/sanitize-runs.txt"
exit $rc
