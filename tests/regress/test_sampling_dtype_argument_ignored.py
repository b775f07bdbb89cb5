"""Regression: ``sample(..., dtype=...)`` was never checked against the logits.

What broke: ``dtype`` marks a uint16 array as bfloat16 bits. Given with float32 or float16 logits
(``dtype="bfloat16"``), the device backends (sim, cuda, hip) ignored it and sampled the array as
what it is, while the cpu backend raised ``TypeError`` from inside the reference - the same call
answered differently per backend. A misspelt ``dtype`` ("bf16", "junk") was ignored everywhere.
Now ``dtype`` must be None or a logits dtype name, and must agree with the array; both refusals
come before any launch.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs


def _block(backend):
    return backend.warp_size() if backend.name == "sim" else None


@pytest.mark.parametrize("arr_dtype,dtype", [("float32", "bfloat16"), ("float16", "bfloat16"),
                                             ("float32", "float16"), ("float16", "float32")])
def test_dtype_that_disagrees_with_the_logits_raises(backend, arr_dtype, dtype):
    lg = np.zeros((2, 8), arr_dtype)
    with pytest.raises(TypeError, match=r"^logits: expected .*%s" % dtype):
        rs.sample(lg, seed=0, position=0, dtype=dtype, _block=_block(backend))


@pytest.mark.parametrize("dtype", ["bf16", "junk", "float64"])
def test_unknown_dtype_name_raises(backend, dtype):
    lg = np.zeros((2, 8), np.float32)
    with pytest.raises(TypeError, match=r"^dtype: expected"):
        rs.sample(lg, seed=0, position=0, dtype=dtype, _block=_block(backend))


def test_sampler_call_with_disagreeing_dtype_raises(backend):
    plan = rs.Sampler(2, 8, "float16", _block=_block(backend))
    with pytest.raises(TypeError, match=r"^logits: expected"):
        plan(np.zeros((2, 8), np.float16), seed=0, position=0, dtype="bfloat16")


def test_matching_dtype_still_accepted(backend):
    # The fix must not refuse what was right: uint16 bits with dtype="bfloat16", and a dtype
    # that names the array's own dtype.
    f = np.array([[0.0, 2.0, 1.0]], np.float32)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)
    for x, dtype in ((bits, "bfloat16"), (f, "float32"), (f.astype(np.float16), "float16")):
        tok = rs.sample(x, temperature=0.0, seed=0, position=0, dtype=dtype, _block=_block(backend))
        got = backend.to_host(tok) if backend.is_device else tok
        assert int(np.asarray(got)[0]) == 1, dtype
