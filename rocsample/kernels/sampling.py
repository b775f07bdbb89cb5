"""Device code for SPEC §2 sampling: the shared helpers and the kernels' namespaces.

``build(cuda)`` compiles every sampling kernel with the numba CUDA-dialect module it is given
(numba.cuda, its simulator, or numba.hip posing as cuda); this file never imports numba. The
kernels themselves are in ``rocsample.kernels.sampling_fast`` (phase 1: one read of each row,
which finishes greedy and unfiltered rows, and the tile finalize of ``top_k <= 256`` chains) and
``rocsample.kernels.sampling_hist`` (the histogram and select passes of every other filtered
row); this module holds what they share: the order-preserving float keys, the finiteness test,
the online log-sum-exp, the logits loaders (float32; float16 and bfloat16 as uint16 bits,
widened exactly) and the position advance. The launcher (``rocsample.sampling_router``)
sequences the kernels.

Exactness rules shared by every kernel: winners are chosen by exact comparisons of (key,
-index) composites (ties to the lower index), top-p masses are fixed-point integers
``q_i = floor(exp(float64(x_i) - float64(x_max)) * 2**MASS_BITS + 0.5)`` summed in int64 (the
reference does the same arithmetic), so no token depends on split count, block size or atomic
order. Why float64 there (and only there: fp64 is slow on consumer parts such as gfx1151): the
difference of two float32 keys is identical everywhere in float64, and a float64 ``exp`` (CUDA/HIP
<= 1 ulp) agrees with NumPy's to an ulp or two, so a ``q_i`` can differ from the reference's by
one unit only when ``exp(..) * 2**40`` lies within a few float64 ulps of a half-integer (the
reference flags those rows). The min-p threshold is ``float64(x_max) + log(float64(min_p))`` in
both places. Only the logprob's log-sum-exp is a float reduction (deterministic for a given
launch shape, within ~1e-6 across shapes).

Blocks reduce through shared memory and ``syncthreads`` only (no warp intrinsics; any
power-of-two block size that is a multiple of the wavefront size, up to ``MAX_BLOCK``, works for
wave32 and wave64). One ``cuda.shared.array`` per source line (the simulator aliases two on one
line). Integers are int64 (numba unifies int64 with uint64 to float64); Philox uses uint64.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from rocsample.kernels import JIT_CACHE
from rocsample.kernels import atomics as _atomics
from rocsample.kernels import graph_cond as _graph_cond
from rocsample.kernels import philox as _philox
from rocsample.kernels import sampling_fast as _fast
from rocsample.kernels import sampling_hist as _hist
from rocsample.kernels import vload as _vload

#: Largest block the kernels accept; shared arrays are sized for it.
MAX_BLOCK = 512
#: Bins of the per-row histograms (``sampling_hist.HB``).
NBINS = _fast.HB
#: Fixed-point scale of top-p masses (each q_i <= 2**MASS_BITS). Sums (and the target) must
#: stay below 2**63: MAX_VOCAB_TOP_P * 2**MASS_BITS = 2**62.
MASS_BITS = 40
MAX_VOCAB_TOP_P = 1 << 22
if MAX_VOCAB_TOP_P << MASS_BITS >= 1 << 63:  # a module-level invariant, kept under python -O
    raise ImportError("MAX_VOCAB_TOP_P * 2**MASS_BITS must stay below 2**63")

# Scratch per row: int64 and float64 state columns (``sampling_fast.HS_*`` / ``HF_*``), and per
# (row, split) the partials of phase 1 and the split winners of the later passes.
N_SI = 26
N_SF = 8
N_PF = 5
N_PI = 7

STATUS_OK = 0
STATUS_NO_FINITE = 1

_SIGN = np.int64(0x80000000)
_LOW32 = np.int64(0xFFFFFFFF)
_F32_0 = np.float32(0.0)
_F32_1 = np.float32(1.0)
_F32_NINF = np.float32(-np.inf)
_F32_INF = np.float32(np.inf)
_F32_2M24 = np.float32(2.0 ** -24)
_F64_NINF = np.float64(-np.inf)


def build(cuda):
    """Compile the sampling kernels for ``cuda``.

    Returns
    -------
    types.SimpleNamespace
        ``float``, ``f16`` and ``bf16`` namespaces (logits as float32 arrays, or as the uint16
        bit patterns of float16 or bfloat16 logits), each holding ``fast``
        (``rocsample.kernels.sampling_fast.make``: phase 1 and the tile finalize) and ``hist``
        (``rocsample.kernels.sampling_hist.make``: the histogram and select passes); plus
        ``_advance_position_kernel``, ``f16_bits_f32`` (the float16 widening, a device
        function) and ``philox`` (``rocsample.kernels.philox.build``).
    """
    ph = _philox.build(cuda)
    # numba types closure *functions*, not attribute lookups on a namespace: bind it here.
    token_gumbel = ph.token_gumbel
    _at = _atomics.build(cuda)
    atomic_add = _at.add
    atomic_max = _at.max
    gc = _graph_cond.build(cuda, atomic_add)
    raw4, head4 = _vload.build(cuda)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def f32_bits(f):
        t = cuda.local.array(1, np.float32)
        t[0] = f
        return np.int64(t.view(np.uint32)[0])

    @cuda.jit(device=True, cache=JIT_CACHE)
    def bits_f32(b):
        t = cuda.local.array(1, np.uint32)
        t[0] = np.uint32(b)
        return t.view(np.float32)[0]

    @cuda.jit(device=True, cache=JIT_CACHE)
    def order_key(f):
        # Order-preserving map float32 -> [0, 2**32): negative floats reversed, positive ones
        # above them. -0.0 is folded into +0.0 so equal values tie (and go to the lower index).
        if f == _F32_0:
            f = _F32_0
        b = f32_bits(f)
        if b >= _SIGN:
            return _LOW32 - b
        return b + _SIGN

    @cuda.jit(device=True, cache=JIT_CACHE)
    def is_finite(v):
        # |v| < inf: false for NaN (an ordered compare) and both infinities; one compare with
        # an absolute-value operand (sm_90: one FSETP where v == v and two tests against the
        # infinities took three and a branch around them)
        return abs(v) < _F32_INF

    # Online log-sum-exp pairs (max, sum of exp(x - max)): one element into a float32 pair, two
    # float32 pairs (phase 1), two float64 pairs (the finalize folds). One definition for every
    # kernel, so their logprobs round alike.
    @cuda.jit(device=True, cache=JIT_CACHE)
    def lse_add32(lm, ls, v):
        if v > lm:
            return v, ls * np.float32(math.exp(lm - v)) + _F32_1
        return lm, ls + np.float32(math.exp(v - lm))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def lse_merge32(am, as_, bm, bs_):
        if bm > am:
            return bm, as_ * np.float32(math.exp(am - bm)) + bs_
        if bm > _F32_NINF:
            return am, as_ + bs_ * np.float32(math.exp(bm - am))
        return am, as_

    @cuda.jit(device=True, cache=JIT_CACHE)
    def lse_merge64(am, as_, bm, bs_):
        if bm > am:
            return bm, as_ * math.exp(am - bm) + bs_
        if bm > _F64_NINF:
            return am, as_ + bs_ * math.exp(bm - am)
        return am, as_

    @cuda.jit(device=True, cache=JIT_CACHE)
    def merge_max(sv, si, tid, o):
        # Slot o into slot tid of a (value, index) pair of shared arrays: the larger value, the
        # lower index on a tie.
        if sv[o] > sv[tid] or (sv[o] == sv[tid] and si[o] < si[tid]):
            sv[tid] = sv[o]
            si[tid] = si[o]

    def make(load, widen):
        hs = SimpleNamespace(is_finite=is_finite, order_key=order_key, token_gumbel=token_gumbel,
                             quad_gumbel=ph.quad_gumbel, quad_words=ph.quad_words,
                             uniform_comp=ph.uniform_comp, gumbel_fast_ud=ph.gumbel_fast_ud,
                             gumbel_cap_key=ph.gumbel_cap_key, merge_max=merge_max, bits_f32=bits_f32,
                             lse_add32=lse_add32, lse_merge32=lse_merge32,
                             lse_merge64=lse_merge64, atomic_add=atomic_add,
                             atomic_max=atomic_max, need_lane=gc.need_lane,
                             lane_reset=gc.lane_reset, raw4=raw4, head4=head4, widen=widen)
        fast = _fast.make(cuda, load, hs)
        return SimpleNamespace(fast=fast, hist=_hist.make(cuda, load, hs, fast.helpers))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_float(x, row, i):
        # i >= 0 always: an unsigned index skips numba's negative-index wraparound (three
        # integer instructions per load in the streaming loops).
        return np.float32(x[row, np.uint64(i)])

    @cuda.jit(device=True, cache=JIT_CACHE)
    def widen_float(v):
        return np.float32(v)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def widen_bf16(v):
        # bfloat16 is the high half of a float32: widening is a 16-bit shift of the bits.
        return bits_f32(np.int64(v) << np.int64(16))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_bf16(x, row, i):
        return widen_bf16(x[row, np.uint64(i)])

    # float16 logits travel as their uint16 bits (numba-hip 0.2 has no float16 type) and are
    # widened exactly here: by the hardware conversion on numba-cuda (the one with libdevice),
    # with integer operations elsewhere (numba-hip, the simulator). Both give the same float32.
    if getattr(cuda, "libdevice", None) is not None:

        @cuda.jit(device=True, cache=JIT_CACHE)
        def f16_bits_f32(h):
            t = cuda.local.array(1, np.uint16)
            t[0] = h
            return np.float32(t.view(np.float16)[0])

    else:

        @cuda.jit(device=True, cache=JIT_CACHE)
        def f16_bits_f32(h):
            b = np.int64(h)
            mag = b & 0x7FFF
            if mag >= 0x7C00:  # infinities and NaNs, payload kept
                out = (mag << 13) | 0x7F800000
            elif mag >= 0x0400:  # normal numbers: the exponent re-biased by 127 - 15
                out = (mag << 13) + (112 << 23)
            else:  # zero and subnormals: the mantissa times 2**-24, exact in float32
                out = f32_bits(np.float32(mag) * _F32_2M24)
            return bits_f32(out | ((b & 0x8000) << 16))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_f16(x, row, i):
        return f16_bits_f32(x[row, np.uint64(i)])

    @cuda.jit(cache=JIT_CACHE)
    def _advance_position_kernel(pos, n_rows):
        r = cuda.grid(1)
        if r < n_rows:
            pos[r] = pos[r] + np.uint64(1)

    return SimpleNamespace(float=make(load_float, widen_float), f16=make(load_f16, f16_bits_f32),
                           bf16=make(load_bf16, widen_bf16),
                           f16_bits_f32=f16_bits_f32,
                           _advance_position_kernel=_advance_position_kernel,
                           _lane_gate_kernel=gc._lane_gate_kernel, philox=ph)
