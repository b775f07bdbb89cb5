"""Philox4x32-10 and Gumbel noise as device functions (SPEC §2).

``build(cuda)`` returns device functions compiled with the numba CUDA-dialect module it is
given (numba.cuda, its simulator, or numba.hip posing as cuda); this file never imports numba.

Arithmetic notes (why the casts):

* Every Philox word is carried in a uint64 and masked to 32 bits. numba widens uint32 arithmetic
  to 64 bits anyway; doing it explicitly makes the 32x32->64 products unsigned and exact
  (both factors < 2**32) and keeps one type per variable (numba unifies uint64 with int64
  to float64, which would silently ruin the bits). On numba-cuda the products are
  ``mul.wide.u32`` by inline PTX (``_mul_wide_u32``): NVVM's 64-bit ``mul.lo`` of masked
  words left ptxas an add of zero after each (docs/PERF_NOTES.md, thirty-seventh session).
* The uniform and both logarithms are float32: constants are ``np.float32`` (a Python float
  literal would promote to float64 in numba) and ``np.float32(math.log(u))`` is ``logf`` on the
  device. The simulator evaluates ``math.log`` in float64 and rounds, which is the correctly
  rounded float32 log; NumPy's float32 log and CUDA's ``logf`` (<= 1 ulp) can differ from it by
  one ulp. The reference's Gumbel near-tie margin (``GUMBEL_MARGIN``) covers that.
* ``gumbel_fast`` approximates ``gumbel(uniform(x))`` within a bound; it defines nothing: the
  hardware's approximate log2 (numba-cuda: ``lg2.approx.ftz.f32``, one MUFU instruction;
  its inputs are never denormal, so the flush changes no bit) where ``-log(u)`` is well
  conditioned, a five-term series of ``-log1p(-d)``
  (d = 1 - u, exact) where it is not. It is within ``GUMBEL_FAST_ERR`` of the exact noise for
  every 32-bit word x (checked for all 2**23 uniforms on the device:
  tests/kernels/test_sampling_philox.py), and the kernels use it only to decide which tokens
  could win; every winner's score is recomputed with ``gumbel``. ``CAP_BASE - gumbel_cap_key(d)
  * CAP_SLOPE`` is an upper bound of the exact noise from d's bits read as an integer (the
  bits' log2 chord). Elsewhere than numba-cuda (the simulator,
  numba-hip) the logs of ``gumbel_fast`` are the exact ones.
"""

from __future__ import annotations

import math

import numpy as np

from rocsample.kernels import JIT_CACHE, _numba_cuda
from rocsample.kernels import nvvm as _nvvm

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
_FSTEP23 = np.float32(2.0 ** -23)
_FSTEP23N = np.float32(-(2.0 ** -23))
_F2N = np.float32(-2.0)
_F1M = np.float32(1.0 - 2.0 ** -24)
_F24M = np.float32(2.0 ** 24 - 1.0)
#: |gumbel_fast(x) - gumbel(uniform(x))| is at most this for every word x (a bound with room:
#: the device test asserts half of it over all 2**23 uniforms).
GUMBEL_FAST_ERR = 2.0 ** -14
#: Below this d = 1 - u, -log(u) is the series d + d^2/2 + ... + d^5/5 (truncation < 2e-7
#: relative); above it the approximate log2 (absolute error ~2**-22, relative < 3e-6 there).
_D_SERIES = np.float32(1.0 / 16.0)
_LN2 = np.float32(math.log(2.0))
_C2 = np.float32(1.0 / 2.0)
_C3 = np.float32(1.0 / 3.0)
_C4 = np.float32(1.0 / 4.0)
_C5 = np.float32(1.0 / 5.0)
#: The noise's cap: gumbel(u) <= CAP_BASE - gumbel_cap_key(d) * CAP_SLOPE for every uniform u
#: (d = 1 - u, exact), as reals from these float32 operands. -log(-log u) <= -log(d) (as
#: -log u >= d), and log2(d) >= bits(d) * 2**-23 - 127 for a positive normal float32 d (log2 of
#: the mantissa m in [1, 2) lies above its chord m - 1): so -log(d) <= (127 - bits(d) * 2**-23)
#: * log 2. CAP_BASE's room (2**-10) covers the key's rounding (bits(d) < 2**30 into float32:
#: 2**5 of 2**30, 2**-18 * log 2 on the cap), the slope's (2**-24 relative, under 2**-17 at
#: 127 * log 2), the device logs' few ulps in gumbel and gumbel_fast's GUMBEL_FAST_ERR below.
#: Over the 2**23 uniforms the cap exceeds the exact noise by 0.07 on average where the noise
#: is above 2 (the noises that lift a token over a bound); from d's exponent alone (the form
#: before the thirty-ninth session) by 0.42 (tests/kernels/test_sampling_philox.py checks
#: every uniform).
CAP_BASE = np.float32(127.0 * math.log(2.0) + 2.0 ** -10)
CAP_SLOPE = np.float32(math.log(2.0) * 2.0 ** -23)


