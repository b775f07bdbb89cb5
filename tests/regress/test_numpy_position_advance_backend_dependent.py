"""``advance_position=True`` with a NumPy position: read on the host and bumped in place after
the draw, mod 2**64, on every backend; only int64 / uint64 arrays (a narrower dtype would wrap
in its own range).

What broke (issue #12, defect 7, its position part): ``cpu`` advanced a NumPy position in
place while sim and the GPUs refused it ("position: expected a device array when
advance_position=True"); and ``cpu`` advanced an int32 array in int32 (found by the fuzzer's
long profile): ``2**31 - 1`` became ``-2**31``, so the next draw ran at ``2**64 - 2**31``
instead of ``2**31``. Now every backend reads a NumPy position on the host, draws at it and adds
one in place (a uint64 ``2**64 - 1`` wraps to 0, an int64 ``2**63 - 1`` to ``-2**63``: the same
counter bits); int32 and other dtypes are refused by name (TypeError), a read-only array,
a scalar or a list by name (ValueError), before anything runs. Inside a capture a device backend
cannot bump a host array per replay and refuses it (CaptureError naming ``position``); on
``cpu``, whose device memory is NumPy, replays bump it like a device array.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample import graphs
from rocsample.errors import CaptureError
from rocsample.reference import sampling as R

ROWS, VOCAB = 3, 40
PARAMS = dict(temperature=0.9, top_k=7)


def _blk(backend):
    return {"_block": backend.warp_size()} if backend.name == "sim" else {}


def _lg(seed=0):
    return np.random.default_rng(seed).standard_normal((ROWS, VOCAB)).astype(np.float32)


def _same(got, lg, position):
    want, _, _, near = R.sample_with_margin(lg, seed=3, position=position, **PARAMS)
    bad = np.flatnonzero((np.asarray(got) != want) & ~near)
    assert not bad.size, f"rows {bad}: got {np.asarray(got)[bad]}, want {want[bad]}"


def _host(backend, a):
    return np.asarray(backend.to_host(a)) if backend.is_device_array(a) else np.asarray(a)


@pytest.mark.parametrize("dtype, start, after", [
    (np.uint64, [2**64 - 1, 0, 41], [0, 1, 42]),
    (np.int64, [2**63 - 1, -1, 41], [-(2**63), 0, 42]),
], ids=["uint64", "int64"])
def test_a_numpy_position_is_drawn_at_then_bumped_in_place(backend, dtype, start, after):
    lg = _lg(1)
    pos = np.array([v % 2**64 for v in start], np.uint64).view(dtype)
    p0 = pos.view(np.uint64).copy()  # the counters drawn at (the same bits)
    tok = rs.sample(lg, seed=3, position=pos, advance_position=True, **PARAMS, **_blk(backend))
    _same(_host(backend, tok), lg, p0)
    np.testing.assert_array_equal(pos, np.array([v % 2**64 for v in after], np.uint64).view(dtype))


def test_a_sampler_bumps_a_numpy_position_on_every_call(backend):
    plan = rs.Sampler(ROWS, VOCAB, "float32", **_blk(backend))
    pos = np.array([5, 6, 7], np.int64)
    for i in range(3):  # the repeated-call path too
        lg = _lg(10 + i)
        x = backend.as_array(lg, "x") if backend.is_device else lg
        tok = plan(x, seed=3, position=pos, advance_position=True, **PARAMS)
        _same(_host(backend, tok), lg, np.array([5, 6, 7], np.uint64) + np.uint64(i))
    np.testing.assert_array_equal(pos, [8, 9, 10])


@pytest.mark.parametrize("position, exc, msg", [
    (np.array([2**31 - 1, 0, 1], np.int32), TypeError,
     r"^position: expected an int64 or uint64 array when advance_position=True"),
    (np.array([1, 2, 3], np.uint32), TypeError, r"^position: expected an int64 or uint64 array"),
    ("readonly", ValueError, r"^position: expected a writeable array when advance_position=True"),
    (5, ValueError, r"^position: expected a device array, or an int64 or uint64 NumPy array, "
     r"when advance_position=True"),
    ([1, 2, 3], ValueError, r"^position: expected a device array, or an int64 or uint64 NumPy"),
    (np.array(4, np.int64), ValueError, r"^position: expected a device array, or an int64"),
], ids=["int32", "uint32", "readonly", "scalar", "list", "0-d"])
def test_a_position_that_cannot_be_bumped_is_refused_by_name(backend, monkeypatch, position, exc,
                                                             msg):
    if isinstance(position, str):
        position = np.array([1, 2, 3], np.int64)
        position.flags.writeable = False
    before = np.array(position, copy=True)
    rs.sample(_lg(), seed=0, position=0, **_blk(backend))  # plan and kernels made
    seen = []
    monkeypatch.setattr(backend, "launch" if backend.is_device else "enqueue",
                        lambda *a, **k: seen.append(a))
    with pytest.raises(exc, match=msg):
        rs.sample(_lg(), seed=0, position=position, advance_position=True, **_blk(backend))
    monkeypatch.undo()
    assert not seen
    np.testing.assert_array_equal(np.asarray(position), before)


def test_inside_a_capture_a_numpy_position_is_refused_on_device_backends(backend, new_stream):
    s = new_stream()
    plan = rs.Sampler(ROWS, VOCAB, "float32", stream=s, **_blk(backend))
    lg = _lg(3)
    x = backend.as_array(lg, "x", plan.stream) if backend.is_device else lg
    pos = np.array([1, 2, 3], np.int64)
    plan(x, seed=3, position=pos, advance_position=True, check=False, **PARAMS)  # warmed
    with graphs.capture(s) as g:
        if backend.is_device:
            with pytest.raises(CaptureError, match=r"^position: advancing a NumPy position"):
                plan(x, seed=3, position=pos, advance_position=True, check=False, **PARAMS)
        else:
            res = plan(x, seed=3, position=pos, advance_position=True, check=False, **PARAMS)
    try:
        np.testing.assert_array_equal(pos, [2, 3, 4])  # nothing bumped while capturing
        if not backend.is_device:
            for i in range(2):
                g.replay(s)
                _same(res[0], lg, np.array([2, 3, 4], np.uint64) + np.uint64(i))
            np.testing.assert_array_equal(pos, [4, 5, 6])
    finally:
        g.release()
