"""Mutation score of the last ``mutmut run``; exits 1 below the threshold (``make mutate``).

Reads ``mutmut results --all true`` (one ``name: status`` line per mutant), prints the counts and
every mutant that was not killed. Score = killed / all mutants; "no tests", "timeout",
"suspicious" and "not checked" count against it, like "survived".

    python tools/mutation_score.py [--min 90]
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys

_KILLED = {"killed", "caught by type check"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=float, default=90.0, help="lowest passing score, in percent")
    args = ap.parse_args(argv)
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        capture_output=True, text=True, check=True,
    ).stdout
    status: dict[str, str] = {}
    for line in out.splitlines():
        name, sep, st = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            status[name] = st
    if not status:
        print("mutation score: no mutants found; run `mutmut run` first", file=sys.stderr)
        return 1
    counts = collections.Counter(status.values())
    killed = sum(counts[s] for s in _KILLED)
    total = len(status)
    score = 100.0 * killed / total
    for name in sorted(n for n, s in status.items() if s not in _KILLED):
        print(f"  {status[name]:>10}  {name}")
    detail = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"mutation score: {killed}/{total} killed = {score:.1f}% ({detail}); required >= {args.min:g}%")
    return 0 if score >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
