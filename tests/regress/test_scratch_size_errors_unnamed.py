"""Regression: bad scratch sizes raised errors that did not name the argument, or were accepted,
and a refused ``prewarm`` had already allocated part of what it was given.

What broke: ``request`` and ``prewarm`` converted sizes with ``int()``: ``None`` raised Python's
own "int() argument must be ..." (no argument named), ``"64"``, ``1.5`` and ``True`` were taken
as sizes, and ``prewarm(stream, "x")`` raised "invalid literal for int()". ``prewarm`` requested
each purpose in turn, so ``{"a": 256, "b": -1}`` allocated ``a`` and then raised for ``b``. Now a
size must be a non-negative integer (Python or NumPy), errors read "<name>: expected ..., got ...",
and prewarm checks every size before it allocates anything.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from rocsample.backends.cpu import CpuBackend
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import ScratchPool


@pytest.fixture
def env():
    be = CpuBackend()
    be.runtime = rt = EmulatedRuntime(n_devices=2)
    return ScratchPool(be), rt


def _exact(msg):
    return "^" + re.escape(msg) + "$"


@pytest.mark.parametrize("bad", [None, "64", 1.5, True, [64]])
def test_request_names_nbytes(env, bad):
    pool, rt = env
    s = rt.new_stream(1)
    with pytest.raises(TypeError, match=_exact(f"nbytes: expected a non-negative integer, got {bad!r}")):
        pool.request(s, bad, "p")
    assert rt.alloc_calls == 0 and pool.buffers(s) == {}


def test_numpy_integers_are_sizes(env):
    pool, rt = env
    s = rt.new_stream(0)
    assert pool.request(s, np.int64(300), "p").shape == (512,)
    pool.prewarm(s, {"q": np.uint32(10)})
    assert pool.capacity(s, "q") == 256


@pytest.mark.parametrize("sizes, exc, msg", [
    ({"a": 256, "b": None}, TypeError, "sizes['b']: expected a non-negative integer, got None"),
    ({"a": 256, "b": -1}, ValueError, "sizes['b']: expected a non-negative integer, got -1"),
    (-5, ValueError, "sizes: expected a non-negative integer, got -5"),
    ("x", TypeError, "sizes: expected a byte count or a mapping {purpose: bytes}, got 'x'"),
    (2.5, TypeError, "sizes: expected a byte count or a mapping {purpose: bytes}, got 2.5"),
])
def test_prewarm_checks_every_size_before_allocating(env, sizes, exc, msg):
    pool, rt = env
    s = rt.new_stream(0)
    with pytest.raises(exc, match=_exact(msg)):
        pool.prewarm(s, sizes)
    assert rt.alloc_calls == 0 and pool.buffers(s) == {}  # nothing of the refused call happened
