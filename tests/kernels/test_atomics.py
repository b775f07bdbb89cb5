"""rocsample.kernels.atomics: the atomicrmw code generation the hip backend uses (numba-hip has no
array atomics), compiled here with numba's CPU target since no ROCm is available; and which
implementation ``build`` picks for a kernel module."""

from __future__ import annotations

import types

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError
from numba.core.extending import intrinsic

from rocsample.kernels import atomics


@pytest.fixture(scope="module")
def rmw():
    return atomics.rmw_intrinsics(intrinsic)


def test_add_min_max_return_the_old_value_and_update(rmw):
    add, amin, amax = rmw.add, rmw.min, rmw.max

    @njit
    def f(a, b):
        return add(a, 1, np.int32(5)), amin(b, 0, -7), amax(b, 1, 9), amax(b, 2, 1)

    a = np.array([1, 2, 3], np.int32)
    b = np.array([4, 4, 4], np.int64)
    assert f(a, b) == (2, 4, 4, 4)
    assert a.tolist() == [1, 7, 3] and b.tolist() == [-7, 9, 4]


def test_unsigned_arrays_compare_unsigned(rmw):
    amax, amin = rmw.max, rmw.min

    @njit
    def f(u):
        amax(u, 0, np.uint64(2**63))   # signed max would keep 5
        amin(u, 1, np.uint64(2**63))   # signed min would take 2**63 (negative as int64)
        return u[0], u[1]

    u = np.array([5, 6], np.uint64)
    assert f(u) == (2**63, 6)


def test_tuple_index_and_value_cast(rmw):
    add, amax = rmw.add, rmw.max

    @njit
    def f(w, q):
        amax(w, (1, 0, 2), np.int64(3))  # winner rows: int32 array, int64 value
        add(q, (0, 1), 2)
        return w[1, 0, 2], q[0, 1]

    w = np.full((2, 2, 3), -1, np.int32)
    q = np.zeros((1, 2), np.int64)
    assert f(w, q) == (3, 2)
    assert int((w != -1).sum()) == 1


def test_float_add_and_no_float_min(rmw):
    add, amin = rmw.add, rmw.min

    @njit
    def f(x):
        return add(x, 0, 1.5)

    x = np.array([1.0], np.float32)
    assert f(x) == 1.0 and x[0] == np.float32(2.5)

    @njit
    def g(x):
        return amin(x, 0, 0.5)

    with pytest.raises(TypingError):
        g(x)


def test_build_uses_the_registered_intrinsic_for_that_module(monkeypatch):
    monkeypatch.setattr(atomics, "_REGISTERED", {})
    fake = types.SimpleNamespace(__name__="fake.gpu")
    atomics.register("fake.gpu", intrinsic)
    ns = atomics.build(fake)
    add = ns.add

    @njit
    def f(a):
        return add(a, 0, 4)

    a = np.array([3], np.int64)
    assert f(a) == 3 and a[0] == 7
    # an unregistered module (numba-cuda, the simulator): wrappers of its own cuda.atomic.*
    calls = []
    other = types.SimpleNamespace(
        __name__="other", jit=lambda **kw: (lambda fn: fn),
        atomic=types.SimpleNamespace(add=lambda *a: calls.append(("add",) + a) or 0,
                                     min=lambda *a: calls.append(("min",) + a) or 0,
                                     max=lambda *a: calls.append(("max",) + a) or 0))
    ns2 = atomics.build(other)
    ns2.add("A", 1, 2), ns2.min("B", (0, 1), 3), ns2.max("C", 2, 4)
    assert calls == [("add", "A", 1, 2), ("min", "B", (0, 1), 3), ("max", "C", 2, 4)]
