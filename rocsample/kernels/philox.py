"""Philox4x32-10 and Gumbel noise as device functions (SPEC §2).

``build(cuda)`` returns device functions compiled with the numba CUDA-dialect module it is
given (numba.cuda, its simulator, or numba.hip posing as cuda); this file never imports numba.

Arithmetic notes (why the casts):

* Every Philox word is carried in a uint64 and masked to 32 bits. numba widens uint32 arithmetic
  to 64 bits anyway; doing it explicitly makes the 32x32->64 products unsigned and exact
  (both factors < 2**32) and keeps one type per variable (numba unifies uint64 with int64
  to float64, which would silently ruin the bits).
* The uniform and both logarithms are float32: constants are ``np.float32`` (a Python float
  literal would promote to float64 in numba) and ``np.float32(math.log(u))`` is ``logf`` on the
  device. The simulator evaluates ``math.log`` in float64 and rounds, which is the correctly
  rounded float32 log; NumPy's float32 log and CUDA's ``logf`` (<= 1 ulp) can differ from it by
  one ulp. The reference's Gumbel near-tie margin (``GUMBEL_MARGIN``) covers that.
"""

from __future__ import annotations

import math

import numpy as np

from rocsample.kernels import JIT_CACHE

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S9 = np.uint64(9)
_S2 = np.uint64(2)
_LOW2 = np.uint64(3)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U3 = np.uint64(3)
_F1 = np.float32(1.0)
_F2 = np.float32(2.0)
_FSTEP = np.float32(2.0 ** -24)


def build(cuda):
    """Compile the Philox device functions for ``cuda``.

    Returns
    -------
    types.SimpleNamespace
        ``philox4x32_10(c0, c1, c2, c3, k0, k1, out)`` writes the four words into ``out``
        (a length-4 uint64 array); ``philox_x0(c0, c1, c2, c3, k0, k1)`` returns only x0;
        ``uniform(x)`` and ``gumbel(u)`` are float32; ``token_word(seed, position, index)`` is
        the Philox word of token ``index`` (SPEC §2: word ``index mod 4`` of the call at counter
        ``(index div 4, 0, position low, position high)``); ``token_gumbel(seed, position,
        index)`` its Gumbel noise; ``quad_gumbel(seed, position, c)`` the noises of the four
        tokens ``4c .. 4c + 3`` from one Philox call (a 4-tuple of float32).
    """
    from types import SimpleNamespace

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _rounds(c0, c1, c2, c3, k0, k1):
        x0 = np.uint64(c0) & _MASK
        x1 = np.uint64(c1) & _MASK
        x2 = np.uint64(c2) & _MASK
        x3 = np.uint64(c3) & _MASK
        key0 = np.uint64(k0) & _MASK
        key1 = np.uint64(k1) & _MASK
        for r in range(10):
            if r > 0:
                key0 = (key0 + _W0) & _MASK
                key1 = (key1 + _W1) & _MASK
            p0 = x0 * _M0
            p1 = x2 * _M1
            y0 = ((p1 >> _S32) ^ x1 ^ key0) & _MASK
            y1 = p1 & _MASK
            y2 = ((p0 >> _S32) ^ x3 ^ key1) & _MASK
            y3 = p0 & _MASK
            x0 = y0
            x1 = y1
            x2 = y2
            x3 = y3
        return x0, x1, x2, x3

    @cuda.jit(device=True, cache=JIT_CACHE)
    def philox4x32_10(c0, c1, c2, c3, k0, k1, out):
        x0, x1, x2, x3 = _rounds(c0, c1, c2, c3, k0, k1)
        out[0] = x0
        out[1] = x1
        out[2] = x2
        out[3] = x3

    @cuda.jit(device=True, cache=JIT_CACHE)
    def philox_x0(c0, c1, c2, c3, k0, k1):
        x0, _x1, _x2, _x3 = _rounds(c0, c1, c2, c3, k0, k1)
        return x0

    @cuda.jit(device=True, cache=JIT_CACHE)
    def uniform(x0):
        # 23 high bits -> odd multiples of 2**-24: exactly representable, strictly in (0, 1).
        # (converted from 32 bits: the 64-bit integer-to-float conversion is the slower one)
        return (np.float32(np.uint32(np.uint64(x0) >> _S9)) * _F2 + _F1) * _FSTEP

    @cuda.jit(device=True, cache=JIT_CACHE)
    def gumbel(u):
        a = np.float32(math.log(u))
        return -np.float32(math.log(-a))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _quad_words(seed, position, c):
        s = np.uint64(seed)
        p = np.uint64(position)
        return _rounds(np.uint64(c), np.uint64(0), p & _MASK, p >> _S32, s & _MASK, s >> _S32)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def token_word(seed, position, index):
        i = np.uint64(index)
        x0, x1, x2, x3 = _quad_words(seed, position, i >> _S2)
        w = i & _LOW2   # word index mod 4, picked by selects (a dynamic index would spill)
        x = x0
        if w == _U1:
            x = x1
        if w == _U2:
            x = x2
        if w == _U3:
            x = x3
        return x

    @cuda.jit(device=True, cache=JIT_CACHE)
    def token_gumbel(seed, position, index):
        return gumbel(uniform(token_word(seed, position, index)))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def quad_gumbel(seed, position, c):
        x0, x1, x2, x3 = _quad_words(seed, position, c)
        return (gumbel(uniform(x0)), gumbel(uniform(x1)), gumbel(uniform(x2)),
                gumbel(uniform(x3)))

    return SimpleNamespace(philox4x32_10=philox4x32_10, philox_x0=philox_x0, uniform=uniform,
                           gumbel=gumbel, token_word=token_word, token_gumbel=token_gumbel,
                           quad_gumbel=quad_gumbel)
