"""ring_write wrote the wrong rows for positions near 2**63 and 2**63 raised a bare OverflowError
(issue #12, defect 5).

What broke: the ring rows were ``(position + i) % n_rows`` computed in int64, so ``position + i``
wrapped past 2**63 - 1 before the modulo (host: NumPy int64 arithmetic; device: the index
kernel), and a Python int of 2**63 or more failed NumPy's conversion with an OverflowError that
named no argument. Now the position range is int64's, [-2**63, 2**63 - 1], for every form (int,
NumPy int64, device int64), refused by name outside it; the rows are exact (the position is
reduced modulo n_rows before anything is added); advancing a NumPy position must stay in range
(refused by name before anything is written); a device position advanced past 2**63 - 1 wraps
like an int64 counter (docs/SEMANTICS.md), its rows still exact.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels.test_set_rows import assert_bytes_equal

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

N_ROWS, N = 5, 3
EDGES = [2**63 - 1, 2**63 - 2, 2**63 - 3, -(2**63), -(2**63) + 1, 2**62 + 7]


def _ring(backend):
    ring = np.zeros((N_ROWS, 32), np.float32)
    return ring, (backend.as_array(ring, "dst") if backend.is_device else ring.copy())


def _host(backend, a):
    return backend.to_host(a) if backend.is_device else a


def _want(position):
    want = np.zeros((N_ROWS, 32), np.float32)
    for i in range(N):
        want[(position + i) % N_ROWS] = i + 1  # Python ints: exact
    return want


def _new(backend):
    src = np.repeat(np.arange(1, N + 1, dtype=np.float32)[:, None], 32, axis=1)
    return backend.as_array(src, "src") if backend.is_device else src


@pytest.mark.parametrize("form", ["int", "numpy", "device"])
@pytest.mark.parametrize("position", EDGES)
def test_rows_are_exact_near_the_int64_limits(backend, form, position):
    if form == "device" and not backend.is_device:
        pytest.skip("cpu-only: no device arrays (the numpy form is the array one here)")
    _, d = _ring(backend)
    if form == "int":
        pos = position
    else:
        pos = np.array([position], np.int64)
        if form == "device":
            pos = backend.as_array(pos, "position")
    sr.ring_write(d, _new(backend), pos)
    assert_bytes_equal(_host(backend, d), _want(position), f"{form} position {position}")


@pytest.mark.parametrize("position", [2**63, 2**64 + 1, -(2**63) - 1])
def test_int_position_outside_int64_is_refused_by_name(backend, launches, position):
    ring, d = _ring(backend)
    with pytest.raises(ValueError, match=rf"position: expected an int64 position: in \[-2\*\*63, 2\*\*63 - 1\], got {position}$"):
        sr.ring_write(d, _new(backend), position)
    if launches is not None:
        assert launches == []
    assert_bytes_equal(_host(backend, d), ring, "ring after a refused position")


def test_numpy_position_that_cannot_advance_is_refused_before_the_write(backend, launches):
    ring, d = _ring(backend)
    pos = np.array([2**63 - 3], np.int64)  # + 3 would pass 2**63 - 1
    with pytest.raises(ValueError, match=r"position: expected an int64 position that can advance by n=3: "
                                         r"in \[-2\*\*63, 2\*\*63 - 1 - 3\], got 9223372036854775805$"):
        sr.ring_write(d, _new(backend), pos, advance=True)
    if launches is not None:
        assert launches == []
    assert pos[0] == 2**63 - 3
    assert_bytes_equal(_host(backend, d), ring, "ring after a refused advance")
    pos[0] = 2**63 - 4  # the last one that can advance by 3
    sr.ring_write(d, _new(backend), pos, advance=True)
    assert pos[0] == 2**63 - 1
    assert_bytes_equal(_host(backend, d), _want(2**63 - 4), "ring after the last advance")


def test_device_position_advanced_past_the_limit_wraps_with_exact_rows(backend):
    if not backend.is_device:
        pytest.skip("cpu-only: a device position is advanced by the index kernel on GPU backends")
    _, d = _ring(backend)
    pos = backend.as_array(np.array([2**63 - 2], np.int64), "position")
    sr.ring_write(d, _new(backend), pos, advance=True)
    assert_bytes_equal(_host(backend, d), _want(2**63 - 2), "rows from 2**63 - 2")
    assert int(backend.to_host(pos)[0]) == 2**63 - 2 + N - 2**64  # two's complement wrap
