"""rocsample.kernels.vload: the vector loads of phase 1's argmax kernel. The intrinsics' LLVM IR
(the one numba-cuda and numba-hip compile) is checked here with numba's CPU target in address
space 0, since CI has no GPU; and which implementation ``build`` picks for a kernel module."""

from __future__ import annotations

from types import FunctionType, ModuleType

import numpy as np
import pytest
from numba import njit
from numba.core import cgutils, types
from numba.core.extending import intrinsic

from rocsample.kernels import atomics, vload


@pytest.fixture(scope="module")
def vec():
    return vload.vector_intrinsics(intrinsic, cgutils, types, addrspace=0)


@pytest.mark.parametrize("dtype", [np.float32, np.uint16])
def test_raw4_loads_four_elements_of_a_row(vec, dtype):
    raw4 = vec.raw4

    @njit
    def f(x, row, i):
        return raw4(x, row, i)

    x = np.arange(3 * 24, dtype=dtype).reshape(3, 24)
    for row in range(3):
        for i in (0, 4, 20):
            assert f(x, row, i) == tuple(x[row, i:i + 4].tolist())
    # a view whose rows start elsewhere (any stride, any offset): the same elements
    v = np.arange(4 * 30, dtype=dtype).reshape(4, 30)[1:, 2:26]
    h = [vec_head(vec, v, r) for r in range(v.shape[0])]
    for row in range(v.shape[0]):
        i = h[row]
        assert f(v, row, i) == tuple(v[row, i:i + 4].tolist())


def vec_head(vec, x, row):
    head4 = vec.head4

    @njit
    def g(x, row):
        return head4(x, row)

    return g(x, row)


@pytest.mark.parametrize("dtype", [np.float32, np.uint16])
def test_head4_counts_elements_before_the_first_vector_boundary(vec, dtype):
    base = np.zeros(64 + 16, dtype)
    item = base.itemsize
    for off in range(4):
        for width in (13, 16, 17):
            x = base[off:off + 3 * width].reshape(3, width)
            for row in range(3):
                addr = x[row].ctypes.data
                h = vec_head(vec, x, row)
                assert 0 <= h <= 3 and (addr + h * item) % (4 * item) == 0, (off, width, row)


def test_build_picks_the_intrinsics_for_registered_modules(monkeypatch):
    # a module registered for the atomics (numba-hip) gets the vector intrinsics too; a module
    # that is neither numba-cuda nor registered (the simulator) gets four scalar loads
    fake = ModuleType("fake.gpu.vload")
    fake.jit = lambda *a, **kw: (lambda f: f)
    monkeypatch.setitem(atomics._REGISTERED, fake.__name__, intrinsic)
    raw4, head4 = vload.build(fake)
    assert not isinstance(raw4, FunctionType) and not isinstance(head4, FunctionType)
    monkeypatch.delitem(atomics._REGISTERED, fake.__name__)
    raw4, head4 = vload.build(fake)
    assert isinstance(raw4, FunctionType) and isinstance(head4, FunctionType)
    x = np.arange(20, dtype=np.float32).reshape(2, 10)
    assert raw4(x, 1, 3) == tuple(x[1, 3:7].tolist())
    assert head4(x, 1) == 2   # 10 elements into an aligned start: 2 more to the next boundary
