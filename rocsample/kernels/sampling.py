"""Device code for SPEC §2 sampling: split-phase reductions, radix select, Gumbel-max draw.

``build(cuda)`` compiles every kernel with the numba CUDA-dialect module it is given; this file
never imports numba. The launcher (``rocsample.sampling``) sequences the kernels; the scheme:

1. ``_sample_partials_kernel`` (grid splits x rows): one read of each row slice. Per split:
   the maximum finite logit and its lowest index, the finite count, an online
   (max, sum exp) pair for the log-sum-exp, and - for rows with no filter - the best Gumbel
   score ``g_i = float32(float32(l_i * inv_t) + G_i)``.
2. ``_sample_finalize_kernel`` (one block per row): reduces the partials. Greedy rows, unfiltered
   rows and rows with no finite logit are finished here (token, logprob, status). Filtered rows
   get their state: min-p threshold (float64), the top-k radix select armed.
3. Filters reduce to one survivor set that is a *prefix* of the order (key desc, index asc)
   - key = raw logit (llama) or scaled logit (vllm). A prefix is held as a boundary
   ``(v, cut)``: the tokens with key > v plus those with key == v and index <= cut.
   It is found by a radix select on order-preserving keys, three digit passes (11, 11, 10 bits):
   ``_select_hist_kernel`` (grid splits x rows) builds per-row histograms of member counts
   (top-k) or member masses (top-p) for the current digit with integer atomics;
   ``_select_step_kernel`` (one block per row) picks the digit. Top-p masses are fixed point,
   ``q_i = floor(exp(float64(x_i) - float64(x_max)) * 2**40 + 0.5)`` as int64 (x the float32
   key), so sums are exact and independent of split count, block size and atomic order, and
   the prefix ends at the first token whose cumulative mass reaches the int64
   ``target = ceil(float64(top_p) * float64(Z))``; the reference (``rocsample.reference.
   sampling``) does the same integer arithmetic. When the boundary key has more tied tokens
   than the prefix takes, ``_tie_cut_kernel`` (one block per row) finds the index cut among
   them in index order (ties go to the lower index).

   Why float64 there (and only there: fp64 is slow on consumer parts such as gfx1151): the
   subtraction of two float32 keys is exact-ish and identical everywhere in float64, and a
   float64 ``exp`` (CUDA/HIP <= 1 ulp) agrees with NumPy's to an ulp or two, so a ``q_i`` can
   differ from the reference's by one unit, and only when ``exp(..) * 2**40`` lies within a few
   float64 ulps of a half-integer (essentially never). A float32 ``exp`` would move every
   ``q_i`` by ~2**17 units and put a row's top-p crossing "on the boundary" whenever a single
   token's mass is small (flat rows at large vocabularies: most of them). The float64 ``exp``
   runs only in the top-p histogram passes, only for tokens still in play (the first pass
   needs all members for Z; later passes only those in the chosen digit bucket).
   The min-p threshold is ``float64(x_max) + log(float64(min_p))`` in both places as well
   (exactly ``x_max`` for ``min_p == 1``).
4. ``_draw_partials_kernel`` (grid splits x rows) + ``_draw_finalize_kernel`` (one block per
   row): the Gumbel-max over the members (finite, inside the boundary, passing min-p).

The streaming loops (partials, histogram, draw) are unrolled by 4: each thread issues four
independent loads (indices i, i+bs, i+2bs, i+3bs) before it uses any, to keep enough bytes in
flight, then folds them in increasing index order through one per-element device function
(``stats_item``, ``hist_item``, ``draw_item``); per-row state (boundary, min-p threshold) is
read into registers before the loop.

Every comparison that picks a winner is exact (max with index tie-break, integer sums), so the
token never depends on split count or block size. Only the logprob's log-sum-exp is a float
reduction (deterministic for a given launch shape, within ~1e-6 across shapes).

Blocks reduce through shared memory and ``syncthreads`` only (no warp intrinsics; any block
size that is a multiple of the wavefront size, up to ``MAX_BLOCK``, works for wave32 and
wave64). One ``cuda.shared.array`` per source line (the simulator aliases two on one line).
Integers are int64 throughout (numba unifies int64 with uint64 to float64); only Philox uses
uint64 internally.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from rocsample.kernels import JIT_CACHE
from rocsample.kernels import atomics as _atomics
from rocsample.kernels import philox as _philox
from rocsample.kernels import sampling_fast as _fast
from rocsample.kernels import sampling_hist as _hist

#: Largest block the kernels accept; shared arrays are sized for it.
MAX_BLOCK = 512
#: Radix digit passes over the 32-bit keys: (shift, width), most significant first. The
#: schedule is a launch argument: any schedule covering bits 31..0 with widths <= 11 works.
RADIX_PASSES = ((21, 11), (10, 11), (0, 10))
#: Smaller digits for the simulator, whose per-thread Python cost is in the bin loops.
RADIX_PASSES_SMALL = ((24, 8), (16, 8), (8, 8), (0, 8))
NBINS = 1 << 11
#: Fixed-point scale of top-p masses (each q_i <= 2**MASS_BITS). Sums (and the target) must
#: stay below 2**63: MAX_VOCAB_TOP_P * 2**MASS_BITS = 2**62.
MASS_BITS = 40
MAX_VOCAB_TOP_P = 1 << 22
if MAX_VOCAB_TOP_P << MASS_BITS >= 1 << 63:  # a module-level invariant, kept under python -O
    raise ImportError("MAX_VOCAB_TOP_P * 2**MASS_BITS must stay below 2**63")

# Per-row int64 state columns.
SI_MODE, SI_NFIN, SI_SEL, SI_HI, SI_RANK, SI_ABOVE_N, SI_ABOVE_Q, SI_BND, SI_BV, SI_BCUT, \
    SI_TIEJ, SI_TIEV, SI_MINP, SI_VLLM, SI_TIEKIND, SI_TARGET = range(16)
N_SI = 16
# Per-row float64 state columns (column 4 is free: the top-p target is int64, SI_TARGET).
SF_M, SF_LSE, SF_INVT, SF_THR, _SF_FREE, SF_REF = range(6)
N_SF = 8
# Partials per (row, split).
PF_MAXV, PF_G, PF_LM, PF_LS = range(4)
N_PF = 4
PI_MAXI, PI_GI, PI_CNT = range(3)
N_PI = 4

MODE_DONE = 0
MODE_DRAW = 1
SEL_NONE = 0
SEL_COUNT = 1
SEL_MASS = 2

STATUS_OK = 0
STATUS_NO_FINITE = 1

_I64_0 = np.int64(0)
_I64_1 = np.int64(1)
_SIGN = np.int64(0x80000000)
_LOW32 = np.int64(0xFFFFFFFF)
_F32_0 = np.float32(0.0)
_F32_1 = np.float32(1.0)
_F32_NINF = np.float32(-np.inf)
_F32_INF = np.float32(np.inf)
#: The running best Gumbel score of a thread before its first candidate. A scaled logit may
#: overflow to -inf (l = -3e38 at T = 0.5), so a candidate's score can be -inf, and a fold that
#: starts at -inf with a strict '>' would never take it (a row whose every score is -inf then
#: had no winner: token n, or garbage). The folds test ``not g <= best`` (scores are never NaN):
#: true for every first candidate against NaN, and exactly ``g > best`` after it; a thread left
#: without a candidate turns its NaN back into -inf before the block reduction.
_F32_NONE = np.float32(np.nan)
_F32_2M24 = np.float32(2.0 ** -24)
_F64_NINF = np.float64(-np.inf)
_F64_NAN = np.float64(np.nan)
_F64_0 = np.float64(0.0)
_F64_1 = np.float64(1.0)
_MASS_SCALE = np.float64(2.0 ** MASS_BITS)
_F64_HALF = np.float64(0.5)
_BIG = np.int64(1) << np.int64(62)
#: Tokens per thread per tile in the tie-cut scan.
_TIE_ITEMS = np.int64(16)


def build(cuda):
    """Compile the sampling kernels for ``cuda``.

    Returns
    -------
    types.SimpleNamespace
        ``float``, ``f16`` and ``bf16`` namespaces (logits as float32 arrays, or as the uint16
        bit patterns of float16 or bfloat16 logits), each holding ``_sample_partials_kernel``,
        ``_sample_finalize_kernel``, ``_select_begin_kernel``, ``_select_hist_kernel``,
        ``_select_step_kernel``, ``_tie_cut_kernel``, ``_draw_partials_kernel``,
        ``_draw_finalize_kernel``, and ``fast`` (the two-kernel path of
        ``rocsample.kernels.sampling_fast.make``); plus ``_advance_position_kernel``,
        ``f16_bits_f32`` (the float16 widening, a device function) and ``philox``
        (``rocsample.kernels.philox.build``).
    """
    ph = _philox.build(cuda)
    # numba types closure *functions*, not attribute lookups on a namespace: bind it here.
    token_gumbel = ph.token_gumbel
    atomic_add = _atomics.build(cuda).add

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
        return v == v and v != _F32_INF and v != _F32_NINF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_filtered(k, p, mp, n):
        return (k > 0 and k < n) or p < _F32_1 or mp > _F32_0

    # Per-element bodies of the streaming loops. Each loop is unrolled by 4: a thread issues
    # its four loads (indices i, i+bs, i+2bs, i+3bs) before using any of them, then folds
    # the values in increasing index order, so tie-breaks and integer sums are unchanged.
    # Online log-sum-exp pairs (max, sum of exp(x - max)): one element into a float32 pair, two
    # float32 pairs (phase 1), two float64 pairs (phase 2). One definition for both paths, so
    # their logprobs round alike.
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
    def stats_item(v, i, draw, want_lp, inv_t, sd, ps, bv, bi, bg, bgi, cnt, lm, ls):
        if is_finite(v):
            cnt += _I64_1
            # Threads walk indices upwards, so strict '>' keeps the lowest index.
            if v > bv:
                bv = v
                bi = i
            if draw:
                g = np.float32(v * inv_t) + token_gumbel(sd, ps, i)
                if not g <= bg:   # first or greater: see _F32_NONE
                    bg = g
                    bgi = i
            if want_lp:
                lm, ls = lse_add32(lm, ls, v)
        return bv, bi, bg, bgi, cnt, lm, ls

    @cuda.jit(device=True, cache=JIT_CACHE)
    def in_bound(key, i, bnd, bkey, bcut):
        # Inside the row's survivor prefix (boundary (bkey, bcut), when bnd): key > bkey, or
        # key == bkey and i <= bcut. Callers read the row state once, before their loop.
        return (not bnd) or key > bkey or (key == bkey and i <= bcut)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def above_thr(kv, minp_on, thr):
        # Passes min-p (when minp_on): float64(kv) >= the row's threshold.
        return (not minp_on) or np.float64(kv) >= thr

    @cuda.jit(device=True, cache=JIT_CACHE)
    def merge_max(sv, si, tid, o):
        # Slot o into slot tid of a (value, index) pair of shared arrays: the larger value, the
        # lower index on a tie.
        if sv[o] > sv[tid] or (sv[o] == sv[tid] and si[o] < si[tid]):
            sv[tid] = sv[o]
            si[tid] = si[o]

    @cuda.jit(device=True, cache=JIT_CACHE)
    def block_argmax(sv, si, tid, bs):
        # Tree reduction of sv[0:bs] / si[0:bs] into slot 0 (every thread of the block calls it,
        # after a syncthreads that published the slots).
        step = 1
        while step < bs:
            step *= 2
        step //= 2
        while step > 0:
            if tid < step and tid + step < bs:
                merge_max(sv, si, tid, tid + step)
            cuda.syncthreads()
            step //= 2

    @cuda.jit(device=True, cache=JIT_CACHE)
    def stats_tree(sm_v, sm_i, sm_g, sm_gi, sm_c, sm_lm, sm_ls, tid, bs, wide):
        # Tree reduction of the per-thread stats into slot 0: maximum and best Gumbel score
        # (lowest index on ties), finite count, log-sum-exp pair (float64 merge when ``wide``,
        # the float32 one of phase 1 otherwise). Every thread of the block calls it, after a
        # syncthreads that published the slots.
        step = 1
        while step < bs:
            step *= 2
        step //= 2
        while step > 0:
            if tid < step and tid + step < bs:
                o = tid + step
                merge_max(sm_v, sm_i, tid, o)
                merge_max(sm_g, sm_gi, tid, o)
                sm_c[tid] += sm_c[o]
                if wide:
                    sm_lm[tid], sm_ls[tid] = lse_merge64(sm_lm[tid], sm_ls[tid], sm_lm[o],
                                                         sm_ls[o])
                else:
                    sm_lm[tid], sm_ls[tid] = lse_merge32(sm_lm[tid], sm_ls[tid], sm_lm[o],
                                                         sm_ls[o])
            cuda.syncthreads()
            step //= 2

    def make(load):
        @cuda.jit(cache=JIT_CACHE)
        def _sample_partials_kernel(x, n, chunk, temp, topk, topp, minp, seed, pos, want_lp,
                                    pf, pi):
            split = cuda.blockIdx.x
            row = cuda.blockIdx.y
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            sm_v = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_i = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_g = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_gi = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_c = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_lm = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_ls = cuda.shared.array(MAX_BLOCK, np.float32)
            t = temp[row]
            draw = t > _F32_0 and not row_filtered(topk[row], topp[row], minp[row], n)
            inv_t = _F32_1
            if t > _F32_0:
                inv_t = _F32_1 / t
            sd = seed[row]
            ps = pos[row]
            lo = np.int64(split) * chunk
            hi = min(lo + chunk, n)
            bv = _F32_NINF
            bi = np.int64(n)
            bg = _F32_NONE
            bgi = np.int64(n)
            cnt = _I64_0
            lm = _F32_NINF
            ls = _F32_0
            bs1 = np.int64(bs)
            bs2 = bs1 + bs1
            bs3 = bs2 + bs1
            bs4 = bs2 + bs2
            i = lo + tid
            while i + bs3 < hi:
                v0 = load(x, row, i)
                v1 = load(x, row, i + bs1)
                v2 = load(x, row, i + bs2)
                v3 = load(x, row, i + bs3)
                bv, bi, bg, bgi, cnt, lm, ls = stats_item(v0, i, draw, want_lp, inv_t, sd, ps,
                                                          bv, bi, bg, bgi, cnt, lm, ls)
                bv, bi, bg, bgi, cnt, lm, ls = stats_item(v1, i + bs1, draw, want_lp, inv_t, sd,
                                                          ps, bv, bi, bg, bgi, cnt, lm, ls)
                bv, bi, bg, bgi, cnt, lm, ls = stats_item(v2, i + bs2, draw, want_lp, inv_t, sd,
                                                          ps, bv, bi, bg, bgi, cnt, lm, ls)
                bv, bi, bg, bgi, cnt, lm, ls = stats_item(v3, i + bs3, draw, want_lp, inv_t, sd,
                                                          ps, bv, bi, bg, bgi, cnt, lm, ls)
                i += bs4
            while i < hi:
                v0 = load(x, row, i)
                bv, bi, bg, bgi, cnt, lm, ls = stats_item(v0, i, draw, want_lp, inv_t, sd, ps,
                                                          bv, bi, bg, bgi, cnt, lm, ls)
                i += bs1
            if bgi == np.int64(n):
                bg = _F32_NINF
            sm_v[tid] = bv
            sm_i[tid] = bi
            sm_g[tid] = bg
            sm_gi[tid] = bgi
            sm_c[tid] = cnt
            sm_lm[tid] = lm
            sm_ls[tid] = ls
            cuda.syncthreads()
            stats_tree(sm_v, sm_i, sm_g, sm_gi, sm_c, sm_lm, sm_ls, tid, bs, False)
            if tid == 0:
                pf[row, split, PF_MAXV] = sm_v[0]
                pf[row, split, PF_G] = sm_g[0]
                pf[row, split, PF_LM] = sm_lm[0]
                pf[row, split, PF_LS] = sm_ls[0]
                pi[row, split, PI_MAXI] = sm_i[0]
                pi[row, split, PI_GI] = sm_gi[0]
                pi[row, split, PI_CNT] = sm_c[0]

        @cuda.jit(cache=JIT_CACHE)
        def _sample_finalize_kernel(x, n, nsplit, temp, topk, topp, minp, vllm, pf, pi,
                                    tokens, logprobs, status, si, sf, zero_hist, hist_n, hist_q):
            # zero_hist: number of histogram bins to clear per row (0: no select this call).
            row = cuda.blockIdx.x
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            sm_v = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_i = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_g = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_gi = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_c = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_lm = cuda.shared.array(MAX_BLOCK, np.float64)
            sm_ls = cuda.shared.array(MAX_BLOCK, np.float64)
            bv = _F32_NINF
            bi = np.int64(n)
            bg = _F32_NINF
            bgi = np.int64(n)
            cnt = _I64_0
            lm = _F64_NINF
            ls = _F64_0
            s = tid
            while s < nsplit:
                v = pf[row, s, PF_MAXV]
                vi = pi[row, s, PI_MAXI]
                if v > bv or (v == bv and vi < bi):
                    bv = v
                    bi = vi
                g = pf[row, s, PF_G]
                gi = pi[row, s, PI_GI]
                if g > bg or (g == bg and gi < bgi):
                    bg = g
                    bgi = gi
                cnt += pi[row, s, PI_CNT]
                lm, ls = lse_merge64(lm, ls, np.float64(pf[row, s, PF_LM]),
                                     np.float64(pf[row, s, PF_LS]))
                s += bs
            sm_v[tid] = bv
            sm_i[tid] = bi
            sm_g[tid] = bg
            sm_gi[tid] = bgi
            sm_c[tid] = cnt
            sm_lm[tid] = lm
            sm_ls[tid] = ls
            if zero_hist:
                # Scratch is shared by plans of other shapes on this stream: start from zero.
                # The select steps leave the bins zeroed again after they read them.
                b = tid
                while b < zero_hist:
                    hist_n[row, b] = _I64_0
                    hist_q[row, b] = _I64_0
                    b += bs
            cuda.syncthreads()
            stats_tree(sm_v, sm_i, sm_g, sm_gi, sm_c, sm_lm, sm_ls, tid, bs, True)
            if tid == 0:
                nfin = sm_c[0]
                m = sm_v[0]
                lse = _F64_NAN
                if sm_ls[0] > _F64_0:
                    lse = sm_lm[0] + math.log(sm_ls[0])
                for c in range(N_SI):
                    si[row, c] = _I64_0
                si[row, SI_NFIN] = nfin
                sf[row, SF_M] = np.float64(m)
                sf[row, SF_LSE] = lse
                si[row, SI_MODE] = MODE_DONE
                if vllm:
                    si[row, SI_VLLM] = _I64_1
                t = temp[row]
                k = topk[row]
                if nfin == 0:
                    tokens[row] = -1
                    logprobs[row] = np.float32(np.nan)
                    status[row] = STATUS_NO_FINITE
                elif t == _F32_0 or not row_filtered(k, topp[row], minp[row], n):
                    tok = sm_i[0]
                    if t != _F32_0:
                        tok = sm_gi[0]
                    tokens[row] = np.int32(tok)
                    logprobs[row] = np.float32(np.float64(load(x, row, tok)) - lse)
                    status[row] = STATUS_OK
                else:
                    status[row] = STATUS_OK
                    si[row, SI_MODE] = MODE_DRAW
                    inv_t = _F32_1 / t
                    sf[row, SF_INVT] = np.float64(inv_t)
                    ref = np.float64(m)
                    if vllm:
                        ref = np.float64(np.float32(m * inv_t))
                    sf[row, SF_REF] = ref
                    mp = minp[row]
                    if mp > _F32_0:
                        si[row, SI_MINP] = _I64_1
                        sf[row, SF_THR] = ref + math.log(np.float64(mp))
                    if k > 0 and k < nfin:
                        si[row, SI_SEL] = SEL_COUNT
                        si[row, SI_RANK] = np.int64(k) - _I64_1

        @cuda.jit(device=True, cache=JIT_CACHE)
        def key_value(v, inv_t, vllm):
            if vllm:
                return np.float32(v * inv_t)
            return v

        @cuda.jit(device=True, cache=JIT_CACHE)
        def mass_units(kv, ref):
            # floor(exp(float64(kv) - x_max) * 2**40 + 0.5): the reference's integer mass
            # (module docstring: why float64). y < 2**40, so y + 0.5 is exact.
            # kv == ref: the full unit, also when both are infinite (vllm order, a scaled maximum
            # that overflowed: exp(inf - inf) would be NaN).
            if np.float64(kv) == ref:
                return np.int64(1) << np.int64(MASS_BITS)
            y = math.exp(np.float64(kv) - ref) * _MASS_SCALE
            return np.int64(math.floor(y + _F64_HALF))

        @cuda.jit(cache=JIT_CACHE)
        def _select_begin_kernel(topp, n, si):
            # Arms the top-p select for rows that are still drawing (after top-k has settled).
            row = cuda.grid(1)
            if row < si.shape[0]:
                if si[row, SI_MODE] == MODE_DRAW and topp[row] < _F32_1:
                    si[row, SI_SEL] = SEL_MASS
                    si[row, SI_HI] = _I64_0
                    si[row, SI_ABOVE_N] = _I64_0
                    si[row, SI_ABOVE_Q] = _I64_0

        @cuda.jit(device=True, cache=JIT_CACHE)
        def hist_item(v, i, inv_t, vllm, first, hi_shift, hi_sel, sh, mask, mass, ref, bnd, bkey,
                      bcut, minp_on, thr, sh_n, sh_q):
            if is_finite(v):
                kv = key_value(v, inv_t, vllm)
                key = order_key(kv)
                ok = True
                if not first:
                    ok = (key >> hi_shift) == hi_sel
                if ok and in_bound(key, i, bnd, bkey, bcut) and above_thr(kv, minp_on, thr):
                    bin_ = (key >> sh) & mask
                    atomic_add(sh_n, bin_, _I64_1)
                    if mass:
                        atomic_add(sh_q, bin_, mass_units(kv, ref))

        @cuda.jit(cache=JIT_CACHE)
        def _select_hist_kernel(x, n, chunk, shift, width, first, si, sf, hist_n, hist_q):
            split = cuda.blockIdx.x
            row = cuda.blockIdx.y
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            sel = si[row, SI_SEL]
            if sel == SEL_NONE:
                return
            sh_n = cuda.shared.array(NBINS, np.int64)
            sh_q = cuda.shared.array(NBINS, np.int64)
            nb = np.int64(1) << np.int64(width)
            b = tid
            while b < nb:
                sh_n[b] = _I64_0
                sh_q[b] = _I64_0
                b += bs
            cuda.syncthreads()
            inv_t = np.float32(sf[row, SF_INVT])
            ref = sf[row, SF_REF]
            hi_sel = si[row, SI_HI]
            hi_shift = np.int64(shift) + np.int64(width)
            mass = sel == SEL_MASS
            vllm = si[row, SI_VLLM] != _I64_0
            # vllm top-p works on the min-p survivors; llama applies min-p after top-p, and
            # top-k (either order) is a plain rank: intersecting with min-p later is the same.
            use_minp = False
            if mass and vllm:
                use_minp = True
            # The row's boundary and min-p threshold, read once (not per element).
            bnd = si[row, SI_BND] != _I64_0
            bkey = si[row, SI_BV]
            bcut = si[row, SI_BCUT]
            minp_on = use_minp and si[row, SI_MINP] != _I64_0
            thr = sf[row, SF_THR]
            sh = np.int64(shift)
            mask = nb - _I64_1
            lo = np.int64(split) * chunk
            hi = min(lo + chunk, n)
            bs1 = np.int64(bs)
            bs2 = bs1 + bs1
            bs3 = bs2 + bs1
            bs4 = bs2 + bs2
            i = lo + tid
            while i + bs3 < hi:
                v0 = load(x, row, i)
                v1 = load(x, row, i + bs1)
                v2 = load(x, row, i + bs2)
                v3 = load(x, row, i + bs3)
                hist_item(v0, i, inv_t, vllm, first, hi_shift, hi_sel, sh, mask, mass, ref, bnd,
                          bkey, bcut, minp_on, thr, sh_n, sh_q)
                hist_item(v1, i + bs1, inv_t, vllm, first, hi_shift, hi_sel, sh, mask, mass, ref,
                          bnd, bkey, bcut, minp_on, thr, sh_n, sh_q)
                hist_item(v2, i + bs2, inv_t, vllm, first, hi_shift, hi_sel, sh, mask, mass, ref,
                          bnd, bkey, bcut, minp_on, thr, sh_n, sh_q)
                hist_item(v3, i + bs3, inv_t, vllm, first, hi_shift, hi_sel, sh, mask, mass, ref,
                          bnd, bkey, bcut, minp_on, thr, sh_n, sh_q)
                i += bs4
            while i < hi:
                v0 = load(x, row, i)
                hist_item(v0, i, inv_t, vllm, first, hi_shift, hi_sel, sh, mask, mass, ref, bnd,
                          bkey, bcut, minp_on, thr, sh_n, sh_q)
                i += bs1
            cuda.syncthreads()
            b = tid
            while b < nb:
                c = sh_n[b]
                if c != _I64_0:
                    atomic_add(hist_n, (row, b), c)
                    if mass:
                        atomic_add(hist_q, (row, b), sh_q[b])
                b += bs

        @cuda.jit(cache=JIT_CACHE)
        def _select_step_kernel(n, width, first, last, topp, si, sf, hist_n, hist_q):
            row = cuda.blockIdx.x
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            sel = si[row, SI_SEL]
            if sel == SEL_NONE:
                return
            sm_n = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_q = cuda.shared.array(MAX_BLOCK, np.int64)
            nb = np.int64(1) << np.int64(width)
            per = (nb + bs - 1) // bs
            # Thread t owns bins in *descending* order: positions t*per .. t*per+per-1 counted
            # from the top bin, so a scan over threads walks keys from largest to smallest.
            cn = _I64_0
            cq = _I64_0
            for d in range(per):
                pos_ = np.int64(tid) * per + d
                if pos_ < nb:
                    b = nb - _I64_1 - pos_
                    cn += hist_n[row, b]
                    cq += hist_q[row, b]
            sm_n[tid] = cn
            sm_q[tid] = cq
            cuda.syncthreads()
            if tid == 0:
                mass = sel == SEL_MASS
                above_n = si[row, SI_ABOVE_N]
                above_q = si[row, SI_ABOVE_Q]
                if mass and first:
                    z = _I64_0
                    for t in range(bs):
                        z += sm_q[t]
                    # ceil(float64(p) * float64(Z)), at most Z: single IEEE roundings, the
                    # reference's topp_target bit for bit. Everything after is int64.
                    tgt = np.int64(math.ceil(np.float64(topp[row]) * np.float64(z)))
                    si[row, SI_TARGET] = min(tgt, z)
                target = si[row, SI_TARGET]
                rank = si[row, SI_RANK]
                # Find the owning thread, then the bin: the first (from the top) where the
                # prefix count passes `rank`, or the prefix mass reaches the top-p target.
                tsel = bs - 1
                for t in range(bs):
                    if mass:
                        hit = above_q + sm_q[t] >= target
                    else:
                        hit = above_n + sm_n[t] > rank
                    if hit:
                        tsel = t
                        break
                    above_n += sm_n[t]
                    above_q += sm_q[t]
                bsel = _I64_0
                cnt_b = _I64_0
                q_b = _I64_0
                for d in range(per):
                    pos_ = np.int64(tsel) * per + d
                    if pos_ < nb:
                        b = nb - _I64_1 - pos_
                        cnt_b = hist_n[row, b]
                        q_b = hist_q[row, b]
                        bsel = b
                        if mass:
                            hit = above_q + q_b >= target
                        else:
                            hit = above_n + cnt_b > rank
                        if hit:
                            break
                        above_n += cnt_b
                        above_q += q_b
                hi_new = (si[row, SI_HI] << np.int64(width)) | bsel
                si[row, SI_HI] = hi_new
                si[row, SI_ABOVE_N] = above_n
                si[row, SI_ABOVE_Q] = above_q
                if last:
                    # hi_new is now the boundary key v; take j of its cnt_b tied members.
                    if mass:
                        # The cnt_b tied members share one key, hence one q: take the fewest
                        # whose mass reaches the target (integer ceil division).
                        qv = q_b // max(cnt_b, _I64_1)
                        j = cnt_b
                        if qv > _I64_0:
                            need = target - above_q
                            j = (need + qv - _I64_1) // qv
                        j = max(_I64_1, min(j, cnt_b))
                    else:
                        j = rank - above_n + _I64_1
                    si[row, SI_SEL] = SEL_NONE
                    if j >= cnt_b:
                        cut = np.int64(n)
                        # Members at v were already cut by an earlier boundary at the same key.
                        if si[row, SI_BND] != _I64_0 and si[row, SI_BV] == hi_new:
                            cut = si[row, SI_BCUT]
                        si[row, SI_BND] = _I64_1
                        si[row, SI_BV] = hi_new
                        si[row, SI_BCUT] = cut
                        si[row, SI_TIEJ] = _I64_0
                    else:
                        si[row, SI_TIEJ] = j
                        si[row, SI_TIEV] = hi_new
                        si[row, SI_TIEKIND] = sel
            cuda.syncthreads()
            # The histogram is consumed: zero it for the next pass (no separate memset).
            b = tid
            while b < nb:
                hist_n[row, b] = _I64_0
                hist_q[row, b] = _I64_0
                b += bs

        @cuda.jit(device=True, cache=JIT_CACHE)
        def is_tie(x, row, i, v_tie, inv_t, vllm, bnd, bkey, bcut, minp_on, thr):
            v = load(x, row, i)
            if not is_finite(v):
                return False
            kv = key_value(v, inv_t, vllm)
            key = order_key(kv)
            if key != v_tie or not in_bound(key, i, bnd, bkey, bcut):
                return False
            return above_thr(kv, minp_on, thr)

        @cuda.jit(cache=JIT_CACHE)
        def _tie_cut_kernel(x, n, si, sf):
            # The boundary key v has more tied members than the prefix takes: walk the row in
            # index order and cut after the j-th tied member (ties go to the lower index).
            row = cuda.blockIdx.x
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            j = si[row, SI_TIEJ]
            if j == _I64_0:
                return
            sm_s = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_done = cuda.shared.array(2, np.int64)
            v_tie = si[row, SI_TIEV]
            inv_t = np.float32(sf[row, SF_INVT])
            vllm = si[row, SI_VLLM] != _I64_0
            # Same membership as the histogram pass that found v (see _select_hist_kernel).
            use_minp = False
            if vllm and si[row, SI_TIEKIND] == SEL_MASS:
                use_minp = True
            # The row's boundary and min-p threshold, read once (not per element).
            bnd = si[row, SI_BND] != _I64_0
            bkey = si[row, SI_BV]
            bcut = si[row, SI_BCUT]
            minp_on = use_minp and si[row, SI_MINP] != _I64_0
            thr = sf[row, SF_THR]
            if tid == 0:
                sm_done[0] = _I64_0
                sm_done[1] = np.int64(n)
            cuda.syncthreads()
            # Tiles of bs * _TIE_ITEMS tokens, each thread counting _TIE_ITEMS consecutive ones:
            # one block scan per tile instead of per bs tokens (this path runs on one block).
            base = _I64_0
            running = _I64_0
            while base < n:
                first_i = base + np.int64(tid) * _TIE_ITEMS
                cnt = _I64_0
                for u in range(_TIE_ITEMS):
                    i = first_i + u
                    if i < n and is_tie(x, row, i, v_tie, inv_t, vllm, bnd, bkey, bcut,
                                        minp_on, thr):
                        cnt += _I64_1
                sm_s[tid] = cnt
                cuda.syncthreads()
                off = 1
                while off < bs:
                    add = _I64_0
                    if tid >= off:
                        add = sm_s[tid - off]
                    cuda.syncthreads()
                    sm_s[tid] += add
                    cuda.syncthreads()
                    off *= 2
                incl = running + sm_s[tid]
                if cnt > _I64_0 and incl >= j and incl - cnt < j:
                    # The j-th tie is in this thread's run: find it again, in index order.
                    seen = incl - cnt
                    for u in range(_TIE_ITEMS):
                        i = first_i + u
                        if i < n and is_tie(x, row, i, v_tie, inv_t, vllm, bnd, bkey, bcut,
                                            minp_on, thr):
                            seen += _I64_1
                            if seen == j:
                                sm_done[1] = i
                                sm_done[0] = _I64_1
                running += sm_s[bs - 1]
                cuda.syncthreads()
                if sm_done[0] != _I64_0:
                    break
                base += np.int64(bs) * _TIE_ITEMS
            if tid == 0:
                si[row, SI_BND] = _I64_1
                si[row, SI_BV] = v_tie
                si[row, SI_BCUT] = sm_done[1]
                si[row, SI_TIEJ] = _I64_0

        @cuda.jit(device=True, cache=JIT_CACHE)
        def draw_item(v, i, inv_t, vllm, sd, ps, bnd, bkey, bcut, minp_on, thr, bg, bgi):
            if is_finite(v):
                s = np.float32(v * inv_t)
                # Filters (and min-p) act on the raw logit in llama order, the scaled one in vllm.
                kv = v
                if vllm:
                    kv = s
                key = order_key(kv)
                if in_bound(key, i, bnd, bkey, bcut) and above_thr(kv, minp_on, thr):
                    g = s + token_gumbel(sd, ps, i)
                    if not g <= bg:   # first or greater: see _F32_NONE
                        bg = g
                        bgi = i
            return bg, bgi

        @cuda.jit(cache=JIT_CACHE)
        def _draw_partials_kernel(x, n, chunk, seed, pos, si, sf, pf, pi):
            split = cuda.blockIdx.x
            row = cuda.blockIdx.y
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            if si[row, SI_MODE] != MODE_DRAW:
                return
            sm_g = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_gi = cuda.shared.array(MAX_BLOCK, np.int64)
            inv_t = np.float32(sf[row, SF_INVT])
            vllm = si[row, SI_VLLM] != _I64_0
            sd = seed[row]
            ps = pos[row]
            lo = np.int64(split) * chunk
            hi = min(lo + chunk, n)
            bnd = si[row, SI_BND] != _I64_0
            bkey = si[row, SI_BV]
            bcut = si[row, SI_BCUT]
            minp_on = si[row, SI_MINP] != _I64_0
            thr = sf[row, SF_THR]
            bg = _F32_NONE
            bgi = np.int64(n)
            bs1 = np.int64(bs)
            bs2 = bs1 + bs1
            bs3 = bs2 + bs1
            bs4 = bs2 + bs2
            i = lo + tid
            while i + bs3 < hi:
                v0 = load(x, row, i)
                v1 = load(x, row, i + bs1)
                v2 = load(x, row, i + bs2)
                v3 = load(x, row, i + bs3)
                bg, bgi = draw_item(v0, i, inv_t, vllm, sd, ps, bnd, bkey, bcut, minp_on, thr,
                                    bg, bgi)
                bg, bgi = draw_item(v1, i + bs1, inv_t, vllm, sd, ps, bnd, bkey, bcut, minp_on,
                                    thr, bg, bgi)
                bg, bgi = draw_item(v2, i + bs2, inv_t, vllm, sd, ps, bnd, bkey, bcut, minp_on,
                                    thr, bg, bgi)
                bg, bgi = draw_item(v3, i + bs3, inv_t, vllm, sd, ps, bnd, bkey, bcut, minp_on,
                                    thr, bg, bgi)
                i += bs4
            while i < hi:
                v0 = load(x, row, i)
                bg, bgi = draw_item(v0, i, inv_t, vllm, sd, ps, bnd, bkey, bcut, minp_on, thr,
                                    bg, bgi)
                i += bs1
            if bgi == np.int64(n):
                bg = _F32_NINF
            sm_g[tid] = bg
            sm_gi[tid] = bgi
            cuda.syncthreads()
            block_argmax(sm_g, sm_gi, tid, bs)
            if tid == 0:
                pf[row, split, PF_G] = sm_g[0]
                pi[row, split, PI_GI] = sm_gi[0]

        @cuda.jit(cache=JIT_CACHE)
        def _draw_finalize_kernel(x, n, nsplit, si, sf, pf, pi, tokens, logprobs, status):
            row = cuda.blockIdx.x
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            if si[row, SI_MODE] != MODE_DRAW:
                return
            sm_g = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_gi = cuda.shared.array(MAX_BLOCK, np.int64)
            bg = _F32_NINF
            bgi = np.int64(n)
            s = tid
            while s < nsplit:
                g = pf[row, s, PF_G]
                gi = pi[row, s, PI_GI]
                if g > bg or (g == bg and gi < bgi):
                    bg = g
                    bgi = gi
                s += bs
            sm_g[tid] = bg
            sm_gi[tid] = bgi
            cuda.syncthreads()
            block_argmax(sm_g, sm_gi, tid, bs)
            if tid == 0:
                tok = sm_gi[0]
                if tok >= n:
                    # Unreachable when the row has a finite logit (the maximum always survives).
                    tokens[row] = -1
                    logprobs[row] = np.float32(np.nan)
                    status[row] = STATUS_NO_FINITE
                else:
                    tokens[row] = np.int32(tok)
                    logprobs[row] = np.float32(np.float64(load(x, row, tok)) - sf[row, SF_LSE])
                si[row, SI_MODE] = MODE_DONE

        hs = SimpleNamespace(is_finite=is_finite, order_key=order_key, token_gumbel=token_gumbel,
                             quad_gumbel=ph.quad_gumbel, merge_max=merge_max, bits_f32=bits_f32,
                             lse_add32=lse_add32, lse_merge32=lse_merge32,
                             lse_merge64=lse_merge64, atomic_add=atomic_add)
        fast = _fast.make(cuda, load, hs)
        return SimpleNamespace(
            fast=fast,
            hist=_hist.make(cuda, load, hs, fast.helpers),
            _sample_partials_kernel=_sample_partials_kernel,
            _sample_finalize_kernel=_sample_finalize_kernel,
            _select_begin_kernel=_select_begin_kernel,
            _select_hist_kernel=_select_hist_kernel,
            _select_step_kernel=_select_step_kernel,
            _tie_cut_kernel=_tie_cut_kernel,
            _draw_partials_kernel=_draw_partials_kernel,
            _draw_finalize_kernel=_draw_finalize_kernel,
        )

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_float(x, row, i):
        # i >= 0 always: an unsigned index skips numba's negative-index wraparound (three
        # integer instructions per load in the streaming loops).
        return np.float32(x[row, np.uint64(i)])

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_bf16(x, row, i):
        # bfloat16 is the high half of a float32: widening is a 16-bit shift of the bits.
        return bits_f32(np.int64(x[row, np.uint64(i)]) << np.int64(16))

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

    return SimpleNamespace(float=make(load_float), f16=make(load_f16), bf16=make(load_bf16),
                           f16_bits_f32=f16_bits_f32,
                           _advance_position_kernel=_advance_position_kernel,
                           philox=ph)
