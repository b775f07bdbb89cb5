"""Float overflow inside rocsample's own arithmetic must not reach the user as a RuntimeWarning.

What broke (issue #12, defect 9): on ``cpu`` the reference computed ``logits * inv_t`` in NumPy
float32, and on ``sim`` the simulator ran the kernels' float arithmetic on NumPy scalars, whose
default error state warns: ``sample(..., temperature=1e-30)`` on logits near 1e30, a top-p row
with logits near 3e38, and q4_1 / q5_1 / iq4_nl blocks spanning -3.4e38..3.4e38 printed
"RuntimeWarning: overflow encountered in (scalar) multiply". A GPU overflows to inf silently, and
the user can do nothing about a warning raised inside the library. Fix: the emulated runtime runs
its work (the cpu backend's reference calls) under ``np.errstate(all="ignore")``, and the sim
backend runs each simulated thread under it (NumPy's error state is per thread).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rocsample
from rocsample.reference.quant import BLOCK_BYTES

SPAN = np.linspace(-3.4e38, 3.4e38, 32, dtype=np.float32)[None]


def _blk(backend):
    return {"_block": backend.warp_size()} if backend.name == "sim" else {}


def _dev(backend, a):
    return backend.as_array(a, "dst") if backend.is_device else a


CASES = {
    # fast path: every scaled logit overflows (l * 1e30)
    "tiny temperature": lambda be: rocsample.sample(
        np.array([[1e30, -1e30, 3.0]], np.float32), temperature=1e-30, seed=3, position=0,
        check=False, **_blk(be)),
    # the histogram path (top_p alone): a scaled logit overflows
    "top_p, huge logits": lambda be: rocsample.sample(
        np.array([[3e38, -3e38, 1.0]], np.float32), temperature=0.5, top_p=0.5, seed=3,
        position=0, **_blk(be)),
    "logprobs, huge logits": lambda be: rocsample.sample(
        np.array([[3e38, 3e38, 1.0]], np.float32), temperature=0.01, return_logprobs=True,
        seed=3, position=0, **_blk(be)),
    **{f"{t} block spanning float32": (lambda be, t=t: rocsample.set_rows(
        _dev(be, np.zeros((2, BLOCK_BYTES[t]), np.uint8)), SPAN, np.array([0]), dst_type=t))
       for t in ("q4_1", "q5_1", "iq4_nl")},
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_runtime_warning_escapes(backend, case):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        CASES[case](backend)
    leaked = sorted({f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
                     for w in seen if issubclass(w.category, RuntimeWarning)})
    assert not leaked, f"{case}: {leaked}"
