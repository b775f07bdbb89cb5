"""Regression: error messages embedded the whole input.

What broke: ``describe`` (the helper every "expected X, got Y" message uses) returned ``repr`` of
what came, so ``sample`` given a list of 8 x 32000 floats raised a 1.28-million-character
``TypeError``. Now a long list or tuple is described by its length and first item, and any other
repr is cut to 80 characters with its full length stated.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample
from rocsample._validate import describe

BIG = [[0.5] * 32000 for _ in range(8)]


def test_describe_is_short_for_large_values():
    d = describe(BIG)
    assert d.startswith("[[0.5, 0.5") and "characters in full" in d and len(d) < 120
    assert describe(list(range(10**5))) == "a list of 100000 items, the first 0"
    assert describe("x" * 10**6).endswith("(str, 1000002 characters in full)")
    assert describe(np.zeros((3, 4), np.float32)) == "array of shape (3, 4) and dtype float32"
    assert describe([1, 2]) == "[1, 2]" and describe(0.5) == "0.5"  # small values stay whole


@pytest.mark.parametrize("call", [
    lambda: rocsample.sample(BIG, seed=0, position=0),
    lambda: rocsample.argmax(BIG),
    lambda: rocsample.sample(np.zeros((8, 4), np.float32), top_p=[0.5] * 10**5, seed=0, position=0),
    lambda: rocsample.sample(np.zeros((8, 4), np.float32), seed=list(range(10**5)), position=0),
    lambda: rocsample.set_rows(BIG, np.zeros((1, 32), np.float32), np.zeros(1, np.int64)),
    lambda: rocsample.set_rows(np.zeros((4, 32), np.float32), np.zeros((1, 32), np.float32),
                               list(range(10**5))),
    lambda: rocsample.sample(np.zeros((8, 4), np.float32), order="z" * 10**5, seed=0, position=0),
    lambda: rocsample.scratch.prewarm(None, "q" * 10**5),
])
def test_public_errors_stay_short(call):
    with pytest.raises((TypeError, ValueError)) as e:
        call()
    assert len(str(e.value)) < 400, str(e.value)[:500]
