"""A NumPy ``out=`` is accepted by every backend: the tokens are written into it before the call
returns, and it is returned as given.

What broke (issue #12, defect 7, its ``out=`` part): ``cpu`` wrote the tokens into a NumPy
``out=`` while sim and the GPUs refused it ("out: expected a device array"). Code written on cpu
then broke on the GPU. Now a device backend samples into its own buffer and copies the tokens
back into the NumPy array synchronously (the call synchronizes its stream; inside a capture,
where no host round trip is possible, it is refused by name as a CaptureError — pass a device
array there). On ``cpu``, whose device memory is NumPy, a capture takes it like any device
array. Wrong dtype, shape or a read-only array are refused by name on every backend, before
anything runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample import graphs
from rocsample.errors import CaptureError, SamplingError
from rocsample.reference import sampling as R

ROWS, VOCAB = 3, 40


def _blk(backend):
    return {"_block": backend.warp_size()} if backend.name == "sim" else {}


def _lg(seed=0):
    return np.random.default_rng(seed).standard_normal((ROWS, VOCAB)).astype(np.float32)


def test_one_off_sample_and_argmax_write_a_numpy_out(backend):
    lg = _lg(1)
    out = np.full(ROWS, -7, np.int32)
    res = rs.sample(lg, seed=4, position=5, top_k=6, temperature=0.8, out=out, **_blk(backend))
    assert res is out
    np.testing.assert_array_equal(out, R.sample(lg, seed=4, position=5, top_k=6, temperature=0.8))
    out2 = np.full(ROWS, -7, np.int32)
    tok, lp, status = rs.argmax(lg, out=out2, return_logprobs=True, check=False, **_blk(backend))
    assert tok is out2
    np.testing.assert_array_equal(out2, lg.argmax(axis=1))


def test_sampler_writes_a_numpy_out_on_every_call(backend):
    plan = rs.Sampler(ROWS, VOCAB, "float32", **_blk(backend))
    out = np.full(ROWS, -7, np.int32)
    for i in range(3):  # the repeated-call path too
        lg = _lg(10 + i)
        x = backend.as_array(lg, "x") if backend.is_device else lg
        res = plan(x, seed=i, position=7, top_p=0.9, out=out)
        assert res is out
        np.testing.assert_array_equal(out, R.sample(lg, seed=i, position=7, top_p=0.9))


def test_a_row_without_finite_logits_is_written_before_the_error(backend):
    lg = _lg(2)
    lg[1] = np.nan
    out = np.full(ROWS, -7, np.int32)
    with pytest.raises(SamplingError) as e:
        rs.sample(lg, seed=1, position=2, out=out, **_blk(backend))
    assert e.value.rows == [1]
    want = R.sample_with_margin(lg, seed=1, position=2)[0]
    np.testing.assert_array_equal(out, want)
    assert out[1] == -1


@pytest.mark.parametrize("bad, exc, msg", [
    (np.zeros(ROWS, np.int64), TypeError, r"^out: expected an int32 array of shape \(3,\)"),
    (np.zeros(ROWS + 1, np.int32), TypeError, r"^out: expected an int32 array of shape \(3,\)"),
    (np.zeros((ROWS, 1), np.int32), TypeError, r"^out: expected an int32 array"),
    ("readonly", ValueError, r"^out: expected a writeable array, got a read-only array$"),
    ([0, 0, 0], TypeError, r"^out: expected a"),
], ids=["int64", "long", "2d", "readonly", "list"])
def test_a_bad_numpy_out_is_refused_by_name_before_anything_runs(backend, monkeypatch, bad, exc,
                                                                 msg):
    if isinstance(bad, str):
        bad = np.full(ROWS, -7, np.int32)
        bad.flags.writeable = False
    before = np.array(bad, copy=True)
    rs.sample(_lg(), seed=0, position=0, **_blk(backend))  # plan and kernels made
    seen = []
    name = "launch" if backend.is_device else "enqueue"
    monkeypatch.setattr(backend, name, lambda *a, **k: seen.append(a))
    with pytest.raises(exc, match=msg):
        rs.sample(_lg(), seed=0, position=0, out=bad, **_blk(backend))
    monkeypatch.undo()
    assert not seen
    np.testing.assert_array_equal(np.asarray(bad), before)


def test_inside_a_capture_a_numpy_out_is_refused_on_device_backends(backend, new_stream):
    s = new_stream()
    plan = rs.Sampler(ROWS, VOCAB, "float32", stream=s, **_blk(backend))
    lg = _lg(3)
    x = backend.as_array(lg, "x", plan.stream) if backend.is_device else lg
    out = np.full(ROWS, -7, np.int32)
    plan(x, seed=1, position=2, out=out, check=False)  # warmed with the same arguments
    out[:] = -7
    with graphs.capture(s) as g:
        if backend.is_device:
            with pytest.raises(CaptureError, match=r"^out: a NumPy array"):
                plan(x, seed=1, position=2, out=out, check=False)
        else:  # cpu: NumPy arrays are its device memory, written at replay
            plan(x, seed=1, position=2, out=out, check=False)
    try:
        if not backend.is_device:
            g.replay(s)
            np.testing.assert_array_equal(out, R.sample(lg, seed=1, position=2))
        else:
            np.testing.assert_array_equal(out, np.full(ROWS, -7, np.int32))
    finally:
        g.release()
