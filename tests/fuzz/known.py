"""Defects the fuzzer finds that are open on main and owned by another engineer.

Each entry names the defect, where it is tracked, and the inputs that reach it. The strategies
leave those inputs out while the entry is here, so CI stays a statement about everything else;
``ROCSAMPLE_FUZZ_KNOWN=1`` draws them anyway (to see a fix land: the entry must then go).
"""

from __future__ import annotations

import os

INCLUDE_KNOWN = os.environ.get("ROCSAMPLE_FUZZ_KNOWN", "") not in ("", "0")

#: (defect 7's sampling parts, the unchecked index-vs-non-finite order and Sampler.capture's dtype
#: were fixed with regression tests in tests/regress/; nothing is open now)
OPEN: dict = {}


def allowed(key: str) -> bool:
    """Whether inputs reaching the open defect ``key`` may be drawn."""
    if key not in OPEN:
        raise KeyError(f"known defect {key!r} is not listed in tests/fuzz/known.py")
    return INCLUDE_KNOWN
