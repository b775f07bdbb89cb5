"""Device code for the histogram path: top_p, min_p, large top_k and any mix of them, and the
nucleus pass that finishes most top-p-only rows before it.

``make(cuda, load, h, f)`` compiles, for one logits loader, the nucleus pass (item 0 below) and
the two kernels that finish the rows phase 1 (``rocsample.kernels.sampling_fast``) left in state: MINP rows (min_p without top_p or
top_k) and HIST rows (top_p < 1, or top_k above the tile path's limit, with any min_p, in either
order). Rows of other modes leave both kernels at once, so with device parameter arrays every
kernel is launched and each row takes its own path.

The filters as prefixes. Every SPEC §2 filter keeps a prefix of the row sorted by (key desc,
index asc), key = the raw logit (llama) or the scaled logit (vllm). With N the tokens in the
order (llama: the finite ones; vllm with min_p: those passing min_p, which come first), the
survivors are the first ``L = min(K, P, M)`` where ``K = min(k, N)`` (top_k off: N), P the first
position whose running integer mass reaches ``ceil(p * Z)`` with Z the mass of the first K
(top_p off: no limit), and M (llama with min_p only) the count of tokens with
``float64(key) >= thr``: they too are a prefix. Masses are the reference's
``floor(exp(float64(key) - float64(key_max)) * 2**40 + 0.5)``, exact int64 sums.

1. ``_sample_hist_kernel`` (grid splits x rows, the second read of the row). MINP rows: the
   Gumbel-max over the tokens passing min_p (an exact per-token test), and the row is done.
   HIST rows: per-row histograms over ``HB`` bins of the key's distance below the row maximum,
   ``floor((key_max - key) * 64)`` in float32 (monotone in the key, so each bin is a contiguous
   stretch of the order; the last bin takes every distance >= 32), of token counts and (top_p)
   masses (a block's bin mass as two 32-bit words, ``add_mass``: sm_90 has 64-bit shared
   atomics only as a compare-and-swap loop); the llama min-p count M. A row with top_k also
   gathers every token whose key is at least ``tau``, the bound phase 1's tile maxima give (at
   least k tokens reach it, so the first K do): the candidates are then a prefix of the order, and when they fit (``capg``) the row's
   last block sorts them and finishes the row from them alone (two reads in all). Otherwise
   the last block finds, from the histograms, the bins that hold position L - 1:
   ``[Blo, Bhi]`` (one bin unless a top-k cut inside its bin leaves Z, hence the top-p target,
   a range), plus the bin of position K - 1 when Z needs its tokens (``BkP``).
2. ``_sample_select_kernel`` (grid splits x rows, the third read, HIST rows of the second
   kind): tokens of bins below Blo all survive and are drawn at once (Philox only for them,
   from a per-round list in shared memory, so a warp's lanes draw only survivors); tokens of
   bins Blo..Bhi and BkP are gathered. The last block sorts the gathered tokens
   (their positions follow from the bin counts), applies K, Z, P and M exactly on them, draws
   over the surviving ones and folds that with the split winners.

0. ``_sample_nucleus_kernel`` (grid splits x rows, the second read; launched only by routes with
   the nucleus pass, ``sampling_router.NUCLEUS``, before the two above). Top-p-only rows (no
   top_k, no min_p: ``row_nuc``, which also admits the rank form's top-k-only rows, below) of
   such launches were drawn by phase 1's TOP2 variant, which
   left the row's two best Gumbel scores W1, W2 beside the histogram path's start state. The
   token is the best score over the nucleus, a prefix of the order: W1 when W1 is in it (the
   mass before W1 is below ``ceil(p * Z)``), else W2 when W2 is, else a later one. The pass
   sums, approximately (``amass``: a float32 exponential, within ``NUC_REL`` relative plus half
   a unit of the reference's mass; float64 sums), Z and the masses before W1 and W2; the row's
   last block bounds the exact sums (``mass_err``) and decides only where the bounds leave one
   answer (``nuc_verdict``): then it writes the token and marks the row done, so both kernels
   below leave it at once. Otherwise (neither token survives, or the bounds straddle the
   target) the row goes on through them exactly. ``HS_NUC`` records the decision.
   ``_sample_nucleus_finish_kernel`` is the same pass whose last block, for a row it cannot
   decide, runs the two kernels' code below over the whole row itself (``hist_row`` then
   ``select_row`` as one split, in the pass's shared memory): routes whose histogram-path rows
   are all top-p-only, of rows of at most ``sampling_router.NUC_FINISH_VOCAB`` logits, launch it
   alone after phase 1 (``Route.finish``), two launches fewer than the passes below. One block
   finishing a left row is slow (about 145 us at 32000 logits). Where the bounds straddle the
   target, the last block first sums the reference's integer masses themselves (``hmass``: the
   row's and those before each of the best) and takes the first of the best before which the
   target is not reached (``NUC_EXACT``); only rows where none is go on to that finish. And
   there phase 1 keeps four
   best scores in batches of more than ``sampling_router.NUC_FINISH_TOP2_ROWS`` rows (its TOP4
   form: W3, W4 where it can certify them; its TOP2 form sets them to -1) and this pass takes
   the first of W1 .. W4 in the nucleus (``nuc_token4``): a row is left about 0.05**4 of the
   time at top_p 0.95 instead of 0.05**2.
   ``_sample_rank_kernel`` and ``_sample_rank_finish_kernel`` are the same two forms for
   top-k-only rows (top_k past the tile path's limit, no top_p, no min_p; routes of calls
   without top-p-only rows, ``sampling_router.NUC_TOPK``), which phase 1's TOP2 / TOP4
   variants draw alike: the token is the best score within the top k, so the first of W1 ..
   W4 with fewer than k tokens before it in the order. The rank pass counts those tokens
   (``_RANK_E`` a token, exact: no bounds, never undecided, no exact pass); rows where none of
   the best is within the top k go on as above. ``_sample_rank4_kernel`` is the plain rank
   pass over phase 1's four best (its TOP4 form: ``sampling_router.NUC_RANK_PLAIN_TOP2_ROWS``,
   calls of more than one row), for wide rows, where a top-k row's two best leave the top k
   far more often than its four.

Row-strided launches. Both kernels take any grid (splits x R): a block serves split
``blockIdx.x`` of the rows ``blockIdx.y, blockIdx.y + R, ...``. With R the row count (every
route but one) that is one row a block, as phase 1's grid. Routes with the nucleus pass whose
histogram-path rows are all top-p-only (``sampling_router.Route.strided``) launch them at
``SamplingPlan.splits_fin x rows_fin``: they read nothing per split of phase 1, so the few rows
the nucleus pass leaves are finished in short splits by many blocks, and a block first lists,
in one look at all of its rows' state (``row_list``), those that still need it.

Adversarial rows whose candidate bins overflow ``capg`` (constant or heavily tied rows, very
narrow ones) are finished exactly by the last block alone: radix selects over the row on the
63-bit (key, -index) composite, by count for position K - 1, by mass for P, a minimum for M,
then the draw over every token at or above position L - 1 (about 20 single-block passes).

Every choice is an exact comparison or an integer sum, so tokens do not depend on split count,
block size or atomic order (the histograms are integer sums too).
"""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import numpy as np

from rocsample.kernels import JIT_CACHE, _numba_cuda, _numba_hip, register_cap, warp_parts
from rocsample.kernels import nvvm as _nvvm
from rocsample.kernels import sampling_fast as F
from rocsample.kernels.sampling_fast import (
    _F32_0,
    _F32_1,
    _F32_INF,
    _F32_NAN,
    _F64_0,
    _F64_NINF,
    _FULL,
    _I64_0,
    _I64_1,
    _I64_M1,
    _LOW32,
    _S31,
)

#: Bins per unit of key distance, and the histogram size (the last bin: every distance >= 32).
HR = np.float32(64.0)
HB = F.HB
_FAR = HB - 1
_FARD = np.float32((HB - 1) / 64.0)
#: Gathered candidates per row the last block can sort (shared memory); above it: the radix
#: fallback.
CAPG = 1024
_BIG = np.int64(1) << np.int64(62)   # a position past every row
_I64_MAX = np.int64(0x7FFFFFFFFFFFFFFF)
_MAX_BLOCK = F.MAX_BLOCK
_NBIN = F.NBIN
_RBITS = 8
#: Register caps (numba-cuda only: ``rocsample.kernels.register_cap``): the row's finish in the
#: last block needs more registers than the stream, and uncapped it sets the occupancy of both.
HIST_MAX_REGISTERS = 64
SELECT_MAX_REGISTERS = 48
#: The MINP-only kernel: a stream with a rare draw, at 8 blocks of 256 threads an SM.
MINP_MAX_REGISTERS = 32
#: The nucleus pass's finishing form (``_sample_nucleus_finish_kernel``): no cap. Its routes'
#: rows are narrow (about one wave of blocks at 256 x 32000), and its rare finish (the histogram
#: and select passes' code) spills under one (H200, top_p 0.95 alone, uncapped at 85 registers
#: against capped at 48: 1 x 32000 16.3 against 16.8 us, 8 x 32000 17.2 against 17.8; a row
#: left at 256 x 32000, the route forced: 190 against 221;
#: bench/results/nvidia-h200-s25-cap-ab.txt).
NUC_FINISH_MAX_REGISTERS = None
#: The plain nucleus pass: 32, 8 blocks of 256 threads an SM. Its stream needs 30-32 registers;
#: with int32 indices ptxas gave it 38-40 uncapped (6 blocks an SM, a second wave at 256 x
#: 151936), and under the cap it spills nothing (sm_90).
#: The rank forms and the finishing forms take none (the same as the finishing form's above).
NUC_MAX_REGISTERS = 32
#: Loads in flight per thread in the streaming passes (the nucleus pass and the MINP kernel's
#: stream: their own, unpredicated but in the last round). The nucleus and rank passes' come
#: per form (``_NUC_FORMS``) from ``_nuc_unroll``: on numba-cuda ``_NUC_UNROLL_CUDA``, 4 for the
#: plain nucleus pass (top_p alone 8-10 us faster at 256 x 151936 and 256 x 262144 on an H100,
#: the other shapes within 0.2 us; not yet A/B-timed on an H200) and 8 for the other forms (16
#: for the finishing forms took 2.3-2.6 us off 256 x 32000 but added 0.4 at 8 x 32000;
#: docs/PERF_NOTES.md, thirty-sixth session); elsewhere 8 (numba-hip and the simulator, whose
#: four-sum forms take half: see ``_nuc_unroll``). ``ROCSAMPLE_NUC_UNROLL`` (2 to 32) overrides
#: it at import for timing, on every backend: "N" sets every form's, "N,FORM=M,..." FORM's to M
#: and the others' to N; numba's disk cache does not key on it, so each setting needs its own
#: ``NUMBA_CACHE_DIR``.
_UNROLL = 4
_NUC_FORMS = ("nucleus", "nucleus_finish", "rank", "rank_finish", "rank4")
_NUC_UNROLL_CUDA = "8,nucleus=4"


