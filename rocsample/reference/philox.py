"""Philox4x32-10 and the Gumbel noise of SPEC §2, in NumPy.

This is the oracle for ``rocsample.kernels.philox``: every function is vectorised over
counters and computes in exactly the arithmetic the device uses (uint32 words, 64-bit
products, float32 for the uniform and the two logarithms).
"""

from __future__ import annotations

import numpy as np

__all__ = ["philox4x32_10", "uniform", "gumbel", "token_word", "token_gumbel"]

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
_ROUNDS = 10


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Random123's Philox4x32-10.

    Parameters
    ----------
    c0, c1, c2, c3 : array_like of uint32
        Counter words (broadcast together).
    k0, k1 : array_like of uint32
        Key words (broadcast with the counters).

    Returns
    -------
    tuple of four numpy.ndarray of uint32
        The output words x0..x3.

    Examples
    --------
    >>> [hex(int(w)) for w in philox4x32_10(0, 0, 0, 0, 0, 0)]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(
        *(np.asarray(v).astype(np.uint32) for v in (c0, c1, c2, c3, k0, k1)))
    x0, x1, x2, x3 = (c.copy() for c in (c0, c1, c2, c3))
    k0 = k0.copy()
    k1 = k1.copy()
    with np.errstate(over="ignore"):
        for r in range(_ROUNDS):
            if r:
                # Key schedule bump before every round but the first (Random123).
                k0 = k0 + _W0
                k1 = k1 + _W1
            p0 = x0.astype(np.uint64) * _M0
            p1 = x2.astype(np.uint64) * _M1
            hi0 = (p0 >> np.uint64(32)).astype(np.uint32)
            lo0 = (p0 & _MASK32).astype(np.uint32)
            hi1 = (p1 >> np.uint64(32)).astype(np.uint32)
            lo1 = (p1 & _MASK32).astype(np.uint32)
            x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
    return x0, x1, x2, x3


def uniform(x0):
    """``U = ((x0 >> 9) * 2 + 1) * 2**-24`` as float32, strictly inside (0, 1).

    The 23 high bits give 2**23 equally spaced centres; float32 holds them exactly.
    """
    x0 = np.asarray(x0, dtype=np.uint32)
    return (((x0 >> np.uint32(9)).astype(np.float32) * np.float32(2) + np.float32(1))
            * np.float32(2.0 ** -24))


def gumbel(u):
    """``G = -log(-log(U))`` in float32, each logarithm correctly rounded to float32.

    Each log is taken in float64 and rounded once: that is the correctly rounded float32 log,
    the same on every machine (NumPy's own float32 log is a SIMD approximation that varies by
    CPU). Device ``logf`` is within 1 ulp of it; the Gumbel near-tie margin covers the rest.
    """
    u = np.asarray(u, dtype=np.float32)
    a = np.log(u.astype(np.float64)).astype(np.float32)
    return -(np.log(-a.astype(np.float64)).astype(np.float32))


def _split64(v):
    v = np.asarray(v).astype(np.uint64)
    return (v & _MASK32).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)


def token_word(seed, position, index):
    """The Philox word behind token ``index`` of one (seed, position) draw (SPEC §2).

    key = (seed low, seed high), counter = (index div 4, 0, position low, position high), and
    the word is ``x[index mod 4]`` of that call's output (x0, x1, x2, x3 in order): one Philox
    call serves four consecutive tokens. (Version 0.1.0 used x0 at counter (index, 0, ...).)

    Parameters
    ----------
    seed, position : int or array_like
        Taken modulo 2**64 (negative Python ints wrap, as on the device).
    index : array_like of int
        Token indices (< 2**32).

    Returns
    -------
    numpy.ndarray of uint32

    Examples
    --------
    >>> w = token_word(0, 0, [0, 1, 2, 3])
    >>> [hex(int(v)) for v in w]          # the first known answer: counter (0, 0, 0, 0), key (0, 0)
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    seed = np.asarray(seed)
    position = np.asarray(position)
    if seed.dtype.kind == "i":
        seed = seed.astype(np.int64).view(np.uint64)
    if position.dtype.kind == "i":
        position = position.astype(np.int64).view(np.uint64)
    k0, k1 = _split64(seed)
    p0, p1 = _split64(position)
    idx = np.asarray(index).astype(np.int64).astype(np.uint32)
    words = philox4x32_10(idx >> np.uint32(2), np.uint32(0), p0, p1, k0, k1)
    return np.choose((idx & np.uint32(3)).astype(np.intp), words)


def token_gumbel(seed, position, index):
    """Gumbel noise of token ``index`` for one (seed, position) draw: ``gumbel(uniform(w))``
    of :func:`token_word` (same parameters).

    Returns
    -------
    numpy.ndarray of float32
    """
    return gumbel(uniform(token_word(seed, position, index)))
