"""Regression: on cpu and sim, a stream given as its raw handle or as an object with ``.cuda_stream``
was refused.

What broke: SPEC §1 accepts a backend stream object, a raw stream handle (int), an object with
``.cuda_stream`` (PyTorch's form) or None. The emulated runtime behind cpu and sim took only its
own stream objects and 0: ``s.handle`` or a wrapper exposing ``cuda_stream`` raised TypeError, so
code written for a GPU backend (which passes handles around) failed on the CI backends. Now the
emulated runtime knows the device of every stream it made and normalises all four forms to the
same stream; a handle it never made is refused naming ``stream``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rocsample.backends import Stream
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import ScratchPool


def test_every_form_of_one_stream_is_the_same_stream(backend, new_stream):
    rt = backend.runtime
    for dev in range(min(2, rt.device_count())):
        s = new_stream(dev)
        want = backend.stream(s)
        assert want.device == dev
        for form in (s.handle, np.int64(s.handle), SimpleNamespace(cuda_stream=s.handle)):
            got = backend.stream(form)
            assert (got.handle, got.device) == (want.handle, want.device), form


def test_scratch_is_keyed_the_same_whatever_the_form(backend, new_stream):
    pool = ScratchPool(backend)
    s = new_stream(backend.runtime.device_count() - 1)
    pool.request(s, 256, "p")
    allocs = backend.runtime.alloc_calls
    assert pool.buffers(s.handle) == pool.buffers(SimpleNamespace(cuda_stream=s.handle)) == pool.buffers(s)
    pool.request(s.handle, 256, "p")
    assert backend.runtime.alloc_calls == allocs  # the same entry, not a new one
    pool.trim()


def test_unknown_handles_and_other_objects_are_refused_by_name():
    rt = EmulatedRuntime(n_devices=2)
    with pytest.raises(ValueError, match=r"^stream: expected a stream from rocsample\.get_backend\(\)\.runtime\."
                                         r"new_stream\(\) or its handle, got handle 0x1234 "
                                         r"\(no such stream\)$"):
        rt.stream(0x1234)
    with pytest.raises(TypeError, match="^stream: expected"):
        rt.stream(True)
    with pytest.raises(TypeError, match="^stream: expected"):
        rt.stream(1.0)
    assert rt.stream(0) == Stream(0, 0, 0) and rt.stream(SimpleNamespace(cuda_stream=0)) == Stream(0, 0, 0)
