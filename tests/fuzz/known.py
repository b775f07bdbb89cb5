"""Defects the fuzzer finds that are open on main and owned by another engineer.

Each entry names the defect, where it is tracked, and the inputs that reach it. The strategies
leave those inputs out while the entry is here, so CI stays a statement about everything else;
``ROCSAMPLE_FUZZ_KNOWN=1`` draws them anyway (to see a fix land: the entry must then go).
"""

from __future__ import annotations

import os

INCLUDE_KNOWN = os.environ.get("ROCSAMPLE_FUZZ_KNOWN", "") not in ("", "0")

OPEN = {
    "strided-set_rows": "issue #12 defect 3 (set_rows engineer): strided views of src, dst or idx "
                        "are refused on device backends with numba's unnamed 'non-contiguous buffer' "
                        "error; cpu accepts them",
    "overlap": "issue #12 defect 4 (set_rows engineer): src overlapping dst is not refused",
    "ring-2**63": "issue #12 defect 5 (set_rows engineer): ring_write positions near 2**63 write "
                  "the wrong rows; 2**63 raises a bare OverflowError",
    "readonly": "issue #12 defect 8 (set_rows engineer): a read-only dst / position gives NumPy's "
                "unnamed error",
    "nan-payload": "issue #12 defect 11 (set_rows engineer): NaN payloads of f16 src differ",
    "defect7-sampling": "issue #12 defect 7, sampling parts (qa, after the sampling.py split): cpu "
                        "accepts a NumPy out=, a NumPy position with advance_position and element-"
                        "strided logits where GPU backends refuse them",
    "unchecked-index-vs-nonfinite": "found by the fuzzer (set_rows engineer): an unchecked call "
                                    "(check_bounds=False) to a block type with a bad index and a "
                                    "non-finite host src raises ValueError naming src on device "
                                    "backends, IndexError on cpu; SEMANTICS says IndexError on "
                                    "every backend",
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