def _unroll_setting(text):
    """``ROCSAMPLE_NUC_UNROLL``'s text -> (every form's loads a round, {form: its own})."""
    def count(v):
        try:
            n = int(v)
        except ValueError:
            n = None
        if n is None or not 2 <= n <= 32:
            raise ValueError(f"ROCSAMPLE_NUC_UNROLL: expected 2 to 32, got {str(v)[:40]}")
        return n

    head, *rest = (text or "8").split(",")
    forms = {}
    for item in rest:
        name, eq, v = item.partition("=")
        if not eq or name.strip() not in _NUC_FORMS:
            raise ValueError(f"ROCSAMPLE_NUC_UNROLL: expected FORM=N with FORM one of "
                             f"{', '.join(_NUC_FORMS)}, got {item[:40]!r}")
        forms[name.strip()] = count(v.strip())
    return count(head.strip()), forms


#: the setting, read (and refused out of range) at import; None: the backend's default
_NUC_UNROLL_ENV = (os.environ.get("ROCSAMPLE_NUC_UNROLL") or "").strip() or None
_unroll_setting(_NUC_UNROLL_ENV)


def _nuc_unroll(form, cuda):
    """The nucleus or rank pass ``form``'s loads a round for ``cuda``'s compiler: the setting,
    else the backend's default. Off numba-cuda the four-sum forms (the finishing forms and
    rank4) take half, at least 2 (numba-hip's gfx1151 code of the finishing form's float16
    variant kept the round's array in a 552-byte private segment at 8, which the AMD offline
    gate refuses; the tokens and sums are the same either way)."""
    real = _numba_cuda(cuda)
    every, forms = _unroll_setting(_NUC_UNROLL_ENV or (_NUC_UNROLL_CUDA if real else "8"))
    nu = forms.get(form, every)
    four = form != "nucleus" and form != "rank"
    return nu if real or not four else max(nu // 2, 2)


_MINP_UNROLL = 8
_RBINS = 1 << _RBITS
#: The nucleus pass's approximate masses (``amass``, in units of 2**40): a float32 distance
#: (where the mass is not 0, |d| < 29 < 32, so the distance's rounding is at most half its ulp,
#: 2**-20, absolute, that much relative on the exponential) and expf (2 ulp on CUDA, 2**-22) put
#: e * 2**40 within 2**-19.7 relative of exp(d) * 2**40, so within that plus half a unit of the
#: reference's integer mass (its rounding). NUC_REL = 2**-18 leaves a factor 3.2 (the host's
#: float32 arithmetic reaches 2**-19.9: test_mass_bound_covers_the_float32_masses; an expf of
#: the form exp2(x * log2(e)), whose product's rounding adds about 2**-19.1, would still be
#: within 2**-18.5: numba-hip calls the device library's expf). Sums run in
#: float64 (2**-52 relative a term, ~2**-34 over 2**18 tokens), then are scaled to integers;
#: ``mass_err`` bounds a sum's error by q >> _AM_SHIFT (twice NUC_REL, for the exact sum being up
#: to that much larger) plus two units a term. (Until the thirtieth session NUC_REL was 2**-16:
#: a bound four times wider, so four times the rows whose bounds straddle the target and go to
#: the exact pass: about one in 8,000 at top_p 0.95, now one in 32,000.)
NUC_REL = 2.0 ** -18
#: numba-cuda's amass: ex2.approx.ftz(fma(d, _L2E_HI, float32(d * _L2E_LO))) with d the float32
#: distance. Besides the distance's 2**-20, the product's rounding (|y| < 29 * log2(e) < 64: half
#: an ulp, 2**-19 absolute, 2**-19.53 relative on the power) and ex2.approx's own error (2 ulp,
#: 2**-22: CUDA's exp2f is this instruction) put it within 2**-18.6 of exp(d): under NUC_REL
#: by a factor 1.5 (test_mass_bound_covers_the_float32_masses checks the form with ex2's
#: error doubled). The split of log2(e) keeps its float32 rounding (2**-21.3 at d = -29) out.
#: The simulator and numba-hip keep expf. (First run on a GPU in the thirty-ninth session, an
#: H100: the device gate passed, top_p alone 0.8-7.4% faster than with expf at every timed
#: shape, top_k 1000 level; docs/PERF_NOTES.md.)
_L2E_HI = np.float32(1.0 / math.log(2.0))
_L2E_LO = np.float32(1.0 / math.log(2.0) - float(_L2E_HI))
_AMASS_CUDA_REL = 2.0 ** -18.6
_AM_SHIFT = 17
_AM_SCALE = np.float64(2.0 ** 40)
#: The rank pass (the nucleus pass's form for top-k-only rows) counts tokens instead of summing
#: masses: each token adds _RANK_E (2**-20: 2**20 units once scaled by _AM_SCALE), so a count c
#: sums to exactly c << _RANK_SHIFT (in float64 for every count below 2**53, in int64 below
#: 2**43).
_RANK_SHIFT = 20
_RANK_E = np.float64(2.0 ** (_RANK_SHIFT - 40))

assert HB == 2048 and CAPG <= HB // 2
assert _MAX_BLOCK * _UNROLL <= 2 * CAPG  # a select round's survivors fit its list (cs as int32)


def make(cuda, load, h, f):
    """Compile the histogram-path kernels for one logits loader.

    Parameters
    ----------
    cuda : module
        numba.cuda, its simulator, or numba.hip posing as cuda.
    load : device function ``load(x, row, i) -> float32``
    h : namespace
        Shared device helpers (``rocsample.kernels.sampling.build``): ``is_finite``,
        ``order_key``, ``atomic_add``.
    f : namespace
        The fast path's helpers (``rocsample.kernels.sampling_fast.make(...).helpers``): the
        row mode, composites and keys, the mass, the split-block prologue, the predicated
        load round, the split counter and the token write the kernels of both paths share,
        and the block-wide selects and sorts.

    Returns
    -------
    types.SimpleNamespace
        ``_sample_hist_kernel``, ``_sample_select_kernel``, ``_sample_minp_kernel``,
        ``_sample_nucleus_kernel``, ``_sample_nucleus_finish_kernel``, ``_sample_rank_kernel``,
        ``_sample_rank_finish_kernel`` and ``_sample_rank4_kernel``.
    """
    is_finite = h.is_finite
    order_key = h.order_key
    atomic_add = h.atomic_add
    lane_reset = h.lane_reset
    need_lane = h.need_lane
    row_mode = f.row_mode
    block_max = f.block_max
    key_value = f.key_value
    comp = f.comp
    comp_of = f.comp_of
    comp_token = f.comp_token
    score_from_scaled = f.score_from_scaled
    hmass = f.hmass
    topp_target = f.topp_target
    split_block = f.split_block
    load_round = f.load_round
    count_done = f.count_done
    put_token = f.put_token
    dist_bin = f.dist_bin
    bin_tau = f.bin_tau
    digit_pick = f.digit_pick
    bitonic_desc = f.bitonic_desc
    block_incl_scan = f.block_incl_scan

    # --- per-token helpers ------------------------------------------------------------------
    @cuda.jit(device=True, cache=JIT_CACHE)
    def hbin(fv, kf):
        # Bin of a filter value below the row's maximum filter value kf: floor((kf - fv) * 64)
        # in float32, monotone in fv (equal values share a bin), the last bin for >= 32.
        if fv == kf:
            return _I64_0   # also an infinite maximum and its equals
        d = np.float32(kf - fv)
        if not d < _FARD:
            return np.int64(_FAR)
        return np.int64(np.int32(d * HR))   # < 2047: a 32-bit conversion

    @cuda.jit(device=True, cache=JIT_CACHE)
    def filt(v, inv_t, vllm):
        # The filter value: the raw logit (llama) or the scaled logit (vllm).
        if vllm:
            return np.float32(v * inv_t)
        return v

    @cuda.jit(device=True, cache=JIT_CACHE)
    def score_comp(v, inv_t, sd, ps, i):
        # The (Gumbel score key, -index) composite of a drawn token (v the raw logit).
        return score_from_scaled(np.float32(v * inv_t), sd, ps, i)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_setup(temp, topk, topp, minp, vllm, si, row, n, kcap):
        # The row's parameters, its mode, the filter-key maximum from phase 1's state, and
        # whether the row is done (loaded with the parameters, before any branch on them:
        # after one it was a round trip of its own, which a launch over finished rows, e.g.
        # the histogram and select passes behind a nucleus pass that finished every row, paid
        # in every block).
        t = temp[row]
        k = topk[row]
        p = topp[row]
        mp = minp[row]
        done = si[row, F.HS_DONE] != 0
        mode = row_mode(t, k, p, mp, n, kcap)
        inv_t = _F32_1
        if t > _F32_0:
            inv_t = _F32_1 / t
        cvm = si[row, F.HS_KMAX]
        m = key_value(cvm >> _S31)
        kf = m
        if vllm:
            kf = np.float32(m * inv_t)
        xm = np.float64(kf)
        thr = _F64_NINF
        if mp > _F32_0:
            thr = xm + math.log(np.float64(mp))
        return mode, t, k, p, mp, inv_t, kf, xm, thr, done

    # --- block-wide helpers (every thread of the block calls them) --------------------------
    # "sum" (numba-cuda; rocsample.kernels.warp_parts): a block's int64 sums are a butterfly of
    # warp shuffles and one pass over the warps' sums (two barriers; the nucleus and rank
    # passes' five sums: one), where the shared-memory tree takes one barrier a level (ten at
    # 512 threads). Integer sums: the same totals in either form.
    SUMW = "sum" in warp_parts(cuda)

    if SUMW:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def warp_sum(v):
            # The int64 sum of v over the warp, to every lane (every lane of the warp calls it).
            for off in (16, 8, 4, 2, 1):
                v += cuda.shfl_xor_sync(_FULL, v, off)
            return v

        @cuda.jit(device=True, cache=JIT_CACHE)
        def warps_total(sm, bs):
            # The sum of the warps' sums sm[0 : bs / 32] (after the barrier that wrote them).
            r = sm[0]
            for q in range(1, _MAX_BLOCK // 32):
                if q * 32 < bs:
                    r += sm[q]
            return r

        @cuda.jit(device=True, cache=JIT_CACHE)
        def block_sum(sm, v, tid, bs):
            # The int64 sum of v over the block (bs a multiple of 32), to every thread.
            v = warp_sum(v)
            if (tid & 31) == 0:
                sm[tid >> 5] = v
            cuda.syncthreads()
            r = warps_total(sm, bs)
            cuda.syncthreads()
            return r
    else:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def warp_sum(v):
            # (not called: the shared-memory form has no warp step)
            return v

        @cuda.jit(device=True, cache=JIT_CACHE)
        def warps_total(sm, bs):
            # The tree's total (after its last level's barrier).
            return sm[0]

        @cuda.jit(device=True, cache=JIT_CACHE)
        def block_sum(sm, v, tid, bs):
            # The int64 sum of v over the block (bs a power of two), to every thread.
            sm[tid] = v
            cuda.syncthreads()
            step = bs // 2
            while step > 0:
                if tid < step:
                    sm[tid] += sm[tid + step]
                cuda.syncthreads()
                step //= 2
            r = sm[0]
            cuda.syncthreads()
            return r

    def _block_sums(FOUR):
        # The block's int64 sums of five per-thread values (iz, i1, i2, and where FOUR i3, i4;
        # zeros otherwise), through the shared arrays sz, s1, s2 (s3, s4 where FOUR) of at least
        # bs slots: one barrier after the warps' sums, or the tree's barriers. Thread 0 gets the
        # totals (the others zeros). The nucleus and rank passes' sums and the finishing form's
        # exact pass.
        @cuda.jit(device=True, cache=JIT_CACHE)
        def sums(sz, s1, s2, s3, s4, iz, i1, i2, i3, i4, tid, bs):
            if SUMW:
                iz = warp_sum(iz)
                i1 = warp_sum(i1)
                i2 = warp_sum(i2)
                if FOUR:
                    i3 = warp_sum(i3)
                    i4 = warp_sum(i4)
                if (tid & 31) == 0:
                    sz[tid >> 5] = iz
                    s1[tid >> 5] = i1
                    s2[tid >> 5] = i2
                    if FOUR:
                        s3[tid >> 5] = i3
                        s4[tid >> 5] = i4
                cuda.syncthreads()
            else:
                sz[tid] = iz
                s1[tid] = i1
                s2[tid] = i2
                if FOUR:
                    s3[tid] = i3
                    s4[tid] = i4
                cuda.syncthreads()
                step = bs // 2
                while step > 0:
                    if tid < step:
                        sz[tid] += sz[tid + step]
                        s1[tid] += s1[tid + step]
                        s2[tid] += s2[tid + step]
                        if FOUR:
                            s3[tid] += s3[tid + step]
                            s4[tid] += s4[tid + step]
                    cuda.syncthreads()
                    step //= 2
            tz = _I64_0
            t1 = _I64_0
            t2 = _I64_0
            t3 = _I64_0
            t4 = _I64_0
            if tid == 0:
                # (warps_total: the warps' sums, or the tree's at index 0)
                tz = warps_total(sz, bs)
                t1 = warps_total(s1, bs)
                t2 = warps_total(s2, bs)
                if FOUR:
                    t3 = warps_total(s3, bs)
                    t4 = warps_total(s4, bs)
            return tz, t1, t2, t3, t4

        return sums

    block_sums2 = _block_sums(False)
    block_sums4 = _block_sums(True)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def last_block(ctr, row, nsplit, tid, flag):
        # Phase 1's counting scheme (see there): True in the row's last block to finish, after
        # a fence; every thread of the block calls it after its block's work.
        cuda.threadfence()
        cuda.syncthreads()
        if tid == 0:
            count_done(ctr, row, nsplit, flag)
        cuda.syncthreads()
        return flag[0] != 0

    @cuda.jit(device=True, cache=JIT_CACHE)
    def split_winner(best, pi, row, split, nsplit, ctr, tid, bs, sm, flag):
        # This block's best composite (best: each thread's) published as the split's winner
        # pi[row, split, 2] and the block counted done; (True, the best of every split's winner)
        # in the row's last block, (False, -1) in the others.
        best = block_max(sm, best, tid, bs)
        if tid == 0:
            pi[row, split, 2] = best
        if not last_block(ctr, row, nsplit, tid, flag):
            return False, _I64_M1
        best = _I64_M1
        s = tid
        while s < nsplit:
            c = pi[row, s, 2]
            if c > best:
                best = c
            s += bs
        return True, block_max(sm, best, tid, bs)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def write_token(x, row, c, lp, sf, tokens, logprobs, status, si):
        # Thread 0: the winner composite c's token (c >= 0: the row has a finite logit).
        put_token(x, row, comp_token(c), lp, sf[row, F.HF_LSE], row, tokens, logprobs, status)
        si[row, F.HS_DONE] = 1

    @cuda.jit(device=True, cache=JIT_CACHE)
    def tile_tau(tm, row, G, kk, kkey, inv_t, vllm, tid, bs, th, sc, sm_r):
        # A key bound every one of the first k tokens reaches, from phase 1's G tile maxima: the
        # lowest key of the distance bin (dist_bin, as in the tile finalize) where the tiles
        # counted from the maximum down reach k. -1: fewer than k finite tiles.
        b = tid
        while b < F.NBIN:
            th[b] = np.int32(0)
            b += bs
        cuda.syncthreads()
        j = np.int64(tid)
        while j < G:
            v = tm[row, j]
            if is_finite(v):
                kv = order_key(filt(v, inv_t, vllm))
                atomic_add(th, dist_bin(kkey - kv), np.int32(1))
            j += np.int64(bs)
        cuda.syncthreads()
        per = (F.NBIN + bs - 1) // bs
        c = _I64_0
        for q in range(per):
            b2 = tid * per + q
            if b2 < F.NBIN:
                c += np.int64(th[b2])
        sc[tid] = c
        if tid == 0:
            sm_r[0] = _I64_M1
        cuda.syncthreads()
        block_incl_scan(sc, tid, bs)
        run = sc[tid] - c
        if run < kk and run + c >= kk:
            for q in range(per):
                b2 = tid * per + q
                if b2 < F.NBIN:
                    hb = np.int64(th[b2])
                    if run < kk and run + hb >= kk:
                        sm_r[0] = bin_tau(kkey, np.int64(b2))
                    run += hb
        cuda.syncthreads()
        r = sm_r[0]
        cuda.syncthreads()
        return r

    @cuda.jit(device=True, cache=JIT_CACHE)
    def seg_prefix(hc, hm, row, tid, bs, sc, sq):
        # Inclusive prefix sums, over the threads' contiguous segments of the row's HB bins, of
        # the counts (sc) and masses (sq).
        per = (HB + bs - 1) // bs
        c = _I64_0
        q_ = _I64_0
        for u in range(per):
            b = tid * per + u
            if b < HB:
                c += hc[row, b]
                q_ += hm[row, b]
        sc[tid] = c
        sq[tid] = q_
        cuda.syncthreads()
        block_incl_scan(sc, tid, bs)
        block_incl_scan(sq, tid, bs)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def seg_find(hc, hm, row, need, use_mass, tid, bs, sc, sq, sm_r, slot):
        # After seg_prefix: the first bin b whose running count (or mass) reaches need (>= 1)
        # and the count and mass of the bins before it, into sm_r[slot : slot + 3]; every
        # thread gets them.
        per = (HB + bs - 1) // bs
        if tid == 0:
            sm_r[slot] = np.int64(HB)
            sm_r[slot + 1] = sc[bs - 1]
            sm_r[slot + 2] = sq[bs - 1]
        cuda.syncthreads()
        cb = _I64_0
        qb = _I64_0
        if tid > 0:
            cb = sc[tid - 1]
            qb = sq[tid - 1]
        before = cb
        seg = sc[tid] - cb
        if use_mass:
            before = qb
            seg = sq[tid] - qb
        if before < need and need <= before + seg:
            found = False
            for u in range(per):
                b = tid * per + u
                if b < HB and not found:
                    hcb = hc[row, b]
                    hmb = hm[row, b]
                    val = hcb
                    if use_mass:
                        val = hmb
                    if before + val >= need:
                        sm_r[slot] = np.int64(b)
                        sm_r[slot + 1] = cb
                        sm_r[slot + 2] = qb
                        found = True
                    cb += hcb
                    qb += hmb
                    before += val
        cuda.syncthreads()

    @cuda.jit(device=True, cache=JIT_CACHE)
    def sort_cands(cand, row, C, cs, tid, bs):
        # cs[0:C] = the row's C gathered composites, sorted descending (distinct: the index is
        # part of each).
        P2 = np.int64(1)
        while P2 < C:
            P2 *= 2
        j = np.int64(tid)
        while j < P2:
            v = _I64_M1
            if j < C:
                v = cand[row, j]
            cs[j] = v
            j += np.int64(bs)
        cuda.syncthreads()
        if P2 > 1:
            bitonic_desc(cs, P2, tid, bs)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def resolve(cs, ms, CA, C, posA, QA, posB, QB, K, M, Zex, p, minp_llama, thr, xm, vllm,
                inv_t, sd, ps, best0, tid, bs, sm, sm_r):
        # The winner of a row from its sorted candidates cs[0:C]: group A = cs[0:CA] holds the
        # positions posA .. posA + CA - 1 of the order (QA: the mass before them), group B =
        # cs[CA:C] the positions from posB (QB before them; used only for Z). K, M as in the
        # module notes (M: _BIG for none; minp_llama: count M among group A here, which then
        # holds every passing token unless all of A passes), Zex the exact Z or -1, best0 the
        # best composite of the survivors not in the list (-1: none). Returns the winner's
        # composite (every thread).
        bsw = np.int64(bs)
        need_p = p < _F32_1
        if need_p:
            j = np.int64(tid)
            while j < C:
                ms[j] = hmass(key_value(cs[j] >> _S31), xm)
                j += bsw
            cuda.syncthreads()
        # M from group A (llama min-p): passing tokens are a prefix of A
        if minp_llama:
            c_ = _I64_0
            j = np.int64(tid)
            while j < CA:
                if np.float64(key_value(cs[j] >> _S31)) >= thr:
                    c_ += _I64_1
                j += bsw
            ma = block_sum(sm, c_, tid, bs)
            if ma < CA:
                M = posA + ma
        # Z: the mass of the first K tokens
        Z = Zex
        if need_p and Z < _I64_0:
            lo = posA
            base = QA
            first = _I64_0
            if K - 1 >= posA + CA:
                lo = posB
                base = QB
                first = CA
            cnt = K - lo   # tokens of the group before position K
            s_ = _I64_0
            j = np.int64(tid)
            while j < cnt:
                s_ += ms[first + j]
                j += bsw
            Z = base + block_sum(sm, s_, tid, bs)
        # P: the first position of A whose running mass reaches the target (an inclusive scan
        # of A's masses over contiguous per-thread segments)
        P = _BIG
        if need_p:
            tgt = topp_target(p, Z)
            if tgt > Z:
                tgt = Z
            per = (CA + bsw - 1) // bsw
            s_ = _I64_0
            for u in range(per):
                j = np.int64(tid) * per + u
                if j < CA:
                    s_ += ms[j]
            sm[tid] = s_
            if tid == 0:
                sm_r[12] = _BIG
            cuda.syncthreads()
            block_incl_scan(sm, tid, bs)
            run = QA + sm[tid] - s_
            for u in range(per):
                j = np.int64(tid) * per + u
                if j < CA:
                    if run < tgt and run + ms[j] >= tgt:
                        sm_r[12] = posA + j + _I64_1
                    run += ms[j]
            cuda.syncthreads()
            P = sm_r[12]
            cuda.syncthreads()
        L = K
        if P < L:
            L = P
        if M < L:
            L = M
        nS = L - posA
        if nS > CA:
            nS = CA
        best = best0
        j = np.int64(tid)
        while j < nS:
            c = cs[j]
            fv = key_value(c >> _S31)
            ii = comp_token(c)
            v = fv
            if vllm:
                sc_ = score_from_scaled(fv, sd, ps, ii)
            else:
                sc_ = score_comp(v, inv_t, sd, ps, ii)
            if sc_ > best:
                best = sc_
            j += bsw
        return block_max(sm, best, tid, bs)

    # --- the radix fallback (one block, passes over the row) --------------------------------
    @cuda.jit(device=True, cache=JIT_CACHE)
    def member(v, inv_t, vllm, minp_vllm, thr):
        # (in the order?, filter value): finite, and for vllm with min-p passing it.
        if not is_finite(v):
            return False, _F32_0
        fv = filt(v, inv_t, vllm)
        if minp_vllm and not np.float64(fv) >= thr:
            return False, fv
        return True, fv

    @cuda.jit(device=True, cache=JIT_CACHE)
    def radix_select(x, row, n, inv_t, vllm, minp_vllm, thr, xm, need, by_mass, tid, bs,
                     hist, sm_s, sm_r):
        # The composite of the order position where the running count (by_mass: mass) from
        # the top first reaches need (>= 1): eight digit passes over the row.
        prefix = _I64_0
        bsw = np.int64(bs)
        for rnd in range(8):
            sh = np.int64(56 - 8 * rnd)
            b = tid
            while b < _RBINS:
                hist[b] = _I64_0
                b += bs
            cuda.syncthreads()
            i = np.int64(tid)
            while i < n:
                v = load(x, row, i)
                ok, fv = member(v, inv_t, vllm, minp_vllm, thr)
                if ok:
                    c = comp_of(fv, i)
                    if rnd == 0 or (c >> (sh + np.int64(8))) == prefix:
                        w = _I64_1
                        if by_mass:
                            w = hmass(fv, xm)
                        if w > _I64_0:
                            atomic_add(hist, (c >> sh) & np.int64(_RBINS - 1), w)
                i += bsw
            cuda.syncthreads()
            digit_pick(hist, sm_s, sm_r, tid, bs, need)
            prefix = (prefix << np.int64(8)) | sm_r[0]
            need -= sm_r[1]
            cuda.syncthreads()
        return prefix

    @cuda.jit(device=True, cache=JIT_CACHE)
    def fallback(x, row, n, k, p, mp, vllm, inv_t, thr, xm, ntot, sd, ps, tid, bs, hist, sm_s,
                 sm_r):
        # The row's winner by selects over the whole row (any row; used when candidates
        # overflow). ntot: the tokens in the order.
        minp_vllm = vllm and mp > _F32_0
        bsw = np.int64(bs)
        K = ntot
        if k > 0 and k < ntot:
            K = np.int64(k)
        cL = radix_select(x, row, n, inv_t, vllm, minp_vllm, thr, xm, K, False, tid, bs, hist,
                          sm_s, sm_r)
        if p < _F32_1:
            z = _I64_0
            i = np.int64(tid)
            while i < n:
                ok, fv = member(load(x, row, i), inv_t, vllm, minp_vllm, thr)
                if ok and comp_of(fv, i) >= cL:
                    z += hmass(fv, xm)
                i += bsw
            Z = block_sum(sm_s, z, tid, bs)
            tgt = topp_target(p, Z)
            if tgt > Z:
                tgt = Z
            cP = radix_select(x, row, n, inv_t, vllm, minp_vllm, thr, xm, tgt, True, tid, bs,
                              hist, sm_s, sm_r)
            if cP > cL:
                cL = cP
        if (not vllm) and mp > _F32_0:
            # llama min-p: the last passing position is the smallest passing composite
            lo = _I64_MAX   # composites reach 2**63 - 1
            i = np.int64(tid)
            while i < n:
                v = load(x, row, i)
                if is_finite(v) and np.float64(v) >= thr:
                    c = comp_of(v, i)
                    if c < lo:
                        lo = c
                i += bsw
            cM = -block_max(sm_s, -lo, tid, bs)
            if cM > cL:
                cL = cM
        best = _I64_M1
        i = np.int64(tid)
        while i < n:
            v = load(x, row, i)
            ok, fv = member(v, inv_t, vllm, minp_vllm, thr)
            if ok and comp_of(fv, i) >= cL:
                c = score_comp(v, inv_t, sd, ps, i)
                if c > best:
                    best = c
            i += bsw
        return block_max(sm_s, best, tid, bs)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def add_mass(shw, b, q):
        # q (> 0) into bin b's int64 mass, held as its two 32-bit words shw[2b] (low) and
        # shw[2b + 1] (high): a 64-bit shared atomic add is a compare-and-swap loop on sm_90
        # (ATOMS.CAST.SPIN.64), two 32-bit ones are native. The low word's carry, read from its
        # old value, goes to the high word with q's high bits: the pair sums exactly (mod 2**64).
        lo = q & _LOW32
        old = np.int64(atomic_add(shw, np.int64(2) * b, np.uint32(lo)))
        hi = q >> np.int64(32)
        if old + lo > _LOW32:
            hi += _I64_1
        if hi != _I64_0:
            atomic_add(shw, np.int64(2) * b + _I64_1, np.uint32(hi))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def hist_token(v, i, inv_t, vllm, minp_vllm, minp_llama, need_p, thr, kf, xm, tkey, shc, shw,
                   si, row, cand, capg, far, mc):
        # One token of a HIST row in the histogram pass: its bin's count and (top_p) mass, the
        # llama min-p count, and the gather at or above the tile bound.
        if is_finite(v):
            fv = filt(v, inv_t, vllm)
            f64 = np.float64(fv)
            if not (minp_vllm and not f64 >= thr):
                bi = hbin(fv, kf)
                if bi == _FAR:
                    far += np.int32(1)
                else:
                    atomic_add(shc, bi, np.int32(1))
                    if need_p:
                        q_ = hmass(fv, xm)
                        if q_ > _I64_0:
                            add_mass(shw, bi, q_)
                if minp_llama and f64 >= thr:
                    mc += _I64_1
                kv = order_key(fv)
                if kv >= tkey:
                    slot = atomic_add(si, (row, F.HS_NC), _I64_1)
                    if slot < capg:
                        cand[row, slot] = comp(kv, i)
        return far, mc

    # --- the kernels ------------------------------------------------------------------------
    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_list(temp, topk, topp, minp, si, n, kcap, minp_too, base, tid, bs, rl, nl):
        # A block of a row-strided launch (grid splits x R, R < the rows; see the module
        # docstring): the rows base + t * R (t < bs) it serves that this pass works on (mode
        # HIST, or MINP too for minp_too, and not done yet), into rl[0:nl[0]] for every thread.
        # (Each row is looked at once by each of its blocks, before any of them counts it done,
        # so every block of a row reads the same HS_DONE.)
        nr = np.int64(temp.shape[0])
        r = base + np.int64(tid) * np.int64(cuda.gridDim.y)
        if tid == 0:
            nl[0] = np.int32(0)
        cuda.syncthreads()
        if r < nr:
            # (the state with the parameters: behind the mode test it was a second round trip)
            dn = si[r, F.HS_DONE]
            md = row_mode(temp[r], topk[r], topp[r], minp[r], n, kcap)
            if (md == F.MODE_HIST or (minp_too and md == F.MODE_MINP)) and dn == 0:
                rl[atomic_add(nl, 0, np.int32(1))] = np.int32(r)
        cuda.syncthreads()
        return nl[0]

    def minp_stream(U):
        # minp_row with rounds of U loads: the MINP kernel's _MINP_UNROLL; the histogram
        # kernel's MINP rows (mixed and device-parameter routes) take _UNROLL, as its other
        # streams do: at eight, beside the HIST rows' code, it spilled on gfx1151 (numba-hip).
        @cuda.jit(device=True, cache=JIT_CACHE)
        def minp_round(xr, i, hi, bsw, vals):
            # One round of the MINP stream from token i of the one-row view xr: U loads issued
            # together, without a bounds test unless the round reaches hi.
            if i + bsw * np.int64(U - 1) < hi:
                for u in range(U):
                    vals[u] = load(xr, 0, i + np.int64(u) * bsw)
            else:
                load_round(xr, 0, i, hi, bsw, vals)

        @cuda.jit(device=True, cache=JIT_CACHE)
        def minp_row(x, row, lo, hi, tid, bs, inv_t, vllm, thr, seed, pos, pi, split, nsplit,
                     ctr, sm, flag, lp, sf, tokens, logprobs, status, si):
            # A MINP row's split [lo, hi) (every thread of the block): every token passing
            # min-p survives, so the draw is the best score over them, now; the row's last
            # block writes the token. A round marks its survivors first and draws them after,
            # one call site of the draw (a survivor's logit read again, from cache): the draw
            # inlined in each slot of the unrolled round held 76 registers a thread for a
            # stream that rarely draws. The stream is the nucleus pass's: the row as a one-row
            # view (no row-stride multiply a load), U loads a round issued together
            # (minp_round). The row's seed and position are read by a draw, not held through
            # the stream: on the H200 the MINP kernel's stream spilled at its 32 registers with
            # them (and with its first round issued before the row's parameters).
            # The test float64(f) >= thr of a float32 filter value f, in float32 and exactly:
            # f >= t32, the least float32 at or above thr (NaN: nothing passes either way).
            t32 = np.float32(thr)
            if np.float64(t32) < thr:
                t32 = key_value(order_key(t32) + _I64_1)
            bsw = np.int64(bs)
            best = _I64_M1
            i = lo + np.int64(tid)
            xr = x[row:row + 1]
            span = bsw * np.int64(U)
            vals = cuda.local.array(U, np.float32)
            minp_round(xr, i, hi, bsw, vals)
            while i < hi:
                hit = np.int32(0)
                for u in range(U):
                    v = vals[u]
                    if is_finite(v) and filt(v, inv_t, vllm) >= t32:
                        hit |= np.int32(1) << np.int32(u)
                j = i
                while hit != np.int32(0):
                    if hit & np.int32(1):
                        c = score_comp(load(xr, 0, j), inv_t, seed[row], pos[row], j)
                        if c > best:
                            best = c
                    hit >>= np.int32(1)
                    j += bsw
                i += span
                if i < hi:
                    minp_round(xr, i, hi, bsw, vals)
            last, best = split_winner(best, pi, row, split, nsplit, ctr, tid, bs, sm, flag)
            if last and tid == 0:
                write_token(x, row, best, lp, sf, tokens, logprobs, status, si)

        return minp_row

    minp_row = minp_stream(_MINP_UNROLL)
    minp_row_hist = minp_stream(_UNROLL)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def hist_row(x, n, temp, topk, topp, minp, vllm, seed, pos, lp, tiles, kcap, tm, pi, si, sf,
                 hc, hm, cand, capg, ctr, tokens, logprobs, status, row, split, tid, bs, nsplit,
                 lo, hi, shc, shm, sm, sq, th, sm_r, flag):
        # The histogram pass over split `split` of row `row` (every thread of the block).
        is_vllm = vllm != 0
        mode, t, k, p, mp, inv_t, kf, xm, thr, done = row_setup(temp, topk, topp, minp,
                                                                is_vllm, si, row, n, kcap)
        sd = seed[row]
        ps = pos[row]
        if mode != F.MODE_MINP and mode != F.MODE_HIST:
            return
        if done:
            return
        if mode == F.MODE_MINP:
            minp_row_hist(x, row, lo, hi, tid, bs, inv_t, is_vllm, thr, seed, pos, pi, split,
                          nsplit, ctr, sm, flag, lp, sf, tokens, logprobs, status, si)
            return
        bsw = np.int64(bs)
        # ---- HIST ------------------------------------------------------------------------
        need_p = p < _F32_1
        minp_vllm = is_vllm and mp > _F32_0
        minp_llama = (not is_vllm) and mp > _F32_0
        kon = k > 0 and k < n
        kkey = order_key(kf)
        tau = _I64_M1
        # (tiles: the count of phase 1's tile maxima of the row, its launch's splits x tpt, at
        # whatever split count this pass runs; 0: no bound)
        G = np.int64(tiles)
        if kon and G >= np.int64(k):
            tau = tile_tau(tm, row, G, np.int64(k), kkey, inv_t, is_vllm, tid, bs, th, sm, sm_r)
        b = tid
        while b < HB:
            shc[b] = np.int32(0)
            shm[b] = _I64_0
            b += bs
        cuda.syncthreads()
        far = np.int32(0)
        mc = _I64_0
        tkey = tau
        if tau < _I64_0:
            tkey = np.int64(1) << np.int64(40)   # no gather: above every key
        i = lo + np.int64(tid)
        vals = cuda.local.array(_UNROLL, np.float32)
        shw = shm.view(np.uint32)  # (the bins' masses as 32-bit word pairs: add_mass)
        # _UNROLL loads per thread in flight (predicated: NaN past the end is skipped)
        while i < hi:
            load_round(x, row, i, hi, bsw, vals)
            for u in range(_UNROLL):
                far, mc = hist_token(vals[u], i + np.int64(u) * bsw, inv_t, is_vllm, minp_vllm,
                                     minp_llama, need_p, thr, kf, xm, tkey, shc, shw, si, row,
                                     cand, capg, far, mc)
            i += bsw * np.int64(_UNROLL)
        if far > np.int32(0):
            atomic_add(shc, _FAR, far)
        if minp_llama:
            mc = block_sum(sm, mc, tid, bs)
            if tid == 0 and mc > _I64_0:
                atomic_add(si, (row, F.HS_MCNT), mc)
        cuda.syncthreads()
        b = tid
        while b < HB:
            c32 = shc[b]
            if c32 != np.int32(0):
                atomic_add(hc, (row, b), np.int64(c32))
            q_ = shm[b]
            if q_ != _I64_0:
                atomic_add(hm, (row, b), q_)
            b += bs
        if not last_block(ctr, row, nsplit, tid, flag):
            return
        # ---- the row's last block: finish from the candidates, or place the boundary bins --
        seg_prefix(hc, hm, row, tid, bs, sm, sq)
        ntot = sm[bs - 1]
        K = ntot
        if kon and np.int64(k) < ntot:
            K = np.int64(k)
        nc = si[row, F.HS_NC]
        cuda.syncthreads()
        if tau >= _I64_0 and nc <= capg:
            # the candidates are the prefix of the order down to tau, and hold the first K
            sort_cands(cand, row, nc, shm, tid, bs)
            M = _BIG
            best = resolve(shm, shm[CAPG:], nc, nc, _I64_0, _I64_0, _I64_0, _I64_0, K, M,
                           _I64_M1, p, minp_llama, thr, xm, is_vllm, inv_t, sd, ps, _I64_M1,
                           tid, bs, sm, sm_r)
            if tid == 0:
                write_token(x, row, best, lp, sf, tokens, logprobs, status, si)
            return
        # boundary bins from the histograms
        seg_find(hc, hm, row, K, False, tid, bs, sm, sq, sm_r, 0)       # Bk: position K - 1
        Bk = sm_r[0]
        CKB = sm_r[1]
        QKB = sm_r[2]
        hck = hc[row, Bk]
        hmk = hm[row, Bk]
        kpart = CKB + hck > K
        Zex = _I64_M1
        tlo = _BIG
        thi = _BIG
        if need_p:
            if not kpart:
                Zex = QKB + hmk
                tlo = topp_target(p, Zex)
                if tlo > Zex:
                    tlo = Zex
                thi = tlo
            else:
                zl = QKB
                zh = QKB + hmk
                tlo = topp_target(p, zl)
                if tlo > zl:
                    tlo = zl
                thi = topp_target(p, zh)
                if thi > zh:
                    thi = zh
            if tlo < _I64_1:
                tlo = _I64_1
            if thi < _I64_1:
                thi = _I64_1
        Bplo = np.int64(HB)
        Bphi = np.int64(HB)
        if need_p:
            seg_find(hc, hm, row, tlo, True, tid, bs, sm, sq, sm_r, 3)
            seg_find(hc, hm, row, thi, True, tid, bs, sm, sq, sm_r, 6)
            Bplo = sm_r[3]
            Bphi = sm_r[6]
        M = _BIG
        Bm = np.int64(HB)
        if minp_llama:
            M = si[row, F.HS_MCNT]
            seg_find(hc, hm, row, M, False, tid, bs, sm, sq, sm_r, 9)
            Bm = sm_r[9]
        if tid == 0:
            # Blo / Bhi and the count and mass before Blo, from the search that found Blo
            blo = Bk
            clo = CKB
            qlo = QKB
            if need_p and Bplo < blo:
                blo = Bplo
                clo = sm_r[4]
                qlo = sm_r[5]
            if minp_llama and Bm < blo:
                blo = Bm
                clo = sm_r[10]
                qlo = sm_r[11]
            bhi = Bk
            chi = CKB + hck   # the count through Bhi
            if need_p and Bphi < bhi:
                bhi = Bphi
                chi = sm_r[7] + hc[row, Bphi]
            if minp_llama and Bm < bhi:
                bhi = Bm
                chi = sm_r[10] + hc[row, Bm]
            bkp = _I64_M1
            if need_p and kpart and Bk > bhi:
                bkp = Bk
            si[row, F.HS_BLO] = blo
            si[row, F.HS_BHI] = bhi
            si[row, F.HS_BKP] = bkp
            si[row, F.HS_CLO] = clo
            si[row, F.HS_QLO] = qlo
            si[row, F.HS_CA] = chi - clo
            si[row, F.HS_K] = K
            si[row, F.HS_M] = M
            si[row, F.HS_Z] = Zex
            si[row, F.HS_CKB] = CKB
            si[row, F.HS_QKB] = QKB
            si[row, F.HS_NC] = 0
            si[row, F.HS_NTOT] = ntot

    @cuda.jit(cache=JIT_CACHE, **register_cap(cuda, "hist", HIST_MAX_REGISTERS))
    def _sample_hist_kernel(x, n, chunk, temp, topk, topp, minp, vllm, seed, pos, lp, tiles, kcap,
                            tm, pi, si, sf, hc, hm, cand, capg, ctr, tokens, logprobs, status,
                            cflag):
        split, y, tid, bs, nsplit, lo, hi = split_block(chunk, n)
        # the histogram lane's request count back to 0 (rocsample.kernels.graph_cond): every
        # kernel that counts has ended before this one starts
        if split == 0 and y == 0 and tid == 0:
            lane_reset(cflag)
        shc = cuda.shared.array(HB, np.int32)
        shm = cuda.shared.array(HB, np.int64)
        sm = cuda.shared.array(_MAX_BLOCK, np.int64)
        sq = cuda.shared.array(_MAX_BLOCK, np.int64)
        th = cuda.shared.array(_NBIN, np.int32)
        sm_r = cuda.shared.array(16, np.int64)
        flag = cuda.shared.array(1, np.int32)
        rl = cuda.shared.array(_MAX_BLOCK, np.int32)
        nl = cuda.shared.array(1, np.int32)
        nr = np.int64(temp.shape[0])
        R = np.int64(cuda.gridDim.y)
        one = R >= nr   # a block a (split, row): no list
        base = np.int64(y)
        while base < nr:
            m = np.int32(1)
            if not one:
                m = row_list(temp, topk, topp, minp, si, n, kcap, True, base, tid, bs, rl, nl)
            for q in range(m):
                row = base if one else np.int64(rl[q])
                hist_row(x, n, temp, topk, topp, minp, vllm, seed, pos, lp, tiles, kcap, tm, pi,
                         si, sf, hc, hm, cand, capg, ctr, tokens, logprobs, status, row, split,
                         tid, bs, nsplit, lo, hi, shc, shm, sm, sq, th, sm_r, flag)
                cuda.syncthreads()
            base += np.int64(bs) * R

    @cuda.jit(cache=JIT_CACHE, **register_cap(cuda, "minp", MINP_MAX_REGISTERS))
    def _sample_minp_kernel(x, n, chunk, temp, topk, topp, minp, vllm, seed, pos, lp, tiles, kcap,
                            tm, pi, si, sf, hc, hm, cand, capg, ctr, tokens, logprobs, status,
                            cflag):
        # The histogram kernel of a route whose histogram-path rows are all MINP (host values:
        # ``sampling_router``), with its arguments: the MINP draw alone (minp_row, as the
        # histogram kernel runs it), without the HIST rows' shared memory and registers, which
        # there hold 4 blocks of 256 threads an SM for a stream that needs neither. Grid
        # splits x rows, a block a (split, row); other rows leave at once.
        split, row, tid, bs, nsplit, lo, hi = split_block(chunk, n)
        # (the histogram kernel's operands, cflag included: as the first kernel of a lane
        # it takes the request count back to 0 likewise)
        if split == 0 and row == 0 and tid == 0:
            lane_reset(cflag)
        sm = cuda.shared.array(_MAX_BLOCK, np.int64)
        flag = cuda.shared.array(1, np.int32)
        is_vllm = vllm != 0
        mode, _t, _k, _p, _mp, inv_t, _kf, _xm, thr, done = row_setup(
            temp, topk, topp, minp, is_vllm, si, row, n, kcap)
        if mode != F.MODE_MINP or done:
            return
        minp_row(x, row, lo, hi, tid, bs, inv_t, is_vllm, thr, seed, pos, pi,
                 split, nsplit, ctr, sm, flag, lp, sf, tokens, logprobs, status, si)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def select_row(x, n, temp, topk, topp, minp, vllm, seed, pos, lp, kcap, pi, si, sf, hc, hm,
                   cand, capg, ctr, tokens, logprobs, status, row, split, tid, bs, nsplit, lo,
                   hi, cs, ms, sm, hist, sm_r, flag, nsv):
        # The select pass over split `split` of row `row` (every thread of the block).
        is_vllm = vllm != 0
        mode, t, k, p, mp, inv_t, kf, xm, thr, done = row_setup(temp, topk, topp, minp,
                                                                is_vllm, si, row, n, kcap)
        sd = seed[row]
        ps = pos[row]
        blo = si[row, F.HS_BLO]
        bhi = si[row, F.HS_BHI]
        bkp = si[row, F.HS_BKP]
        if mode != F.MODE_HIST:
            return
        if done:
            return
        bsw = np.int64(bs)
        minp_vllm = is_vllm and mp > _F32_0
        best = _I64_M1
        i = lo + np.int64(tid)
        vals = cuda.local.array(_UNROLL, np.float32)
        # The survivors below the boundary bins are drawn (Philox and a log each) after each
        # round from a list in shared memory (their indices, in cs's bytes: free until the last
        # block's sort; room for a whole round, bs * _UNROLL <= 2 * CAPG tokens), every thread
        # taking the next: drawn where they stand, every warp holding one would run the draw for
        # all its lanes (about 9% of a row survives top_p 0.95: nearly every warp). The rounds
        # are the same for every thread of the block (barriers inside).
        svl = cs.view(np.int32)
        step = bsw * np.int64(_UNROLL)
        for _r in range((hi - lo + step - _I64_1) // step):
            if tid == 0:
                nsv[0] = np.int32(0)
            cuda.syncthreads()
            load_round(x, row, i, hi, bsw, vals)
            for u in range(_UNROLL):
                v = vals[u]
                j = i + np.int64(u) * bsw
                ok, fv = member(v, inv_t, is_vllm, minp_vllm, thr)
                if ok:
                    b = hbin(fv, kf)
                    if b < blo:
                        svl[atomic_add(nsv, 0, np.int32(1))] = np.int32(j)
                    elif b <= bhi or b == bkp:
                        slot = atomic_add(si, (row, F.HS_NC), _I64_1)
                        if slot < capg:
                            cand[row, slot] = comp_of(fv, j)
            cuda.syncthreads()
            m = nsv[0]
            w = tid
            while w < m:
                j = np.int64(svl[w])
                c = score_comp(load(x, row, j), inv_t, sd, ps, j)
                if c > best:
                    best = c
                w += bs
            cuda.syncthreads()
            i += step
        last, best0 = split_winner(best, pi, row, split, nsplit, ctr, tid, bs, sm, flag)
        if not last:
            return
        nc = si[row, F.HS_NC]
        cuda.syncthreads()
        if nc <= capg:
            sort_cands(cand, row, nc, cs, tid, bs)
            best = resolve(cs, ms, si[row, F.HS_CA], nc, si[row, F.HS_CLO], si[row, F.HS_QLO],
                           si[row, F.HS_CKB], si[row, F.HS_QKB], si[row, F.HS_K],
                           si[row, F.HS_M], si[row, F.HS_Z], p, False, thr, xm, is_vllm,
                           inv_t, sd, ps, best0, tid, bs, sm, sm_r)
        else:
            best = fallback(x, row, n, k, p, mp, is_vllm, inv_t, thr, xm, si[row, F.HS_NTOT], sd,
                            ps, tid, bs, hist, sm, sm_r)
        if tid == 0:
            write_token(x, row, best, lp, sf, tokens, logprobs, status, si)

    @cuda.jit(cache=JIT_CACHE, **register_cap(cuda, "select", SELECT_MAX_REGISTERS))
    def _sample_select_kernel(x, n, chunk, temp, topk, topp, minp, vllm, seed, pos, lp, kcap,
                              pi, si, sf, hc, hm, cand, capg, ctr, tokens, logprobs, status):
        split, y, tid, bs, nsplit, lo, hi = split_block(chunk, n)
        cs = cuda.shared.array(CAPG, np.int64)
        ms = cuda.shared.array(CAPG, np.int64)
        sm = cuda.shared.array(_MAX_BLOCK, np.int64)
        hist = cuda.shared.array(_RBINS, np.int64)
        sm_r = cuda.shared.array(16, np.int64)
        flag = cuda.shared.array(1, np.int32)
        nsv = cuda.shared.array(1, np.int32)
        rl = cuda.shared.array(_MAX_BLOCK, np.int32)
        nl = cuda.shared.array(1, np.int32)
        nr = np.int64(temp.shape[0])
        R = np.int64(cuda.gridDim.y)
        one = R >= nr   # a block a (split, row): no list
        base = np.int64(y)
        while base < nr:
            m = np.int32(1)
            if not one:
                m = row_list(temp, topk, topp, minp, si, n, kcap, False, base, tid, bs, rl, nl)
            for q in range(m):
                row = base if one else np.int64(rl[q])
                select_row(x, n, temp, topk, topp, minp, vllm, seed, pos, lp, kcap, pi, si, sf,
                           hc, hm, cand, capg, ctr, tokens, logprobs, status, row, split, tid,
                           bs, nsplit, lo, hi, cs, ms, sm, hist, sm_r, flag, nsv)
                cuda.syncthreads()
            base += np.int64(bs) * R

    # --- the nucleus pass ----------------------------------------------------------------------
    _ex2 = _nvvm.approx_ftz(cuda, "ex2")
    if _ex2 is not None:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def dist_exp(d):
            # numba-cuda: 2**(d * log2(e)) by ex2.approx.ftz, the product one
            # FFMA of log2(e)'s two float32 halves (sm_90: 4 instructions where expf's range
            # reduction took 10; _AMASS_CUDA_REL)
            return _ex2(cuda.fma(d, _L2E_HI, np.float32(d * _L2E_LO)))
    else:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def dist_exp(d):
            # expf (the device library's on numba-hip)
            return np.float32(math.exp(d))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def amass(fv, kf):
        # hmass(fv, float64(kf)) / 2**40 approximately, in float32: within NUC_REL of it
        # relative, plus half a unit (see NUC_REL). The maximum's equals: 1 (also an infinite
        # scaled maximum, where fv - kf is NaN).
        if fv == kf:
            return _F32_1
        return dist_exp(np.float32(fv - kf))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def add_before4(fv, j, e, f1, w1, f2, w2, f3, w3, f4, w4, q1, q2, q3, q4):
        # A token's mass e (filter value fv, index j) added to the sums before each of the four
        # best (filter values f1 .. f4 at w1 .. w4; -1 for none, which no token precedes) it
        # precedes in the order (value desc, index asc); one body for the approximate sums
        # (nuc_token4: int32 indices, float64 sums) and the exact ones (exact_token4: int64).
        if fv > f1 or (fv == f1 and j < w1):
            q1 += e
        if fv > f2 or (fv == f2 and j < w2):
            q2 += e
        if fv > f3 or (fv == f3 and j < w3):
            q3 += e
        if fv > f4 or (fv == f4 and j < w4):
            q4 += e
        return q1, q2, q3, q4

    # nuc_token's skip of the tie tests below fmin: not on numba-hip, where it took gfx942's
    # plain float32 nucleus pass from 42 to 44 VGPRs
    # (tests/regress/test_fold_round_grew_the_nucleus_pass_on_amd.py)
    SKIP = not _numba_hip(cuda)

    def _tokens(RANK):
        # The pass's token steps (nuc_token, nuc_token4) of the nucleus pass (masses) or, RANK,
        # the rank pass (counts: top-k-only rows).
        @cuda.jit(device=True, cache=JIT_CACHE)
        def term(fv, kf, z):
            # A finite token's term in the sums before the best (its approximate mass; RANK:
            # _RANK_E, a count), and the row's sum z with its mass added (RANK: unchanged).
            if RANK:
                return _RANK_E, z
            e = np.float64(amass(fv, kf))
            return e, z + e

        @cuda.jit(device=True, cache=JIT_CACHE)
        def nuc_token(v, j, inv_t, vllm, kf, fmin, f1, w1, f2, w2, z, q1, q2):
            # One token of the nucleus pass: its approximate mass into the row's (z) and into
            # the masses before each of the two tokens it precedes (filter values f1, f2 at
            # w1, w2); RANK (the rank pass): _RANK_E, a count, into the sums before them alone.
            # fmin: the lesser of f1, f2; a token below it precedes neither, so most tokens
            # take one compare past the sum (as nuc_token4; sm_90: the plain nucleus pass's
            # common path 8 instructions shorter a token).
            if is_finite(v):
                fv = filt(v, inv_t, vllm)
                e, z = term(fv, kf, z)
                if fv >= fmin or not SKIP:
                    if fv > f1 or (fv == f1 and j < w1):
                        q1 += e
                    if fv > f2 or (fv == f2 and j < w2):
                        q2 += e
            return z, q1, q2

        @cuda.jit(device=True, cache=JIT_CACHE)
        def nuc_token4(v, j, inv_t, vllm, kf, fmin, f1, w1, f2, w2, f3, w3, f4, w4, z, q1, q2,
                       q3, q4):
            # nuc_token for the four best of a TOP4 launch (int32 indices w1 .. w4; fmin the
            # least of f1 .. f4: a token below it precedes none, so most tokens take one
            # compare past the sum).
            if is_finite(v):
                fv = filt(v, inv_t, vllm)
                e, z = term(fv, kf, z)
                if fv >= fmin:
                    q1, q2, q3, q4 = add_before4(fv, np.int32(j), e, f1, w1, f2, w2, f3, w3, f4,
                                                 w4, q1, q2, q3, q4)
            return z, q1, q2, q3, q4

        return nuc_token, nuc_token4

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_or_nan(xr, j, n):
        # Logit j of the one-row view xr, NaN from n on.
        v = _F32_NAN
        if j < n:
            v = load(xr, 0, j)
        return v

    @cuda.jit(device=True, cache=JIT_CACHE)
    def exact_token4(v, j, inv_t, vllm, xm, f1, w1, f2, w2, f3, w3, f4, w4, ez, e1, e2, e3, e4):
        # The finishing form's exact pass, one token: its integer mass (hmass, the reference's)
        # added to the row's sum ez and to the sums before each of the best it precedes
        # (int64 indices w1 .. w4, -1 for none: no token precedes it).
        if is_finite(v):
            fv = filt(v, inv_t, vllm)
            e = hmass(fv, xm)
            ez += e
            e1, e2, e3, e4 = add_before4(fv, j, e, f1, w1, f2, w2, f3, w3, f4, w4, e1, e2, e3, e4)
        return ez, e1, e2, e3, e4

    @cuda.jit(device=True, cache=JIT_CACHE)
    def nuc_value(x, row, w, inv_t, vllm):
        # Token w's filter value, +inf for none (w = -1: no token precedes it).
        f = _F32_INF
        if w >= _I64_0:
            f = filt(load(x, row, w), inv_t, vllm)
        return f

    @cuda.jit(device=True, cache=JIT_CACHE)
    def mass_err(q, n):
        # A bound of |exact - approximate| for a sum q of at most n amass terms (NUC_REL
        # relative each, inflated for the exact sum being larger, plus two units a term).
        return (q >> np.int64(_AM_SHIFT)) + np.int64(2) * n + np.int64(2)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def nuc_verdict(q, n, tlo, thi):
        # 1: a token with approximate mass q before it survives top-p for every exact total in
        # the bounds (its exact mass before is below the lowest target), -1: for none, 0: the
        # bounds do not decide.
        e = mass_err(q, n)
        if q + e < tlo:
            return 1
        if q - e >= thi:
            return -1
        return 0

    @cuda.jit(device=True, cache=JIT_CACHE)
    def rank_verdict(q, n, tlo, thi):
        # nuc_verdict of the rank pass: q the exact count before a best token (in units of
        # 2**_RANK_SHIFT), tlo = thi = top_k's: 1 where fewer than top_k come before it, else
        # -1 (never undecided).
        return 1 if q < tlo else -1

    def _nucleus(FINISH, RANK, FOUR=False):
        # The nucleus pass; FINISH: its form that finishes the rows the bounds leave undecided
        # in the row's last block (the histogram and select passes as one block, hist_row and
        # select_row over the whole row), for routes that then launch neither pass
        # (``sampling_router.Route.finish``). RANK: the rank pass, the same pass for top-k-only
        # rows (the top-p-only rows' pass leaves them, and this one those): it counts the
        # tokens before each of the best (exact), and the first with fewer than top_k before
        # it is the token. FOUR (FINISH implies it): the sums before each of phase 1's four
        # best (its TOP4 form), else two. All take the histogram kernel's operands.
        FOUR = FOUR or FINISH
        nuc_token, nuc_token4 = _tokens(RANK)
        block_sums = block_sums4 if FOUR else block_sums2
        verdict = rank_verdict if RANK else nuc_verdict
        NH = HB if FINISH else 1   # the finish's bins (its other arrays are views of these)
        N4 = _MAX_BLOCK if FOUR else 1   # the third and fourth best's sums (phase 1's TOP4)
        form = ("rank" if RANK else "nucleus") + ("_finish" if FINISH else
                                                   "4" if RANK and FOUR else "")
        NU = _nuc_unroll(form, cuda)
        # the finishing form's exact pass: four tokens a round, one on numba-hip (there)
        X4 = not _numba_hip(cuda)

        # (the register family is the form: ROCSAMPLE_MAX_REGISTERS="nucleus=40,rank4=48")
        @cuda.jit(cache=JIT_CACHE, **register_cap(
            cuda, form, NUC_MAX_REGISTERS if form == "nucleus" else NUC_FINISH_MAX_REGISTERS))
        def kern(x, n, chunk, temp, topk, topp, minp, vllm, seed, pos, lp, tiles, kcap, tm, pi, si,
                 sf, hc, hm, cand, capg, ctr, tokens, logprobs, status, cflag):
            # Top-p-only rows of a TOP2 launch (grid splits x rows, the second read): the masses
            # of the row and of the tokens before each of phase 1's two best in the filter
            # order, approximately; the row's last block finishes the row when the bounds
            # decide (see the module docstring), else leaves it to the histogram path (FINISH:
            # runs that path itself, one block over the row).
            split, row, tid, bs, nsplit, lo, hi = split_block(chunk, n)
            # the row as a one-row view (no row-stride multiply a load); whole rounds without a
            # bounds test, then one predicated round (NaN past the end is skipped like any NaN)
            bsw = np.int64(bs)
            i = lo + np.int64(tid)
            vals = cuda.local.array(NU, np.float32)
            xr = x[row:row + 1]
            span = bsw * np.int64(NU)
            last = span - bsw
            sz = cuda.shared.array(_MAX_BLOCK, np.int64)
            s1 = cuda.shared.array(_MAX_BLOCK, np.int64)
            s2 = cuda.shared.array(_MAX_BLOCK, np.int64)
            s3 = cuda.shared.array(N4, np.int64)
            s4 = cuda.shared.array(N4, np.int64)
            flag = cuda.shared.array(1, np.int32)
            shc = cuda.shared.array(NH, np.int32)
            shm = cuda.shared.array(NH, np.int64)
            sm_r = cuda.shared.array(16, np.int64)
            nsv = cuda.shared.array(1, np.int32)
            is_vllm = vllm != 0
            mode, t, k, p, mp, inv_t, kf, xm, thr, done = row_setup(temp, topk, topp, minp,
                                                                    is_vllm, si, row, n, kcap)
            # the two tokens of phase 1 (loaded with the row's state, before the branches)
            w1 = si[row, F.HS_W1]
            w2 = si[row, F.HS_W2]
            w3 = _I64_M1
            w4 = _I64_M1
            if FOUR:
                w3 = si[row, F.HS_W3]
                w4 = si[row, F.HS_W4]
            # (the rows of phase 1's row_nuc this form serves: top-p-only, or RANK top-k-only)
            if RANK:
                mine = k > 0 and k < n and not p < _F32_1
            else:
                mine = not (k > 0 and k < n)
            if mode != F.MODE_HIST or not mine or mp > _F32_0:
                return
            if done:
                return
            # the two tokens' filter values: a token precedes one in the order (key desc, index
            # asc) when its value is larger, or equal at a lower index (float compares: -0.0
            # and 0.0 are one key, as in order_key); no second token: +inf at index -1, which
            # none precedes
            f1 = filt(load(x, row, w1), inv_t, is_vllm)
            f2 = nuc_value(x, row, w2, inv_t, is_vllm)
            z = _F64_0
            q1 = _F64_0
            q2 = _F64_0
            q3 = _F64_0
            q4 = _F64_0
            # (the finishing form: phase 1 left up to four, its TOP2 form W3 = W4 = -1)
            f3 = _F32_INF
            f4 = _F32_INF
            fmin = min(f1, f2)
            if FOUR:
                f3 = nuc_value(x, row, w3, inv_t, is_vllm)
                f4 = nuc_value(x, row, w4, inv_t, is_vllm)
                fmin = min(min(f1, f2), min(f3, f4))
            v1 = np.int32(w1)
            v2 = np.int32(w2)
            v3 = np.int32(w3)
            v4 = np.int32(w4)
            # (Each loop folds its round in place: through one device function holding both
            # forms' branch, numba-hip's plain float32 pass took 48 VGPRs on gfx1151 instead of
            # 40; tests/regress/test_fold_round_grew_the_nucleus_pass_on_amd.py. Every form
            # takes int32 indices (n < 2**31): the plain rank pass sm_90 180 -> 163 SASS
            # instructions a round of 8 tokens and 48 -> 32 registers; the plain nucleus pass,
            # under its cap of 32 (NUC_MAX_REGISTERS), 114 -> 104 a round of 4 and no spill
            # where int64 ones spilled 12 bytes.)
            while i + last < hi:
                for u in range(NU):
                    vals[u] = load(xr, 0, i + np.int64(u) * bsw)
                for u in range(NU):
                    if FOUR:
                        z, q1, q2, q3, q4 = nuc_token4(vals[u], i + np.int64(u) * bsw, inv_t,
                                                       is_vllm, kf, fmin, f1, v1, f2, v2, f3, v3,
                                                       f4, v4, z, q1, q2, q3, q4)
                    else:
                        z, q1, q2 = nuc_token(vals[u], np.int32(i + np.int64(u) * bsw), inv_t,
                                              is_vllm, kf, fmin, f1, v1, f2, v2, z, q1, q2)
                i += span
            if i < hi:
                load_round(xr, 0, i, hi, bsw, vals)
                for u in range(NU):
                    if FOUR:
                        z, q1, q2, q3, q4 = nuc_token4(vals[u], i + np.int64(u) * bsw, inv_t,
                                                       is_vllm, kf, fmin, f1, v1, f2, v2, f3, v3,
                                                       f4, v4, z, q1, q2, q3, q4)
                    else:
                        z, q1, q2 = nuc_token(vals[u], np.int32(i + np.int64(u) * bsw), inv_t,
                                              is_vllm, kf, fmin, f1, v1, f2, v2, z, q1, q2)
            # the block's sums (integers: the same totals in either form), then thread 0 adds
            # them to the row's
            tz, t1, t2, t3, t4 = block_sums(sz, s1, s2, s3, s4, np.int64(z * _AM_SCALE),
                                            np.int64(q1 * _AM_SCALE), np.int64(q2 * _AM_SCALE),
                                            np.int64(q3 * _AM_SCALE), np.int64(q4 * _AM_SCALE),
                                            tid, bs)
            if tid == 0:
                atomic_add(si, (row, F.HS_NZ), tz)
                atomic_add(si, (row, F.HS_NS1), t1)
                atomic_add(si, (row, F.HS_NS2), t2)
                if FOUR:
                    atomic_add(si, (row, F.HS_NS3), t3)
                    atomic_add(si, (row, F.HS_NS4), t4)
            if not last_block(ctr, row, nsplit, tid, flag):
                return
            if tid == 0:
                nn = np.int64(n)
                if RANK:
                    # (a best token survives where fewer than k tokens come before it)
                    tlo = np.int64(k) << np.int64(_RANK_SHIFT)
                    thi = tlo
                else:
                    zq = si[row, F.HS_NZ]
                    ez = mass_err(zq, nn)
                    tlo = topp_target(p, max(zq - ez, _I64_0))
                    thi = topp_target(p, zq + ez)
                tok = _I64_M1
                how = F.NUC_NONE
                # the first of the best that survives, while each before it surely does not
                v = verdict(si[row, F.HS_NS1], nn, tlo, thi)
                if v == 1:
                    tok = w1
                    how = F.NUC_W1
                if v == -1 and w2 >= _I64_0:
                    v = verdict(si[row, F.HS_NS2], nn, tlo, thi)
                    if v == 1:
                        tok = w2
                        how = F.NUC_W2
                if FOUR and v == -1 and w3 >= _I64_0:
                    v = verdict(si[row, F.HS_NS3], nn, tlo, thi)
                    if v == 1:
                        tok = w3
                        how = F.NUC_W3
                if FOUR and v == -1 and w4 >= _I64_0:
                    v = verdict(si[row, F.HS_NS4], nn, tlo, thi)
                    if v == 1:
                        tok = w4
                        how = F.NUC_W4
                si[row, F.HS_NUC] = how
                # (FINISH: 2 where the bounds straddled the target: the exact pass below)
                nsv[0] = 2 if FINISH and not RANK and v == 0 else 1
                if tok >= _I64_0:
                    put_token(x, row, tok, lp, sf[row, F.HF_LSE], row, tokens, logprobs, status)
                    si[row, F.HS_DONE] = 1
                    nsv[0] = 0
                elif not FINISH:
                    # the row left to the histogram and select passes asks for their lane (a
                    # conditional node's body under a capture on CUDA, where the router makes
                    # it one: sampling_router.NUC_COND_MAX_ROWS; kernels.graph_cond)
                    need_lane(cflag)
            if FINISH:
                cuda.syncthreads()
                if not RANK and nsv[0] == 2:
                    # The bounds straddled the target: the exact sums themselves, the reference's
                    # integer masses (hmass) of the row and before each of the best, by this
                    # block over the row (one float64 exponential a token), where the histogram
                    # and select passes by one block took about 130 us at 32000 logits (H200,
                    # bench/test_sampling.py's 256 x 32000 inputs, row 255; this pass one token
                    # a step took 49)
                    ez = _I64_0
                    e1 = _I64_0
                    e2 = _I64_0
                    e3 = _I64_0
                    e4 = _I64_0
                    # X4 (numba-cuda and the simulator): four tokens a round, loaded together
                    # and summed after, so the round's float64 exponentials are independent (one
                    # token a step, each step waiting for its load and then its exponential,
                    # took 49 us at 32000 logits on the H200). Scalars, not a round array (the
                    # body is too long to unroll). On numba-hip one token a step: its gfx1151
                    # code of the float16 form, four a round, stopped inlining a device function
                    # (a call frame in scratch, which the AMD offline gate refuses).
                    # NaN past the end is skipped like any NaN.
                    i = np.int64(tid)
                    while i < np.int64(n):
                        va = load_or_nan(xr, i, n)
                        if X4:
                            vb = load_or_nan(xr, i + bsw, n)
                            vc = load_or_nan(xr, i + np.int64(2) * bsw, n)
                            vd = load_or_nan(xr, i + np.int64(3) * bsw, n)
                        ez, e1, e2, e3, e4 = exact_token4(va, i, inv_t, is_vllm, xm, f1, w1, f2,
                                                          w2, f3, w3, f4, w4, ez, e1, e2, e3, e4)
                        if X4:
                            ez, e1, e2, e3, e4 = exact_token4(
                                vb, i + bsw, inv_t, is_vllm, xm, f1, w1, f2, w2, f3, w3, f4, w4,
                                ez, e1, e2, e3, e4)
                            ez, e1, e2, e3, e4 = exact_token4(
                                vc, i + np.int64(2) * bsw, inv_t, is_vllm, xm, f1, w1, f2, w2,
                                f3, w3, f4, w4, ez, e1, e2, e3, e4)
                            ez, e1, e2, e3, e4 = exact_token4(
                                vd, i + np.int64(3) * bsw, inv_t, is_vllm, xm, f1, w1, f2, w2,
                                f3, w3, f4, w4, ez, e1, e2, e3, e4)
                        i += np.int64(4 if X4 else 1) * bsw
                    ez, e1, e2, e3, e4 = block_sums4(sz, s1, s2, s3, s4, ez, e1, e2, e3, e4,
                                                     tid, bs)
                    if tid == 0:
                        # the first of the best before whose exact mass the target is not
                        # reached (absent ones, -1, are skipped)
                        tgt = topp_target(p, ez)
                        tok = _I64_M1
                        if e1 < tgt:
                            tok = w1
                        elif w2 >= _I64_0 and e2 < tgt:
                            tok = w2
                        elif w3 >= _I64_0 and e3 < tgt:
                            tok = w3
                        elif w4 >= _I64_0 and e4 < tgt:
                            tok = w4
                        nsv[0] = 1
                        if tok >= _I64_0:
                            put_token(x, row, tok, lp, sf[row, F.HF_LSE], row, tokens, logprobs,
                                      status)
                            si[row, F.HS_DONE] = 1
                            si[row, F.HS_NUC] = F.NUC_EXACT
                            nsv[0] = 0
                    cuda.syncthreads()
                # the row the bounds leave: the histogram and select passes over the whole
                # row by this block (one split: each pass's count is this block's alone, the
                # nucleus pass's own, back at 0), in this block's shared memory: the bins in
                # shc / shm, then the select's candidates and masses in shm's halves; the
                # block-wide scratch in sz, s1, s2 (the tile bound's bins and the fallback's
                # digits in s2). A top-k row's tile bound from phase 1's `tiles` tile maxima:
                # its candidates gathered, the row finished from them (no select pass) where
                # they fit.
                if nsv[0] == 0:
                    return
                hist_row(x, n, temp, topk, topp, minp, vllm, seed, pos, lp, tiles, kcap, tm, pi,
                         si, sf, hc, hm, cand, capg, ctr, tokens, logprobs, status, row,
                         _I64_0, tid, bs, 1, _I64_0, np.int64(n), shc, shm, sz, s1,
                         s2.view(np.int32), sm_r, flag)
                cuda.syncthreads()
                select_row(x, n, temp, topk, topp, minp, vllm, seed, pos, lp, kcap, pi, si, sf,
                           hc, hm, cand, capg, ctr, tokens, logprobs, status, row, _I64_0, tid,
                           bs, 1, _I64_0, np.int64(n), shm[:CAPG], shm[CAPG:], sz, s2, sm_r,
                           flag, nsv)

        return kern

    _sample_nucleus_kernel = _nucleus(False, False)
    _sample_nucleus_finish_kernel = _nucleus(True, False)
    _sample_rank_kernel = _nucleus(False, True)
    _sample_rank_finish_kernel = _nucleus(True, True)
    _sample_rank4_kernel = _nucleus(False, True, True)

    return SimpleNamespace(_sample_hist_kernel=_sample_hist_kernel,
                           _sample_minp_kernel=_sample_minp_kernel,
                           _sample_select_kernel=_sample_select_kernel,
                           _sample_nucleus_kernel=_sample_nucleus_kernel,
                           _sample_nucleus_finish_kernel=_sample_nucleus_finish_kernel,
                           _sample_rank_kernel=_sample_rank_kernel,
                           _sample_rank_finish_kernel=_sample_rank_finish_kernel,
                           _sample_rank4_kernel=_sample_rank4_kernel)
