#!/usr/bin/env bash
# The twenty-fourth session's probe of one-block rows (carry the numpy wheel; about 60 s):
# tools/gpu/narrow_probe.py at the four 32000-wide shapes, the package's temperature and top_p
# alone in the same process. Output: $OUT/narrow-probe.jsonl
set -u
source tools/gpu/env.sh
T0=$SECONDS
timeout -s INT -k 10 "${PLIM:-200}" python3 tools/gpu/narrow_probe.py > "$OUT/narrow-probe.jsonl" 2> "$OUT/narrow-probe.err"
echo "== probe rc=$? at $((SECONDS - T0)) s"
tail -5 "$OUT/narrow-probe.err"
grep -v '^{' "$OUT/narrow-probe.jsonl"
