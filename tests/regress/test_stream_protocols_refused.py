"""Regression: streams in the CUDA stream protocol, CuPy's or cuda.bindings' form were refused.

What broke: SPEC §1 accepts a raw handle, ``.cuda_stream`` (PyTorch), ``.ptr`` (CuPy),
``__cuda_stream__`` (the CUDA stream protocol) and backend streams. The GPU runtime knew only
ints, ``.cuda_stream`` and numba streams: a CuPy stream raised "expected None, an int handle, a
numba stream or an object with .cuda_stream, got Stream", and so did numba's own ``stream.handle``
(a ``CUstream``). Every form now normalises to the same (handle, device) on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest

from rocsample.backends.base import stream_handle_of


class _Protocol:
    def __init__(self, h):
        self.h = h

    def __cuda_stream__(self):
        return (0, self.h)


class _CupyLike:
    __module__ = "cupy.cuda.stream"

    def __init__(self, h):
        self.ptr = h


def _handle(backend, s):
    return int(backend.stream(s).handle)


def test_the_forms_give_one_handle():
    assert stream_handle_of(_Protocol(0x40)) == 0x40
    assert stream_handle_of(_CupyLike(0x50)) == 0x50
    assert stream_handle_of(np.int64(7)) == 7
    assert stream_handle_of(True) is None and stream_handle_of(object()) is None


def test_every_form_names_the_same_stream(backend, new_stream):
    s = new_stream(0)
    want = backend.stream(s)
    h = int(want.handle)
    forms = [h, np.uint64(h), _Protocol(h), _CupyLike(h)]
    if hasattr(s, "handle") and not isinstance(s.handle, int):
        forms.append(s.handle)  # numba's CUstream on the GPU backends
    for form in forms:
        got = backend.stream(form)
        assert (got.handle, got.device) == (want.handle, want.device), type(form).__name__


def test_other_objects_are_refused_by_name(backend):
    with pytest.raises(TypeError, match="^stream: expected"):
        backend.stream(object())
    with pytest.raises(TypeError, match="^stream: expected"):
        backend.stream(1.5)
