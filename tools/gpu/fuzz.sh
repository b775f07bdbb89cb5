#!/usr/bin/env bash
# On the lent H200 (<= 300 s): the fuzz suite's long profile against cuda: random seed,
# ROCSAMPLE_FUZZ_EXAMPLES (default 5) times the ci counts, shapes up to 32 x 70000 logits and
# 512-row set_rows, every example checked against the reference and a cpu twin in the same
# process (tests/fuzz); at LIMIT pytest is interrupted (SIGINT) and still prints its failures. Success: pytest's last line "N passed" with no failure, exit 0.
# $OUT/fuzz.jsonl has one line per example; $OUT/fuzz-summary.json the counts per test and
# outcome. A failure prints hypothesis' falsifying example and its @reproduce_failure blob.
source tools/gpu/env.sh
export ROCSAMPLE_FUZZ=long ROCSAMPLE_FUZZ_EXAMPLES=${ROCSAMPLE_FUZZ_EXAMPLES:-5} \
  ROCSAMPLE_FUZZ_LOG="$OUT/fuzz.jsonl"
rm -f "$ROCSAMPLE_FUZZ_LOG"
timeout -s INT -k 15 ${LIMIT:-300} python3 -m pytest tests/fuzz --backend cuda -q -p no:cacheprovider \
  -rfE --durations=10 > "$OUT/fuzz.log" 2>&1
rc=$?
grep -v "^\s*|\s*$" "$OUT/fuzz.log" | grep -E "^E  |passed|failed|s call|reproduce_failure" | head -60
python3 - "$OUT" <<'PY'
import collections, json, pathlib, sys
out = pathlib.Path(sys.argv[1])
p = out / "fuzz.jsonl"
rows = [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []
c = collections.Counter((r["test"], r["outcome"]) for r in rows)
summary = {"examples": len(rows), "by_test_outcome": {f"{t}: {o}": n for (t, o), n in sorted(c.items())}}
(out / "fuzz-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(f"fuzz: {len(rows)} examples logged")
PY
exit $rc
