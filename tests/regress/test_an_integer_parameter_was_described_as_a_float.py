"""A host parameter given as an integer was shown as the float64 working copy in its error.

``rocsample.sample(x, top_k=-3, ...)`` said "got -3.0": the range check runs on a float64 copy
of the values, and the message described that copy. The message now describes the value as the
caller gave it (an integer scalar or a row of an integer array as an integer, a float as before),
on every backend (the checks run before any launch).
"""

import numpy as np
import pytest

import rocsample


def _msg(**kw):
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(ValueError) as e:
        rocsample.sample(x, seed=0, position=0, **kw)
    return str(e.value)


@pytest.mark.parametrize("value, shown", [
    (-3, "got -3"),
    (np.int64(-3), "got -3"),
    (np.array(-4), "got -4"),
    (np.array([1, -2]), "got -2 (row 1)"),
    (np.array([1, -2], np.int32), "got -2 (row 1)"),
    (2.5, "got 2.5"),
    (np.array([1.0, -2.0]), "got -2.0 (row 1)"),
])
def test_top_k_is_shown_as_given(backend, value, shown):
    assert _msg(top_k=value) == f"top_k: expected an integer in [0, inf), {shown}"


@pytest.mark.parametrize("value, shown", [
    (-1, "got -1"),
    (np.array([2, -1]), "got -1 (row 1)"),
    (np.array([0.5, -1.0]), "got -1.0 (row 1)"),
])
def test_temperature_is_shown_as_given(backend, value, shown):
    assert _msg(temperature=value) == f"temperature: expected a value in [0, inf), {shown}"


def test_integer_top_k_past_int64_is_still_a_no_op(backend):
    x = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    big = np.array([2**64 - 1, 2**63 + 5], np.uint64)

    def tokens(top_k):
        t = rocsample.sample(x, top_k=top_k, seed=3, position=7)
        return backend.to_host(t) if backend.is_device else np.asarray(t)

    np.testing.assert_array_equal(tokens(big), tokens(0))
