"""Where a profiled kernel's warp-stall samples fall, from ncu's source page exported as CSV
(``ncu -i REPORT.ncu-rep --page source --csv --print-source sass`` or ``cuda``; the report
collected with ``--section SourceCounters``). ncu's column names differ between versions, so the
columns are found by words in their names: the source text ("Source"), the samples ("Sampling"
and "All", else the first "Sampling" column) and "Instructions Executed" where present. Prints
the total, the samples summed by the source text's first word (for SASS: the opcode family, e.g.
BAR, MEMBAR, LDG, MUFU; predicates dropped) and the TOP rows by samples. A file it cannot read
that way: its first lines, so the raw CSV still says what went wrong. Usage:
``python3 tools/gpu/ncu_source.py CSV [TOP]`` (BENCHMARKS.md, the fifty-second session: the
exported SASS view has the samples; the Python-line view came without them)."""

import csv
import sys
from collections import Counter


def _num(s: str) -> float:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def _col(head: list, *words: str):
    for i, name in enumerate(head):
        low = name.lower()
        if all(w in low for w in words):
            return i
    return None


def opcode(text: str) -> str:
    """The first word of a SASS line without its predicate and modifiers: '@!P0 BAR.SYNC.DEFER_BLOCKING
    0x0' -> 'BAR'; a source line's own first word otherwise."""
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "(empty)"


def summarize(lines: list, top: int = 30) -> list:
    rows = list(csv.reader(ln for ln in lines if ln.startswith('"')))
    if not rows:
        return ["no CSV rows; the file begins:"] + [ln.rstrip() for ln in lines[:8]]
    # the header: the first row naming a Source column (a report can put rows before it)
    at = next((i for i, r in enumerate(rows) if _col(r, "source") is not None), 0)
    head, rows = rows[at], rows[at:]
    src = _col(head, "source")
    smp = _col(head, "sampling", "all")
    if smp is None:
        smp = _col(head, "sampling")
    ins = _col(head, "instructions executed")
    adr = _col(head, "address")
    if src is None or smp is None:
        return ["columns not found (want Source and a Sampling column); header:", ", ".join(head)]
    body = [r for r in rows[1:] if len(r) > max(src, smp)]
    total = sum(_num(r[smp]) for r in body)
    out = [f"columns: source={head[src]!r} samples={head[smp]!r}"
           + (f" executed={head[ins]!r}" if ins is not None else ""),
           f"rows {len(body)}, samples {total:.0f}"]
    by_op = Counter()
    for r in body:
        by_op[opcode(r[src])] += _num(r[smp])
    out.append("by first word: " + ", ".join(
        f"{k} {v:.0f} ({100 * v / total:.1f}%)" for k, v in by_op.most_common(16) if total))
    out.append(f"top {top} rows by samples:")
    for r in sorted(body, key=lambda r: -_num(r[smp]))[:top]:
        pct = 100 * _num(r[smp]) / total if total else 0.0
        ex = f" exec {r[ins]}" if ins is not None and len(r) > ins else ""
        at = f"{r[adr]} " if adr is not None and len(r) > adr else ""
        out.append(f"  {pct:5.1f}% {_num(r[smp]):8.0f}{ex} | {at}{r[src].strip()[:110]}")
    return out


if __name__ == "__main__":
    print("\n".join(summarize(open(sys.argv[1]).readlines(),
                              int(sys.argv[2]) if len(sys.argv) > 2 else 30)))
