"""Regression (issue #12, defect 1): a wrong token when every scaled logit overflows to -inf.

What broke: on the kernel paths the Gumbel-max folds started from a best score of -inf and took
a token only when its score was strictly greater. A finite logit scaled by ``inv_t`` can
overflow float32 (``-3e38 / 0.5``, ``-1e30 / 1e-30``), so its score ``s + G`` is -inf; when
every candidate of a row scored -inf, no thread took any token. The fast path then decoded an
empty composite as token 0 (a NaN or -inf logit: ``sample([[nan, -3e38]], temperature=0.5)``
gave ``[0]``, status 0, logprob NaN, where the reference gives ``[1]``); the general path
read past the row (token n: an out-of-bounds load) or returned -1 with "no finite logit".
In vllm order, where the filters act on the scaled logits, a scaled maximum of +-inf made the
top-p masses ``exp(inf - inf) = NaN`` (the reference cast NaN to an integer; the simulator
raised).

The fix: every fold takes its first candidate whatever its score (the running best starts as
NaN and the test is ``not g <= best``: exactly ``g > best`` after the first), so -inf scores
tie and the lowest index wins, as the SPEC's argmax over the survivors says; a key equal to the
maximum has the full mass unit ``2**40`` also when both are infinite, on the device and in the
reference. (The general path has since given way to the histogram path, which the filtered
modes below run through.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample.reference import sampling as R

_NAN, _INF = np.float32(np.nan), np.float32(np.inf)

# Rows whose scaled logits (T = 0.5) overflow: +inf maxima with ties, all -inf, mixed with
# NaN / +-inf logits, and one ordinary row with a single overflowing logit.
_ROWS = np.array([[3e38, 1.0, 3e38, _NAN, -3e38],
                  [-3e38, -3e38, _NAN, -2e38, -3.3e38],
                  [_NAN, -3e38, _INF, -_INF, -3e38],
                  [1.0, 2.0, 3e38, 0.5, -1.0]], np.float32)


def _host(backend, a):
    return np.asarray(a) if isinstance(a, np.ndarray) else np.asarray(backend.to_host(a))


def _block(backend):
    return backend.warp_size() if backend.name == "sim" else None


# each path: phase 1 (unfiltered), the histogram path (top_p), its min-p draw
@pytest.mark.parametrize("filters", [dict(), dict(top_p=0.99), dict(min_p=0.01)],
                         ids=["phase-1", "top_p", "min_p"])
@pytest.mark.parametrize("logits, temperature", [
    (np.array([[_NAN, -3e38]], np.float32), 0.5),      # the issue's reproducers
    (np.array([[-_INF, -1e30]], np.float32), 1e-30),
])
def test_issue_reproducers(backend, logits, temperature, filters):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # the simulator's float32 overflow
        tok, lp, st = rs.sample(logits, temperature=temperature, seed=3, position=0,
                                return_logprobs=True, check=False, _block=_block(backend),
                                **filters)
    assert _host(backend, tok).tolist() == [1]
    assert _host(backend, st).tolist() == [0]
    assert _host(backend, lp).tolist() == [0.0]    # the only finite logit: log-softmax 0


_MODES = [dict(), dict(top_k=2), dict(top_p=0.5), dict(min_p=0.5), dict(top_k=4, top_p=0.9)]


@pytest.mark.parametrize("order", ["llama", "vllm"])
@pytest.mark.parametrize("mode", _MODES, ids=["temperature", "top_k", "top_p", "min_p", "top_k4"])
def test_overflowed_rows_equal_the_reference(backend, mode, order):
    pos = np.arange(_ROWS.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tok = rs.sample(_ROWS, temperature=0.5, seed=3, position=pos, order=order,
                        _block=_block(backend), **mode)
        ref = R.sample(_ROWS, temperature=0.5, seed=3, position=pos, order=order, **mode)
    # Every comparison here is exact (ties at +-inf go to the lower index): no margin excused.
    np.testing.assert_array_equal(_host(backend, tok), ref)
    assert (ref >= 0).all() and np.isfinite(_ROWS[np.arange(4), ref]).all()


def test_reference_masses_at_an_infinite_maximum():
    # vllm top-p on scaled keys [inf, finite, inf]: the tied maxima carry the full unit, the
    # rest nothing (was: exp(inf - inf) = NaN cast to an integer).
    q, risk = R.mass_units(np.array([np.inf, 1.0, np.inf], np.float32), np.inf)
    assert q.tolist() == [2**40, 0, 2**40] and not risk.any()
    q, risk = R.mass_units(np.array([-np.inf, -np.inf], np.float32), -np.inf)
    assert q.tolist() == [2**40, 2**40] and not risk.any()
