#!/usr/bin/env bash
# On the lent H200: compute-sanitizer memcheck / racecheck / synccheck over the kernel tests.
source tools/gpu/env.sh
files=${FILES:-"tests/kernels/test_sampling.py tests/kernels/test_set_rows.py"}
rc=0
for tool in ${TOOLS:-memcheck racecheck synccheck}; do
  echo "== compute-sanitizer --tool $tool"
  timeout ${LIMIT:-170} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
    python3 -m pytest $files --backend cuda -q -p no:cacheprovider -x ${PYARGS:-} \
    > "$OUT/sanitize-$tool.log" 2>&1
  r=$?
  tail -5 "$OUT/sanitize-$tool.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race reported" "$OUT/sanitize-$tool.log" | sort | uniq -c | head
  echo "exit $r"
  [ $r -ne 0 ] && rc=$r
done
exit $rc
