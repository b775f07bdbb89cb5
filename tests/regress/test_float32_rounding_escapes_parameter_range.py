"""Regression: parameters checked in float64 but used in float32 left their range on the way.

What broke: temperature and top_p were range-checked as float64, then rounded to float32 (the
type the kernels and the reference use, SPEC §2's ``inv_t = float32(1) / float32(T)``):

* ``top_p=1e-50`` passed "(0, 1]" but is 0 in float32; the cpu oracle kept one token, the
  simulator's kernels kept none (``SamplingError`` "no finite logit") or, with top_k, drew other
  tokens than the oracle - device and reference disagreed on a validated call.
* ``0 < temperature < ~2.9e-39`` gave ``inv_t = inf``: the cpu oracle crashed with NumPy's
  "zero-size array to reduction operation" (naming nothing), the simulator returned the first
  positive logit's index. ``temperature=1e-50`` (float32 0) silently became greedy, and
  ``1e39`` (float32 inf, the value the check refuses) was accepted as ``inv_t = 0``.

Now a temperature is 0 or a value whose float32 and float32 inverse are finite, and a top_p
stays positive in float32; both are refused before any launch, naming the argument (and row).
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs


def _block(backend):
    return backend.warp_size() if backend.name == "sim" else None


def _lg():
    return np.random.default_rng(5).standard_normal((2, 40)).astype(np.float32)


@pytest.mark.parametrize("t", [1e-39, 1e-44, 1e-50, 1e39, 1e300])
def test_temperature_whose_float32_inverse_is_not_finite_raises(backend, t):
    with pytest.raises(ValueError, match=r"^temperature: expected"):
        rs.sample(_lg(), temperature=t, seed=0, position=0, _block=_block(backend))


def test_per_row_temperature_names_the_row(backend):
    with pytest.raises(ValueError, match=r"^temperature: expected .*\(row 1\)"):
        rs.sample(_lg(), temperature=[0.7, 1e-40], seed=0, position=0, _block=_block(backend))


@pytest.mark.parametrize("kw", [dict(top_p=1e-50), dict(top_p=1e-50, top_k=5),
                                dict(top_p=[0.5, 1e-60])])
def test_top_p_zero_in_float32_raises(backend, kw):
    with pytest.raises(ValueError, match=r"^top_p: expected"):
        rs.sample(_lg(), seed=0, position=0, _block=_block(backend), **kw)


@pytest.mark.parametrize("kw", [dict(temperature=1e-38), dict(temperature=3e38),
                                dict(top_p=1e-45), dict(temperature=0.0)])
def test_values_that_survive_float32_still_accepted(backend, kw):
    # The edge of what stays: smallest normal temperature, largest finite, smallest top_p.
    rs.sample(_lg(), seed=0, position=0, _block=_block(backend), **kw)
