"""Regression: ``top_k=inf`` (and top_k past int64) went through an undefined float->int cast.

What broke: top_k was checked as "an integer in [0, inf]" in float64 - so ``float("inf")``
passed as an "integer" - and then cast to int64. inf, and any value past 2**63 (``2**70``,
``1e300``, a uint64 array near 2**64), hit NumPy's undefined cast (RuntimeWarning "invalid
value encountered in cast", INT64_MIN on x86) before any launch. The result happened to be a
no-op on x86, by accident of that cast. Now inf is refused naming top_k, and finite values
past int64 are the no-op SPEC §2 says they are (top_k >= n_vocab), with no warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rocsample.sampling as rs


def _block(backend):
    return backend.warp_size() if backend.name == "sim" else None


def _host(backend, a):
    return np.asarray(backend.to_host(a)) if backend.is_device else np.asarray(a)


@pytest.mark.parametrize("k", [float("inf"), np.array([3.0, np.inf])])
def test_top_k_inf_raises(backend, k):
    lg = np.zeros((2, 8), np.float32)
    with pytest.raises(ValueError, match=r"^top_k: expected"):
        rs.sample(lg, top_k=k, seed=0, position=0, _block=_block(backend))


@pytest.mark.parametrize("k", [2**70, 1e300, 2**63, np.array([2**64 - 1, 2**63], np.uint64)])
def test_top_k_past_int64_is_a_no_op_without_warning(backend, k):
    lg = np.random.default_rng(1).standard_normal((2, 40)).astype(np.float32)
    want = _host(backend, rs.sample(lg, seed=9, position=3, _block=_block(backend)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _host(backend, rs.sample(lg, top_k=k, seed=9, position=3, _block=_block(backend)))
    np.testing.assert_array_equal(got, want)
