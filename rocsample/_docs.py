"""``make docs``: API reference from the docstrings (pdoc), failing on any warning.

Usage: ``python -m rocsample._docs OUTDIR``. The backend modules for hip and cuda are documented
without being loaded: importing them needs no GPU, only their ``load()`` does.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

# "rocsample" brings the submodules its __all__ names (graphs, scratch, set_rows); the rest:
MODULES = [
    "rocsample",
    "rocsample.sampling",
    "rocsample.errors",
    "rocsample.scratch.pool",
    "rocsample.backends",
    "rocsample.backends.base",
    "rocsample.backends.emulated",
    "rocsample.backends.cuda",
    "rocsample.backends.hip",
    "rocsample.reference",
    "rocsample.check",
]


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "docs/api")
    import pdoc
    import pdoc.render

    pdoc.render.configure(docformat="numpy", show_source=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*MODULES, output_directory=out)
    relevant = [w for w in caught if "rocsample" in str(w.filename) or "pdoc" in str(w.filename)]
    for w in relevant:
        print(f"warning: {w.filename}:{w.lineno}: {w.message}", file=sys.stderr)
    n = len(list(out.rglob("*.html")))
    print(f"docs: {n} pages in {out}" + (f", {len(relevant)} warning(s)" if relevant else ", no warnings"))
    return 1 if relevant or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
