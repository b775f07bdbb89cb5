"""Inside a capture, a one-off ``sample`` / ``argmax`` and a ``Sampler`` being built are refused
on every backend (``ScratchNotWarmed``, a ``CaptureError``), before anything is recorded.

What broke (issue #12, defect 7, its capture part): on ``cpu`` both worked inside
``rocsample.graphs.capture``, while sim and the GPUs refuse them: a one-off call makes new
output arrays (device allocations there, which a capture forbids) and a Sampler reserves its
scratch and outputs. Code written on cpu then broke on the GPU. Now cpu asks the same question
before making those arrays (``Backend.check_can_allocate``), so a capture of a decode step is
written once, with a Sampler built (or prewarmed) outside the capture, for every backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample import graphs
from rocsample.errors import CaptureError, ScratchNotWarmed
from rocsample.reference import sampling as R

ROWS, VOCAB = 2, 40


def _blk(backend):
    return {"_block": backend.warp_size()} if backend.name == "sim" else {}


def _lg(seed=0):
    return np.random.default_rng(seed).standard_normal((ROWS, VOCAB)).astype(np.float32)


def _dev(backend, a, st):
    return backend.as_array(a, "x", st) if backend.is_device else a


@pytest.mark.parametrize("call", ["sample", "argmax"])
@pytest.mark.parametrize("where", ["host", "device"])
def test_a_one_off_call_inside_a_capture_is_refused(backend, new_stream, call, where):
    s = new_stream()
    st = backend.stream(s)
    lg = _lg(1)
    x = lg if where == "host" else _dev(backend, lg, st)
    seed = _dev(backend, np.array([1, 2], np.int64), st)

    def one_off():
        if call == "argmax":
            return rs.argmax(x, stream=s, check=False, **_blk(backend))
        return rs.sample(x, seed=seed, position=seed, stream=s, check=False, **_blk(backend))

    one_off()  # warmed on this stream with the same arguments
    with graphs.capture(s) as g:
        with pytest.raises(ScratchNotWarmed) as e:
            one_off()
    g.release()
    assert isinstance(e.value, CaptureError)
    assert "capture" in str(e.value)


def test_a_sampler_built_inside_a_capture_is_refused(backend, new_stream):
    s = new_stream()
    with graphs.capture(s) as g:
        # (a GPU refuses its scratch first, cpu its outputs: both are device allocations)
        with pytest.raises(ScratchNotWarmed, match=r"captur"):
            rs.Sampler(ROWS, VOCAB, "float32", stream=s, **_blk(backend))
    g.release()


def test_a_sampler_built_outside_is_captured_on_every_backend(backend, new_stream):
    s = new_stream()
    st = backend.stream(s)
    plan = rs.Sampler(ROWS, VOCAB, "float32", stream=s, **_blk(backend))
    lg = _lg(2)
    x = _dev(backend, lg, st)
    seed = _dev(backend, np.array([3, 4], np.int64), st)
    plan(x, seed=seed, position=seed, top_k=5, check=False)  # warmed
    with graphs.capture(s) as g:
        res = plan(x, seed=seed, position=seed, top_k=5, check=False)
    try:
        g.replay(s)
        tok = backend.to_host(res[0], st) if backend.is_device else res[0]
        np.testing.assert_array_equal(tok, R.sample(lg, seed=[3, 4], position=[3, 4], top_k=5))
    finally:
        g.release()
