"""Regression (issue #17): a capture rocsample did not begin was invalidated by rocsample.

What broke: rocsample asked "is a capture open that forbids allocating?" with one driver probe,
the capture status of the legacy default stream, which fails while a *global* capture is open on
a blocking stream. torch's streams are non-blocking: inside ``torch.cuda.graph`` the probe read
"no capture" (H200, torch 2.11, every capture mode), so a call on another stream grew its scratch
(cuMemAlloc), freed a retired buffer (cuMemFree) or allocated its outputs during the user's
capture, and torch raised cudaErrorStreamCaptureInvalidated. rocsample now also asks the
streams it can safely ask (torch streams calls ran on, torch's and CuPy's current streams; under
the emulation every stream with scratch) and refuses such a call with ``ScratchNotWarmed`` before
any allocation, keeps retired buffers until no capture is seen, and holds numba's own frees
meanwhile.

The emulated runtime models the driver here: a capture on a ``non_blocking`` stream is not seen
by the legacy-stream probe but is invalidated by an allocation all the same.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample import scratch
from rocsample.backends import CaptureStatus


def _begin_foreign(backend):
    """A global-mode capture begun on a non-blocking stream, not through rocsample.graphs."""
    rt = backend.runtime
    if not rt.emulated:
        pytest.skip("cpu-only: the emulated runtime's non-blocking streams (on a GPU: "
                    "test_set_rows_inside_a_torch_graph_invalidated_it.py)")
    s = rt.new_stream(non_blocking=True)
    st = backend.stream(s)
    scratch.prewarm(s, 256)  # a call ran on it before: the pool knows the stream
    rt.begin_capture(st, "global")
    assert not rt.global_capture_active(st.device)  # the premise: the probe does not see it
    return st


@pytest.fixture
def foreign(backend):
    st = _begin_foreign(backend)
    yield st
    if backend.runtime.capture_status(st) is not CaptureStatus.NONE:
        backend.runtime.end_capture(st)


def _valid(backend, st):
    assert backend.runtime.capture_status(st) is CaptureStatus.ACTIVE, "the capture was invalidated"
    backend.runtime.end_capture(st)  # ends without CAPTURE_INVALIDATED


def test_scratch_growth_on_another_stream_is_refused(backend, foreign, new_stream):
    other = new_stream()
    calls = backend.runtime.alloc_calls
    with pytest.raises(rs.ScratchNotWarmed, match="not begun by rocsample"):
        scratch.request(other, 4096, "grow")
    assert backend.runtime.alloc_calls == calls
    _valid(backend, foreign)


def test_retired_buffers_wait_for_the_capture_to_end(backend, new_stream):
    rt = backend.runtime
    if not rt.emulated:
        pytest.skip("cpu-only: the emulated runtime's non-blocking streams")
    other = new_stream()
    scratch.prewarm(other, 4096)
    s = rt.new_stream(non_blocking=True)
    st = backend.stream(s)
    scratch.prewarm(s, 256)
    rt.begin_capture(st, "global")
    frees = rt.free_calls
    # freeing other's buffer now would invalidate the capture: trim leaves it for later
    assert scratch.get_pool().trim(other) == 0
    scratch.request(s, 256)
    assert rt.free_calls == frees
    _valid(backend, st)
    assert scratch.get_pool().trim(other) == 4096  # after the capture it is freed
    assert rt.free_calls == frees + 1


def test_outputs_of_a_one_off_call_on_another_stream_are_refused(backend, new_stream, rng):
    if not backend.is_device:
        pytest.skip("cpu outputs are host arrays: nothing to allocate on a device")
    other = new_stream()
    st = backend.stream(other)
    x = backend.as_array(rng.standard_normal((2, 64)).astype(np.float32), "logits", st)
    rs.argmax(x, stream=other, _block=backend.warp_size())  # warm: plan and scratch exist
    foreign = _begin_foreign(backend)
    try:
        calls = backend.runtime.alloc_calls
        with pytest.raises(rs.ScratchNotWarmed, match="allocating an output array"):
            rs.argmax(x, stream=other, _block=backend.warp_size())
        assert backend.runtime.alloc_calls == calls
        _valid(backend, foreign)
    finally:
        if backend.runtime.capture_status(foreign) is not CaptureStatus.NONE:
            backend.runtime.end_capture(foreign)


def test_a_call_on_the_foreign_capturing_stream_holds_numbas_frees(backend, foreign):
    if backend.cuda is None:
        pytest.skip("numba's deallocation queue: a numba backend")
    pool = scratch.get_pool()
    scratch.request(foreign, 256)  # a call inside the foreign capture
    assert foreign.device in pool._numba_held
    _valid(backend, foreign)
    scratch.request(backend.stream(None), 1)  # the first call that sees no capture lets them go
    assert foreign.device not in pool._numba_held
