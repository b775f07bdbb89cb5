"""Defects the fuzzer finds that are open on main and owned by another engineer.

Each entry names the defect, where it is tracked, and the inputs that reach it. The strategies
leave those inputs out while the entry is here, so CI stays a statement about everything else;
``ROCSAMPLE_FUZZ_KNOWN=1`` draws them anyway (to see a fix land: the entry must then go).
"""

from __future__ import annotations

import os

INCLUDE_KNOWN = os.environ.get("ROCSAMPLE_FUZZ_KNOWN", "") not in ("", "0")

OPEN = {
    "defect7-sampling": "issue #12 defect 7, sampling parts (qa, after the sampling.py split): cpu "
                        "accepts a NumPy out=, a NumPy position with advance_position and element-"
                        "strided logits where GPU backends refuse them; and (found by the fuzzer) "
                        "cpu advances an int32 NumPy position in int32: 2**31 - 1 wraps to -2**31, "
                        "so the next draw is at 2**64 - 2**31 instead of 2**31",
    "capture-bf16-bits": "found by the fuzzer (qa, after the sampling.py split): Sampler.capture takes "
                         "no dtype=, so a bfloat16 plan cannot capture uint16 bit patterns (its "
                         "warm-up call refuses them: 'logits: expected ... uint16 with "
                         "dtype=\'bfloat16\'')",
}


def allowed(key: str) -> bool:
    """Whether inputs reaching the open defect ``key`` may be drawn."""
    if key not in OPEN:
        raise KeyError(f"known defect {key!r} is not listed in tests/fuzz/known.py")
    return INCLUDE_KNOWN
