"""Regression: host seeds/positions in object arrays and 0-d arrays were mishandled.

What broke: ``seed`` / ``position`` given as an object array (a list mixing Python ints past
2**63 with other values) were converted with ``int(v)`` element by element: ``1.5`` was
truncated to 1 and accepted, ``None`` raised "int() argument must be ..." without naming the
argument. A 0-d integer array (``np.array(3)``, a scalar everywhere else, and accepted for
temperature/top_k/top_p/min_p) was refused with the self-contradicting "expected a scalar or an
array of length n_rows, got an array of shape ()".
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample.reference import sampling as R


def _block(backend):
    return backend.warp_size() if backend.name == "sim" else None


def _host(backend, a):
    return np.asarray(backend.to_host(a)) if backend.is_device else np.asarray(a)


@pytest.mark.parametrize("name", ["seed", "position"])
@pytest.mark.parametrize("bad", [np.array([1.5, 2**70], dtype=object), [None, 1], [2**70, "x"],
                                 [True, 2**70]])
def test_object_arrays_with_non_integers_raise(backend, name, bad):
    args = dict(seed=0, position=0)
    args[name] = bad
    with pytest.raises(TypeError, match=rf"^{name}: expected"):
        rs.sample(np.zeros((2, 8), np.float32), _block=_block(backend), **args)


def test_zero_d_integer_arrays_are_scalars(backend):
    lg = np.random.default_rng(2).standard_normal((2, 40)).astype(np.float32)
    got = _host(backend, rs.sample(lg, seed=np.array(7), position=np.array(3, np.uint64),
                                   _block=_block(backend)))
    np.testing.assert_array_equal(got, R.sample(lg, seed=7, position=3))


@pytest.mark.parametrize("name", ["seed", "position"])
def test_zero_d_float_array_still_refused(backend, name):
    args = dict(seed=0, position=0)
    args[name] = np.array(1.5)
    with pytest.raises(TypeError, match=rf"^{name}: expected"):
        rs.sample(np.zeros((2, 8), np.float32), _block=_block(backend), **args)


def test_big_python_ints_in_a_list_still_wrap(backend):
    lg = np.random.default_rng(3).standard_normal((2, 40)).astype(np.float32)
    got = _host(backend, rs.sample(lg, seed=[2**64 + 5, -1], position=0, _block=_block(backend)))
    want = R.sample(lg, seed=np.array([5, 2**64 - 1], np.uint64), position=0)
    np.testing.assert_array_equal(got, want)
