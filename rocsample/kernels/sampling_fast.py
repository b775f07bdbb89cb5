"""Device code for the two-kernel sampling path (greedy, temperature, small top-k chains).

``make(cuda, load, h)`` compiles, for one logits loader, the two kernels of the fast path;
``rocsample.sampling`` takes it whenever every row's parameters are host values and each row is
greedy, temperature-only, or has ``0 < top_k <= KCAP`` (with any top_p, min_p and order). Other
rows (top_p or min_p without a small top_k, device parameter arrays) use the general path in
``rocsample.kernels.sampling``. Both paths give the same tokens (tests compare them, and both
with the NumPy reference).

1. ``_sample_partials_fast_kernel`` (grid splits x rows, one read of each row slice). Per split:
   the maximum finite logit and its lowest index, the online (max, sum exp) pair for the
   log-sum-exp (``LP`` variant), the best Gumbel score of temperature-only rows (``DRAW``
   variant), and for top-k rows the *tile maxima*: the split's threads fall into ``tpt`` tiles
   (thread t in tile ``t % tpt``) and each tile's largest finite logit is written to scratch.
2. ``_sample_finalize_fast_kernel`` (one block per row). Greedy and temperature rows are done
   after the reduction. A top-k row (``0 < k <= KCAP``) then:

   a. takes ``tau`` = the k-th largest tile maximum (as an order-preserving key of the filter
      key: raw logit for llama, scaled logit for vllm). The k tiles whose maxima are >= tau hold
      k distinct tokens >= tau, so the row's k-th largest key is >= tau: every token of the top
      k has key >= tau. (With fewer than k non-empty tiles, tau is the lowest key.)
   b. gathers the finite tokens with key >= tau, reading only the tiles whose maximum is >= tau
      (about k tiles of ``n / tiles`` tokens: a few percent of the row), into a candidate list in
      shared memory, and sorts it by (key desc, index asc) with a bitonic sort;
   c. applies the filters on that sorted prefix exactly as the reference does (top-k, top-p with
      the integer masses ``floor(exp(float64(x) - float64(x_max)) * 2**40 + 0.5)``, min-p with the
      float64 threshold; llama or vllm order), and
   d. draws the Gumbel-max over the survivors (Philox only for them) and writes token, logprob
      and status.

   When the candidates overflow the list (``cap``, adversarial rows such as sorted logits), the
   same block finds the k-th key exactly by a radix select over the row (four 8-bit digit passes)
   and gathers the top k in index order (ties to the lower index), then continues at (c):
   slower (one block reads the row five times) but exact.

Reads of the logits: greedy and temperature 1; top-k chains 1 plus the gathered tiles (about
``k * n / tiles`` tokens, from L2 at small batch). Every choice is an exact comparison or an
integer sum, so tokens do not depend on split count, tile count or block size.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from rocsample.kernels import JIT_CACHE

#: Largest top_k served by the fast path (one survivor per thread slot of the filter steps).
KCAP = 256
#: Candidate list capacity per row (shared memory); the gather overflows past it.
CAND_MAX = 1024
#: Tile maxima per row the finalize block can select over (shared memory).
GMAX = 2048
#: Threads per block the shared arrays are sized for.
MAX_BLOCK = 512
#: Radix digit of the in-block selects.
_RBITS = 8
_RBINS = 1 << _RBITS

_MASS_SCALE = np.float64(2.0 ** 40)
_F64_HALF = np.float64(0.5)
_F32_0 = np.float32(0.0)
_F32_1 = np.float32(1.0)
_F32_NINF = np.float32(-np.inf)
_F64_NINF = np.float64(-np.inf)
_F64_NAN = np.float64(np.nan)
_F64_0 = np.float64(0.0)
_I64_0 = np.int64(0)
_I64_1 = np.int64(1)
_I64_M1 = np.int64(-1)
_LOW31 = np.int64(0x7FFFFFFF)
_S31 = np.int64(31)

STATUS_OK = 0
STATUS_NO_FINITE = 1


def make(cuda, load, h):
    """Compile the fast-path kernels for one logits loader.

    Parameters
    ----------
    cuda : module
        numba.cuda, its simulator, or numba.hip posing as cuda.
    load : device function ``load(x, row, i) -> float32``
    h : namespace
        Shared device helpers: ``is_finite``, ``order_key``, ``token_gumbel``,
        ``merge_max``, ``block_argmax``.

    Returns
    -------
    types.SimpleNamespace
        ``partials(draw, lp)`` (a cached factory of ``_sample_partials_fast_kernel`` variants)
        and ``_sample_finalize_fast_kernel``.
    """
    is_finite = h.is_finite
    order_key = h.order_key
    token_gumbel = h.token_gumbel
    merge_max = h.merge_max
    block_argmax = h.block_argmax

    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_topk(t, k, n):
        return t > _F32_0 and k > 0 and k < n

    @cuda.jit(device=True, cache=JIT_CACHE)
    def filter_key(v, inv_t, vllm):
        # The order key of the filter value: raw logit (llama) or scaled logit (vllm).
        if vllm:
            return order_key(np.float32(v * inv_t))
        return order_key(v)

    def _partials(DRAW, LP):
        # DRAW and LP are compile-time constants of each variant: the greedy variant's loop is a
        # load, a finiteness test and a compare per token, with 8 loads in flight per thread.
        UNROLL = 4 if DRAW else 8
        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold(v, j, bv, bi, bg, bgi, lm, ls, race, inv_t, sd, ps):
            if is_finite(v):
                if v > bv:
                    bv = v
                    bi = j
                if DRAW:
                    if race:
                        g = np.float32(v * inv_t) + token_gumbel(sd, ps, j)
                        if g > bg:
                            bg = g
                            bgi = j
                if LP:
                    if v > lm:
                        ls = ls * np.float32(math.exp(lm - v)) + _F32_1
                        lm = v
                    else:
                        ls += np.float32(math.exp(v - lm))
            return bv, bi, bg, bgi, lm, ls

        @cuda.jit(cache=JIT_CACHE)
        def _sample_partials_fast_kernel(x, n, chunk, temp, topk, seed, pos, tpt, pf, pi, tm):
            split = cuda.blockIdx.x
            row = cuda.blockIdx.y
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            sm_v = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_i = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_g = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_gi = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_lm = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_ls = cuda.shared.array(MAX_BLOCK, np.float32)
            t = temp[row]
            k = topk[row]
            tiles = row_topk(t, k, n)
            race = False
            inv_t = _F32_1
            sd = np.uint64(0)
            ps = np.uint64(0)
            if DRAW:
                race = t > _F32_0 and not tiles
                if race:
                    inv_t = _F32_1 / t
                    sd = seed[row]
                    ps = pos[row]
            lo = np.int64(split) * chunk
            hi = min(lo + chunk, n)
            bv = _F32_NINF
            bi = np.int64(n)
            bg = _F32_NINF
            bgi = np.int64(n)
            lm = _F32_NINF
            ls = _F32_0
            bs1 = np.int64(bs)
            i = lo + tid
            # UNROLL loads in flight per thread (issued before any is used), folded in increasing
            # index order so a strict '>' keeps the lowest index of a tie; then the tail.
            span = bs1 * np.int64(UNROLL)
            vals = cuda.local.array(UNROLL, np.float32)
            while i + span - bs1 < hi:
                for u in range(UNROLL):
                    vals[u] = load(x, row, i + np.int64(u) * bs1)
                for u in range(UNROLL):
                    bv, bi, bg, bgi, lm, ls = fold(vals[u], i + np.int64(u) * bs1, bv, bi, bg, bgi,
                                                   lm, ls, race, inv_t, sd, ps)
                i += span
            while i < hi:
                v0 = load(x, row, i)
                bv, bi, bg, bgi, lm, ls = fold(v0, i, bv, bi, bg, bgi, lm, ls, race, inv_t, sd, ps)
                i += bs1
            sm_v[tid] = bv
            sm_i[tid] = bi
            if DRAW:
                sm_g[tid] = bg
                sm_gi[tid] = bgi
            if LP:
                sm_lm[tid] = lm
                sm_ls[tid] = ls
            base = np.int64(split) * np.int64(tpt)
            if tiles and tpt >= bs:
                tm[row, base + tid] = bv
            cuda.syncthreads()
            # bs is a power of two on this path: after the steps >= tpt, slot t < tpt holds the
            # maximum over the threads t + m * tpt (tile t).
            step = bs // 2
            while step > 0:
                if tid < step:
                    o = tid + step
                    merge_max(sm_v, sm_i, tid, o)
                    if DRAW:
                        merge_max(sm_g, sm_gi, tid, o)
                    if LP:
                        am = sm_lm[tid]
                        bm = sm_lm[o]
                        if bm > am:
                            sm_ls[tid] = sm_ls[tid] * np.float32(math.exp(am - bm)) + sm_ls[o]
                            sm_lm[tid] = bm
                        elif bm > _F32_NINF:
                            sm_ls[tid] += sm_ls[o] * np.float32(math.exp(bm - am))
                cuda.syncthreads()
                if tiles and step == tpt and tid < tpt:
                    tm[row, base + tid] = sm_v[tid]
                step //= 2
            if tid == 0:
                pf[row, split, 0] = sm_v[0]
                pi[row, split, 0] = sm_i[0]
                if DRAW:
                    pf[row, split, 1] = sm_g[0]
                    pi[row, split, 1] = sm_gi[0]
                else:
                    pf[row, split, 1] = _F32_NINF
                    pi[row, split, 1] = np.int64(n)
                if LP:
                    pf[row, split, 2] = sm_lm[0]
                    pf[row, split, 3] = sm_ls[0]
                else:
                    pf[row, split, 2] = _F32_NINF
                    pf[row, split, 3] = _F32_0

        return _sample_partials_fast_kernel

    variants = {}

    def partials(draw, lp):
        key = (bool(draw), bool(lp))
        kern = variants.get(key)
        if kern is None:
            kern = variants[key] = _partials(*key)
        return kern

    # --- block-wide helpers (every thread of the block must call them) ----------------------
    @cuda.jit(device=True, cache=JIT_CACHE)
    def block_incl_scan(sm, tid, bs):
        # Inclusive prefix sum of sm[0:bs] (int64), Hillis-Steele.
        off = 1
        while off < bs:
            add = _I64_0
            if tid >= off:
                add = sm[tid - off]
            cuda.syncthreads()
            sm[tid] += add
            cuda.syncthreads()
            off *= 2

    @cuda.jit(device=True, cache=JIT_CACHE)
    def digit_pick(hist, sm_s, sm_r, tid, bs, need):
        # hist[0:_RBINS] counts per digit; find the digit d (from the top) where the count of
        # keys with a larger digit is < need <= that count plus hist[d]. Writes
        # sm_r[0] = d, sm_r[1] = count above d. Thread t owns bins counted from the top.
        per = (_RBINS + bs - 1) // bs
        c = _I64_0
        for q in range(per):
            p_ = np.int64(tid) * per + q
            if p_ < _RBINS:
                c += hist[_RBINS - 1 - p_]
        sm_s[tid] = c
        cuda.syncthreads()
        block_incl_scan(sm_s, tid, bs)
        run = sm_s[tid] - c
        if run < need and run + c >= need:
            for q in range(per):
                p_ = np.int64(tid) * per + q
                if p_ < _RBINS:
                    hb = hist[_RBINS - 1 - p_]
                    if run < need and run + hb >= need:
                        sm_r[0] = _RBINS - 1 - p_
                        sm_r[1] = run
                    run += hb
        cuda.syncthreads()

    @cuda.jit(device=True, cache=JIT_CACHE)
    def bitonic_desc(arr, size, tid, bs):
        # Sorts arr[0:size] (int64, size a power of two) descending. Index math by shifts: a
        # 64-bit division per compare-swap made this the slowest step of the whole path.
        half = size // 2
        width = np.int64(2)
        lw = np.int64(1)
        while width <= size:
            stride = width // 2
            ls = lw - 1
            while stride > 0:
                q = np.int64(tid)
                while q < half:
                    a_ = ((q >> ls) << (ls + 1)) | (q & (stride - 1))
                    b_ = a_ + stride
                    desc = (a_ & width) == 0
                    va = arr[a_]
                    vb = arr[b_]
                    if (va < vb) == desc:
                        arr[a_] = vb
                        arr[b_] = va
                    q += bs
                cuda.syncthreads()
                stride //= 2
                ls -= 1
            width *= 2
            lw += 1

    @cuda.jit(cache=JIT_CACHE)
    def _sample_finalize_fast_kernel(x, n, nsplit, chunk, p1_bs, tpt, cap, temp, topk, topp,
                                     minp, vllm, seed, pos, pf, pi, tm, tokens, logprobs,
                                     status):
        row = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        bs = cuda.blockDim.x
        sm_v = cuda.shared.array(MAX_BLOCK, np.float32)
        sm_i = cuda.shared.array(MAX_BLOCK, np.int64)
        sm_g = cuda.shared.array(MAX_BLOCK, np.float32)
        sm_gi = cuda.shared.array(MAX_BLOCK, np.int64)
        sm_lm = cuda.shared.array(MAX_BLOCK, np.float64)
        sm_ls = cuda.shared.array(MAX_BLOCK, np.float64)
        sk = cuda.shared.array(GMAX, np.int64)
        cand = cuda.shared.array(CAND_MAX, np.int64)
        hist = cuda.shared.array(_RBINS, np.int64)
        sm_r = cuda.shared.array(8, np.int64)
        bv = _F32_NINF
        bi = np.int64(n)
        bg = _F32_NINF
        bgi = np.int64(n)
        lm = _F64_NINF
        ls = _F64_0
        s = tid
        while s < nsplit:
            v = pf[row, s, 0]
            vi = pi[row, s, 0]
            if v > bv or (v == bv and vi < bi):
                bv = v
                bi = vi
            g = pf[row, s, 1]
            gi = pi[row, s, 1]
            if g > bg or (g == bg and gi < bgi):
                bg = g
                bgi = gi
            m2 = np.float64(pf[row, s, 2])
            s2 = np.float64(pf[row, s, 3])
            if m2 > lm:
                ls = ls * math.exp(lm - m2) + s2
                lm = m2
            elif m2 > _F64_NINF:
                ls += s2 * math.exp(m2 - lm)
            s += bs
        sm_v[tid] = bv
        sm_i[tid] = bi
        sm_g[tid] = bg
        sm_gi[tid] = bgi
        sm_lm[tid] = lm
        sm_ls[tid] = ls
        cuda.syncthreads()
        step = 1
        while step < bs:
            step *= 2
        step //= 2
        while step > 0:
            if tid < step and tid + step < bs:
                o = tid + step
                merge_max(sm_v, sm_i, tid, o)
                merge_max(sm_g, sm_gi, tid, o)
                am = sm_lm[tid]
                bm = sm_lm[o]
                if bm > am:
                    sm_ls[tid] = sm_ls[tid] * math.exp(am - bm) + sm_ls[o]
                    sm_lm[tid] = bm
                elif bm > _F64_NINF:
                    sm_ls[tid] += sm_ls[o] * math.exp(bm - am)
            cuda.syncthreads()
            step //= 2
        m = sm_v[0]
        tmax = sm_i[0]
        lse = _F64_NAN
        if sm_ls[0] > _F64_0:
            lse = sm_lm[0] + math.log(sm_ls[0])
        t = temp[row]
        k = topk[row]
        if tmax >= n or not row_topk(t, k, n):
            if tid == 0:
                if tmax >= n:
                    tokens[row] = -1
                    logprobs[row] = np.float32(np.nan)
                    status[row] = STATUS_NO_FINITE
                else:
                    tok = tmax
                    if t != _F32_0:
                        tok = sm_gi[0]
                    tokens[row] = np.int32(tok)
                    logprobs[row] = np.float32(np.float64(load(x, row, tok)) - lse)
                    status[row] = STATUS_OK
            return
        # ---- a top-k row: every thread of the block from here on -------------------------
        is_vllm = vllm != 0
        inv_t = _F32_1 / t
        kk = np.int64(k)
        bsw = np.int64(bs)
        # (a) tau: the k-th largest tile maximum (key), or -1 when fewer than k tiles have one.
        # The tiles are sorted by (maximum's key desc, tile asc) with a bitonic sort (no atomics:
        # tile maxima crowd into a few radix bins); the tiles to read are then a prefix.
        G = np.int64(nsplit) * np.int64(tpt)
        PG = np.int64(1)
        while PG < G:
            PG *= 2
        if tid == 0:
            sm_r[3] = _I64_0   # candidates
            sm_r[5] = _I64_0   # tiles to read
        j = np.int64(tid)
        while j < PG:
            comp = _I64_M1
            if j < G:
                v = tm[row, j]
                if is_finite(v):
                    comp = (filter_key(v, inv_t, is_vllm) << _S31) | (_LOW31 - j)
            sk[j] = comp
            j += bsw
        cuda.syncthreads()
        bitonic_desc(sk, PG, tid, bs)
        tau = _I64_M1
        if kk <= G and sk[kk - 1] >= _I64_0:
            tau = sk[kk - 1] >> _S31
        # Tiles whose maximum is >= tau: a prefix of sk; thread j finds its end.
        j = np.int64(tid)
        while j < G:
            kj = _I64_M1
            if sk[j] >= _I64_0:
                kj = sk[j] >> _S31
            kn = _I64_M1
            if j + 1 < G and sk[j + 1] >= _I64_0:
                kn = sk[j + 1] >> _S31
            if kj >= tau and kj >= _I64_0 and (kn < tau or kn < _I64_0):
                sm_r[5] = j + _I64_1
            j += bsw
        cuda.syncthreads()
        nq = sm_r[5]
        # (b) gather the finite tokens with key >= tau from those tiles. Tile q = split * tpt + r
        # holds the tokens split * chunk + r + c * tpt (thread t of a split streams
        # t + u * p1_bs, and p1_bs is a multiple of tpt).
        ept = (chunk + tpt - 1) // tpt
        # Tokens per tile rounded up to a power of two so the index math is shifts (the padding
        # positions load nothing); tpt is a power of two.
        eb = np.int64(0)
        while (np.int64(1) << eb) < ept:
            eb += 1
        tb = np.int64(0)
        while (np.int64(1) << tb) < tpt:
            tb += 1
        emask = (np.int64(1) << eb) - 1
        tmask = np.int64(tpt) - 1
        total = nq << eb
        w0 = np.int64(tid)
        vals = cuda.local.array(4, np.float32)
        idxs = cuda.local.array(4, np.int64)
        while w0 < total:
            for u in range(4):
                w = w0 + np.int64(u) * bsw
                idxs[u] = _I64_M1
                c = w & emask
                if w < total and c < ept:
                    q = _LOW31 - (sk[w >> eb] & _LOW31)
                    sp = q >> tb
                    lo = sp * chunk
                    i = lo + (q & tmask) + (c << tb)
                    if i < min(lo + chunk, n):
                        idxs[u] = i
                        vals[u] = load(x, row, i)
            for u in range(4):
                i = idxs[u]
                if i >= _I64_0:
                    v = vals[u]
                    if is_finite(v):
                        key = filter_key(v, inv_t, is_vllm)
                        if key >= tau:
                            slot = cuda.atomic.add(sm_r, 3, _I64_1)
                            if slot < cap:
                                cand[slot] = (key << _S31) | (_LOW31 - i)
            w0 += bsw * np.int64(4)
        cuda.syncthreads()
        C = sm_r[3]
        if C > cap:
            # Overflow: exact k-th key by a radix select over the whole row, then gather the
            # top k in index order (ties to the lower index).
            need = kk
            prefix = _I64_0
            nfin = _I64_0
            for rnd in range(4):
                sh = np.int64(24 - 8 * rnd)
                b_ = tid
                while b_ < _RBINS:
                    hist[b_] = _I64_0
                    b_ += bs
                cuda.syncthreads()
                i = np.int64(tid)
                while i < n:
                    v = load(x, row, i)
                    if is_finite(v):
                        key = filter_key(v, inv_t, is_vllm)
                        if rnd == 0 or (key >> (sh + 8)) == prefix:
                            cuda.atomic.add(hist, (key >> sh) & np.int64(_RBINS - 1), _I64_1)
                    i += bsw
                cuda.syncthreads()
                if rnd == 0:
                    tot = _I64_0
                    for b2 in range(_RBINS):
                        tot += hist[b2]
                    nfin = tot
                    if need > nfin:
                        need = nfin
                    kk = need
                digit_pick(hist, sm_i, sm_r, tid, bs, need)
                prefix = (prefix << np.int64(8)) | sm_r[0]
                need -= sm_r[1]
                cuda.syncthreads()
            vkey = prefix
            # need = how many tokens with key == vkey the top kk takes (lowest indices first)
            taken = _I64_0
            ties = _I64_0
            i0 = _I64_0
            while i0 < n and taken < kk:
                i = i0 + np.int64(tid)
                gt = _I64_0
                eq = _I64_0
                key = _I64_0
                if i < n:
                    v = load(x, row, i)
                    if is_finite(v):
                        key = filter_key(v, inv_t, is_vllm)
                        if key > vkey:
                            gt = _I64_1
                        elif key == vkey:
                            eq = _I64_1
                sm_i[tid] = eq
                cuda.syncthreads()
                block_incl_scan(sm_i, tid, bs)
                eq_rank = ties + sm_i[tid] - eq
                eq_tot = sm_i[bs - 1]
                cuda.syncthreads()
                take = gt
                if eq == _I64_1 and eq_rank < need:
                    take = _I64_1
                sm_i[tid] = take
                cuda.syncthreads()
                block_incl_scan(sm_i, tid, bs)
                slot = taken + sm_i[tid] - take
                tk_tot = sm_i[bs - 1]
                if take == _I64_1 and slot < CAND_MAX:
                    cand[slot] = (key << _S31) | (_LOW31 - i)
                ties += eq_tot
                taken += tk_tot
                cuda.syncthreads()
                i0 += bsw
            C = taken
        else:
            if C < kk:
                kk = C
        # (b') sort the candidates: (key desc, index asc) is composite desc.
        P2 = np.int64(1)
        while P2 < C:
            P2 *= 2
        j = C + np.int64(tid)
        while j < P2:
            cand[j] = _I64_M1
            j += bsw
        cuda.syncthreads()
        bitonic_desc(cand, P2, tid, bs)
        # (c) filters on the sorted prefix of length K = kk.
        K = kk
        p = topp[row]
        mp = minp[row]
        xm = np.float64(m)                      # llama reference: the raw maximum
        if is_vllm:
            xm = np.float64(np.float32(m * inv_t))  # vllm: the scaled maximum
        thr = _F64_NINF
        if mp > _F32_0:
            thr = xm + math.log(np.float64(mp))
        if tid == 0:
            sm_r[6] = K
        cuda.syncthreads()
        if is_vllm and mp > _F32_0:
            # vllm: min-p first; the survivors among the top K are a prefix of it.
            if tid == 0:
                sm_r[6] = _I64_0
            cuda.syncthreads()
            c_ = _I64_0
            j = np.int64(tid)
            while j < K:
                ii = _LOW31 - (cand[j] & _LOW31)
                sv = np.float32(load(x, row, ii) * inv_t)
                if np.float64(sv) >= thr:
                    c_ += _I64_1
                j += bsw
            if c_ > _I64_0:
                cuda.atomic.add(sm_r, 6, c_)
            cuda.syncthreads()
        K = sm_r[6]
        L = K
        if p < _F32_1:
            # Integer masses of the first K, their prefix sums, the first crossing of the target.
            # K <= KCAP; threads own consecutive chunks of positions so the scan is ordered.
            per = (K + bs - 1) // bs
            c_ = _I64_0
            for q in range(per):
                j = np.int64(tid) * per + q
                if j < K:
                    ii = _LOW31 - (cand[j] & _LOW31)
                    v = load(x, row, ii)
                    kv = v
                    if is_vllm:
                        kv = np.float32(v * inv_t)
                    y = math.exp(np.float64(kv) - xm) * _MASS_SCALE
                    c_ += np.int64(math.floor(y + _F64_HALF))
            sm_i[tid] = c_
            cuda.syncthreads()
            block_incl_scan(sm_i, tid, bs)
            z = sm_i[bs - 1]
            tgt = np.int64(math.ceil(np.float64(p) * np.float64(z)))
            if tgt > z:
                tgt = z
            run = sm_i[tid] - c_
            if tid == 0:
                sm_r[7] = K
            cuda.syncthreads()
            if run < tgt and run + c_ >= tgt:
                for q in range(per):
                    j = np.int64(tid) * per + q
                    if j < K:
                        ii = _LOW31 - (cand[j] & _LOW31)
                        v = load(x, row, ii)
                        kv = v
                        if is_vllm:
                            kv = np.float32(v * inv_t)
                        y = math.exp(np.float64(kv) - xm) * _MASS_SCALE
                        qj = np.int64(math.floor(y + _F64_HALF))
                        if run < tgt and run + qj >= tgt:
                            sm_r[7] = j + _I64_1
                        run += qj
            cuda.syncthreads()
            L = sm_r[7]
            if L < _I64_1:
                L = _I64_1
            cuda.syncthreads()
        if (not is_vllm) and mp > _F32_0:
            # llama: min-p after top-p; the survivors are a prefix of the raw order.
            if tid == 0:
                sm_r[6] = _I64_0
            cuda.syncthreads()
            c_ = _I64_0
            j = np.int64(tid)
            while j < L:
                ii = _LOW31 - (cand[j] & _LOW31)
                if np.float64(load(x, row, ii)) >= thr:
                    c_ += _I64_1
                j += bsw
            if c_ > _I64_0:
                cuda.atomic.add(sm_r, 6, c_)
            cuda.syncthreads()
            L = sm_r[6]
        # (d) Gumbel-max over the L survivors.
        sd = seed[row]
        ps = pos[row]
        bg = _F32_NINF
        bgi = np.int64(n)
        j = np.int64(tid)
        while j < L:
            ii = _LOW31 - (cand[j] & _LOW31)
            sv = np.float32(load(x, row, ii) * inv_t)
            g = sv + token_gumbel(sd, ps, ii)
            if g > bg or (g == bg and ii < bgi):
                bg = g
                bgi = ii
            j += bsw
        cuda.syncthreads()
        sm_g[tid] = bg
        sm_gi[tid] = bgi
        cuda.syncthreads()
        block_argmax(sm_g, sm_gi, tid, bs)
        if tid == 0:
            tok = sm_gi[0]
            tokens[row] = np.int32(tok)
            logprobs[row] = np.float32(np.float64(load(x, row, tok)) - lse)
            status[row] = STATUS_OK

    return SimpleNamespace(partials=partials,
                           _sample_finalize_fast_kernel=_sample_finalize_fast_kernel)