def _low_word_ptx(ret, asm: str, constraints: str):
    """The codegen of an intrinsic whose uint64 arguments, each below 2**32, reach the inline PTX
    ``asm`` as their low 32 bits (``ret``: the llvmlite type of its one result)."""
    from llvmlite import ir

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        lo = [builder.trunc(v, i32) for v in args]
        return builder.asm(ir.FunctionType(ret, [i32] * len(lo)), asm, constraints, lo,
                           side_effect=False)

    return codegen


def _mul_wide_u32(cuda):
    """numba-cuda: the product of two words held in uint64s below 2**32 (a Philox round's
    multiply), as one ``mul.wide.u32`` (inline PTX, an intrinsic); elsewhere None.

    Written as a uint64 product of masked operands (what numba's integer typing gives), NVVM
    emits ``mul.lo.s64`` and ptxas does not drop the high halves it knows are zero: on sm_90
    each multiply became an ``IMAD.WIDE.U32`` plus an add of a uniform register holding zero
    (about 24 instructions a Philox call, six a token on the drawing variants' fast pass).
    The same bits either way (both operands are below 2**32).
    """
    if not _numba_cuda(cuda):
        return None
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def mul_wide_u32(typingctx, a, m):
        if a != types.uint64 or m != types.uint64:
            return None
        return (types.uint64(types.uint64, types.uint64),
                _low_word_ptx(ir.IntType(64), "mul.wide.u32 $0, $1, $2;", "=l,r,r"))

    return mul_wide_u32


def _k23_f32(cuda):
    """numba-cuda: a word's 23 high bits as a float32 (``k`` of ``uniform``), as inline PTX
    ``shr.u32`` and ``cvt.rn.f32.u32`` on the word's low 32 bits (an intrinsic); elsewhere None.

    From the masked uint64 word, NVVM's 64-bit shift became two instructions on sm_90 (an AND
    with ``0xfffffe00`` and a 64-bit funnel shift) before the conversion: one a token more on
    the drawing variants' fast pass. The same value either way (the word is below 2**32).
    """
    if not _numba_cuda(cuda):
        return None
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def k23_f32(typingctx, x):
        if x != types.uint64:
            return None
        return (types.float32(types.uint64),
                _low_word_ptx(ir.FloatType(),
                              "{ .reg .b32 t; shr.u32 t, $1, 9; cvt.rn.f32.u32 $0, t; }", "=f,r"))

    return k23_f32


def _lg2_approx_ftz(cuda):
    """numba-cuda: ``lg2.approx.ftz.f32`` (one ``MUFU.LG2``; rocsample/kernels/nvvm.py);
    elsewhere None.

    ``gumbel_fast``'s two logs take only normal inputs (u >= 2**-24; -log(u) >= 2**-24 too),
    where this and the ``lg2.approx.f32`` that a device function's ``fastmath`` log2 became
    give the same bits, without ptxas's denormal test and its two predicated fix-ups: three
    instructions a log, six a token on the drawing variants' fast pass (sm_90: 673 -> 625 SASS
    instructions a round of 8 tokens).
    """
    return _nvvm.approx_ftz(cuda, "lg2")


