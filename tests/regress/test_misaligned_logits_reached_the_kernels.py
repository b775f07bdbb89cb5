"""Regression: logits whose address (or row stride) is not a multiple of their element size
reached the kernels.

What broke: ``Sampler.__call__`` checked the logits' element stride but not their alignment. A
device array made from a foreign ``__cuda_array_interface__`` may start anywhere, say at an odd
byte of a buffer. Every kernel then loaded a misaligned float32, and the argmax kernel loaded
four at a time. On a GPU that is an illegal-address fault, a sticky error that ends the
process's context. Now such logits are refused before any launch, naming the argument.

The simulator's arrays are NumPy arrays, so on sim the test says where an array lives by
patching ``backend.array_span``, which the GPU backends answer from the pointer. On a GPU it makes
the misaligned array itself (numba's ``from_cuda_array_interface`` over another array's memory).
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs

ROWS, VOCAB = 2, 64


def _misaligned(backend, monkeypatch, lg, offset_bytes):
    """``lg`` as device logits starting ``offset_bytes`` past an aligned address."""
    if backend.name == "sim":
        x = backend.as_array(lg, "logits")
        real = backend.array_span

        def span(a):
            got = real(a)
            if got is not None and a is x:
                return (got[0] + offset_bytes,) + tuple(got[1:])
            return got
        monkeypatch.setattr(backend, "array_span", span)
        return x
    # a device array at an odd place of another one's memory, as a foreign
    # __cuda_array_interface__ can give (numba takes any address)
    buf = backend.as_array(np.zeros(lg.size + 8, np.float32), "buffer")
    addr = buf.__cuda_array_interface__["data"][0] + offset_bytes
    desc = {"shape": lg.shape, "typestr": "<f4", "strides": None, "data": (addr, False),
            "version": 3}
    return backend.cuda.from_cuda_array_interface(desc, owner=buf, sync=False)


@pytest.mark.parametrize("offset_bytes", [1, 2, 3])
@pytest.mark.parametrize("params", [dict(temperature=0.0), dict(temperature=0.8, top_p=0.9)],
                         ids=["greedy", "top_p"])
def test_misaligned_logits_are_refused_naming_them(backend, monkeypatch, rng, offset_bytes,
                                                    params):
    if not backend.is_device:
        pytest.skip("NumPy logits are copied (cpu runs the reference)")
    lg = rng.standard_normal((ROWS, VOCAB)).astype(np.float32)
    # (no plan bound by an earlier test: on sim the patched address is not the one the bound
    # calls are keyed by, so one of them could serve this call)
    monkeypatch.setattr(rs, "_PLANS", {})
    x = _misaligned(backend, monkeypatch, lg, offset_bytes)
    with pytest.raises(ValueError, match=r"logits.*multiples of its 4-byte elements"):
        rs.sample(x, seed=0, position=0, check=False, **params)
    # the same logits at an aligned address are served (nothing was left half done)
    monkeypatch.undo()
    tok = rs.sample(backend.as_array(lg, "logits"), seed=0, position=0, check=False, **params)
    assert np.asarray(backend.to_host(tok[0] if isinstance(tok, tuple) else tok)).shape == (ROWS,)