def build(cuda):
    """Compile the Philox device functions for ``cuda``.

    Returns
    -------
    types.SimpleNamespace
        ``philox4x32_10(c0, c1, c2, c3, k0, k1, out)`` writes the four words into ``out``
        (a length-4 uint64 array); ``philox_x0(c0, c1, c2, c3, k0, k1)`` returns only x0;
        ``uniform(x)`` and ``gumbel(u)`` are float32 (``uniform_comp(x)``: 1 - ``uniform(x)``,
        exactly); ``token_word(seed, position, index)`` is
        the Philox word of token ``index`` (SPEC §2: word ``index mod 4`` of the call at counter
        ``(index div 4, 0, position low, position high)``); ``token_gumbel(seed, position,
        index)`` its Gumbel noise; ``quad_gumbel(seed, position, c)`` the noises of the four
        tokens ``4c .. 4c + 3`` from one Philox call (a 4-tuple of float32);
        ``gumbel_fast(x)`` the cheap approximation of ``gumbel(uniform(x))`` (module notes),
        ``gumbel_fast_ud(u, d)`` the same from the uniform u and d = 1 - u;
        ``gumbel_cap_key(d)`` the float32 of d's bits, so that ``CAP_BASE - key * CAP_SLOPE``
        bounds the noise from above (module constants), and
        ``quad_words(seed, position, c)`` the four raw words of quad c.
    """
    from types import SimpleNamespace

    # (elsewhere the plain product, inline: the simulator runs a device function call as a
    # Python call, which doubled the time of its Philox rounds)
    mulw = _mul_wide_u32(cuda)
    wide = mulw is not None

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
            if wide:
                p0 = mulw(x0, _M0)
                p1 = mulw(x2, _M1)
            else:
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

    one_fma = _numba_cuda(cuda)
    k23 = _k23_f32(cuda)

    def _of_k(m23, c23, m2, c2):
        # k = the word's 23 high bits -> k * m23 + c23 by one FFMA on numba-cuda, (k * m2 + c2) *
        # 2**-24 elsewhere (both exact at every step for the two forms below)
        @cuda.jit(device=True, cache=JIT_CACHE)
        def of_k(x0):
            if one_fma:
                return k23(np.uint64(x0)) * m23 + c23
            k = np.float32(np.uint32(np.uint64(x0) >> _S9))
            return (k * m2 + c2) * _FSTEP

        return of_k

    # uniform(x): 23 high bits k -> odd multiples (2k + 1) * 2**-24: exactly representable,
    # strictly in (0, 1). (Converted from 32 bits: the 64-bit integer-to-float conversion is the
    # slower one.) Every step of either form is exact, so both give the same bits: on numba-cuda
    # k * 2**-23 + 2**-24, one FFMA (the drawing variants' fast pass one instruction a token
    # shorter on sm_90, no 1.0 held for it); elsewhere (k * 2 + 1) * 2**-24, which numba-hip's
    # gfx1151 / gfx942 code holds in 3-4 fewer VGPRs.
    uniform = _of_k(_FSTEP23, _FSTEP, _F2, _F1)
    # uniform_comp(x): 1 - uniform(x), exactly (the same bits as _F1 - uniform(x)): (2**24 - 1 -
    # 2k) * 2**-24; on numba-cuda k * -2**-23 + (1 - 2**-24). The fast pass tests every token's
    # cap from it and takes u = 1 - d (exact) only for the tokens that pass (one instruction
    # fewer a token than u, then d).
    uniform_comp = _of_k(_FSTEP23N, _F1M, _F2N, _F24M)

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

    # (numba-cuda: the hardware's approximate log2; elsewhere the exact one)
    _log2_fast = _lg2_approx_ftz(cuda)
    if _log2_fast is None:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def _log2_fast(x):
            return np.float32(math.log2(x))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def gumbel_fast_ud(u, d):
        # gumbel_fast of the uniform u, given d = 1 - u (exact: both are multiples of 2**-24)
        if d < _D_SERIES:
            e = d * (_F1 + d * (_C2 + d * (_C3 + d * (_C4 + d * _C5))))
        else:
            e = -_log2_fast(u) * _LN2
        return -_log2_fast(e) * _LN2

    @cuda.jit(device=True, cache=JIT_CACHE)
    def gumbel_fast(x0):
        u = uniform(x0)
        return gumbel_fast_ud(u, _F1 - u)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def gumbel_cap_key(d):
        # d's bits (d = 1 - u > 0) as a float32: CAP_BASE - key * CAP_SLOPE >= gumbel(u) and
        # gumbel_fast (CAP_BASE's notes). The caller folds the product into its own test
        # (sampling_fast's fold_fast: s - key * CAP_SLOPE against a bound less CAP_BASE).
        t = cuda.local.array(1, np.float32)
        t[0] = d
        return np.float32(np.uint32(t.view(np.uint32)[0]))

    return SimpleNamespace(philox4x32_10=philox4x32_10, philox_x0=philox_x0, uniform=uniform,
                           gumbel=gumbel, token_word=token_word, token_gumbel=token_gumbel,
                           quad_gumbel=quad_gumbel, gumbel_fast=gumbel_fast, quad_words=_quad_words,
                           uniform_comp=uniform_comp,
                           gumbel_fast_ud=gumbel_fast_ud, gumbel_cap_key=gumbel_cap_key)
