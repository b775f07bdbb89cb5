"""How close to the floor a single streaming launch gets, against greedy (issue #13: greedy <= 1.25x
the floor at 64 x 151936 and 64 x 262144, where it reads 1.45x-1.52x).

A minimal row-maximum kernel times the same reads as phase 1's greedy variant and nothing else
that greedy needs: no index, no partials, no last-block tail. Three more variants put greedy's
work back one step at a time, at greedy's own launch shape (and ``READ_AM``'s): the index, by one
64-bit atomic max a block of (order key, ~index) (``argmax``); then the row's last block, by a
count, writing the token (``argmax_tail``); then a threadfence before the count, as phase 1 has
(``argmax_tail_fence``). ``argmax_round`` and ``argmax_round_tail_fence`` keep the index a
round at a time instead: a tree over the round's 8 values and their 3-bit slots, one compare with
the best a round, and no second read (the twenty-second session's round maximum read the best
round again and lost at 64 x 262144). The tail variants are checked against NumPy's argmax
first. ``argmax_win`` and ``argmax_win16`` (the twenty-third session; phase 1's argmax kernel
took the second's form) fold each round of 8 or 16 loads by a tree of fmax with no index, keep
the best round's base, and after the block's maximum (warp shuffles) only the threads holding it
load that round again for the index; one split writes the token with no atomics. The first
twenty-third-session run of them built the tree in a local array (local memory) and streamed the
last partial round one load at a time; both are mended here. ``READ_VARIANTS`` picks variants.
Each block of a (splits x rows) grid
streams its slice eight loads a round, folds its maximum by a shared-memory tree, and thread 0
adds it to the row's slot with one float ``atomic.max``, which returns nothing the kernel waits
for. Its time is a lower bound for any one-launch greedy with this launch shape. Graph-timed
(bench/common.graph_time: 20 launches in one graph, replays timed by events), at every split
count and block given, beside this tree's greedy (``Sampler``, plan defaults) in the same process.

    python3 tools/gpu/read_probe.py            # one JSON line per point, then a summary
    READ_SHAPES=64x151936 READ_SPLITS=4,8 READ_BLOCKS=256 python3 tools/gpu/read_probe.py
    READ_BACKEND=sim python3 tools/gpu/read_probe.py   # a dry run at tiny shapes
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from sampler_inputs import device_inputs, logits  # noqa: E402 (this folder: sys.path[0])

SHAPES = [(64, 151936), (64, 262144), (256, 32000), (256, 151936)]
SPLITS = [2, 4, 6, 8, 10, 12, 16, 24, 32]
BLOCKS = [256, 512, 1024]
UNROLL = 8


def env_list(name, default, conv=int):
    v = os.environ.get(name)
    return default if not v else [conv(a) for a in v.split(",")]


def build(cuda):
    f32_ninf = np.float32(-math.inf)
    f32_inf = np.float32(math.inf)
    f32_nan = np.float32(math.nan)

    @cuda.jit(device=True)
    def block_slice(n, chunk):
        # (row, thread, block size, the block's [lo, hi)) of a (splits x rows) grid
        lo = np.int64(cuda.blockIdx.x) * chunk
        return cuda.blockIdx.y, cuda.threadIdx.x, cuda.blockDim.x, lo, min(lo + chunk, n)

    @cuda.jit(device=True)
    def tree_max(sm, tid, bs):
        # sm[0] = max(sm[0:bs]) (every thread calls it; bs a power of two)
        cuda.syncthreads()
        step = bs // 2
        while step > 0:
            if tid < step:
                sm[tid] = max(sm[tid], sm[tid + step])
            cuda.syncthreads()
            step //= 2

    @cuda.jit(device=True)
    def okey(f):
        # float32 -> uint32, order-preserving (greedy's order key, -0.0 folded into +0.0)
        if f == np.float32(0):
            f = np.float32(0)
        t = cuda.local.array(1, np.float32)
        t[0] = f
        b = np.uint32(t.view(np.uint32)[0])
        if b & np.uint32(0x80000000):
            return ~b
        return b | np.uint32(0x80000000)

    @cuda.jit(device=True)
    def pick(a, ia, b, ib):
        # the larger of (a, ia) and (b, ib) where ia < ib: b only when strictly larger
        if b > a:
            return b, ib
        return a, ia

    @cuda.jit(device=True)
    def round_argmax(vals):
        # (the largest selectable value of a round of 8, its first slot): NaN and +inf are not
        # selectable; a tree of value and 3-bit slot pairs, ties to the lower slot
        w = cuda.local.array(8, np.float32)
        for u in range(8):
            v = vals[u]
            w[u] = v if v < f32_inf else f32_ninf
        a, ia = pick(w[0], 0, w[1], 1)
        b, ib = pick(w[2], 2, w[3], 3)
        c, ic = pick(w[4], 4, w[5], 5)
        d, id_ = pick(w[6], 6, w[7], 7)
        ab, iab = pick(a, ia, b, ib)
        cd, icd = pick(c, ic, d, id_)
        return pick(ab, iab, cd, icd)

    FULL = np.uint32(0xFFFFFFFF)
    if hasattr(cuda, "shfl_xor_sync"):
        @cuda.jit(device=True)
        def block_fmax(sw, v, tid, bs):
            # the block's largest float32 to every thread: shuffles in each warp, then the
            # warps' maxima through sw (bs a multiple of 32)
            for off in (16, 8, 4, 2, 1):
                v = max(v, cuda.shfl_xor_sync(FULL, v, off))
            if (tid & 31) == 0:
                sw[tid >> 5] = v
            cuda.syncthreads()
            r = sw[0]
            for q in range(1, 32):
                if q < (bs >> 5):
                    r = max(r, sw[q])
            return r

        @cuda.jit(device=True)
        def block_imin(si, v, tid, bs):
            # the block's smallest int64 to thread 0
            for off in (16, 8, 4, 2, 1):
                v = min(v, cuda.shfl_xor_sync(FULL, v, off))
            if (tid & 31) == 0:
                si[tid >> 5] = v
            cuda.syncthreads()
            r = si[0]
            for q in range(1, 32):
                if q < (bs >> 5):
                    r = min(r, si[q])
            return r
    else:   # the simulator: no warp intrinsics
        @cuda.jit(device=True)
        def block_fmax(sw, v, tid, bs):
            if tid == 0:
                sw[0] = v
            cuda.syncthreads()
            for q in range(bs):
                if q == tid and v > sw[0]:
                    sw[0] = v
                cuda.syncthreads()
            return sw[0]

        @cuda.jit(device=True)
        def block_imin(si, v, tid, bs):
            if tid == 0:
                si[0] = v
            cuda.syncthreads()
            for q in range(bs):
                if q == tid and v < si[0]:
                    si[0] = v
                cuda.syncthreads()
            return si[0]

    lib = getattr(cuda, "libdevice", None)
    if lib is not None:
        fm = lib.fmaxf   # one max.f32: NaN-ignoring
    else:
        @cuda.jit(device=True)
        def fm(a, b):
            # NaN-ignoring maximum (the simulator: no libdevice)
            return a if (a >= b or b != b) else b

    @cuda.jit(device=True)
    def tree8(v, b):
        # the NaN-ignoring maximum of v[b : b + 8] by a tree (written out: no local array)
        return fm(fm(fm(v[b], v[b + 1]), fm(v[b + 2], v[b + 3])),
                  fm(fm(v[b + 4], v[b + 5]), fm(v[b + 6], v[b + 7])))

    @cuda.jit(device=True)
    def win_tail(slot, cnt, tokens, row, mx, jm):
        # thread 0 of the argmax_win and 16-byte forms, with the block's maximum mx and its lowest
        # index jm: one split writes the token; more fold (key << 32 | ~index) into the row's
        # slot by one 64-bit atomic max, fence and count, and the row's last block writes it
        if cuda.gridDim.x == 1:
            tokens[row] = np.int32(jm) if mx > f32_ninf else np.int32(-1)
            return
        k = np.uint64(0)
        if mx > f32_ninf:
            k = (np.uint64(okey(mx)) << np.uint64(32)) | np.uint64(
                np.uint32(0xFFFFFFFF) - np.uint32(jm))
        cuda.atomic.max(slot, row, k)
        cuda.threadfence()
        done = cuda.atomic.add(cnt, row, np.int32(1))
        if done == cuda.gridDim.x - 1:
            cnt[row] = 0
            cuda.threadfence()
            w = cuda.atomic.exch(slot, row, np.uint64(0))
            tokens[row] = np.int32(np.uint32(0xFFFFFFFF) - np.uint32(w & np.uint64(0xFFFFFFFF)))

    def make_win(U):
        # "argmax_win" (U = 8) and "argmax_win16": each thread folds a round's U values (the
        # last round predicated; unsigned-index loads) by an fmax tree (no index) and keeps the
        # best round's base (strict '>': the earliest round on ties; a round whose maximum is
        # +inf is folded again without it, rarely). The block's maximum
        # by warp shuffles; only the threads holding it load their best round again (U loads,
        # one round trip) for its first slot equal to the maximum; the block's lowest such
        # index by shuffles. One split: the block writes the token; more: one 64-bit atomic max
        # a block, a fence and the row's count, as argmax_tail_fence.
        @cuda.jit
        def kern(x, n, chunk, slot, cnt, tokens):
            row, tid, bs, lo, hi = block_slice(n, chunk)
            m = f32_ninf
            br = np.int64(-1)
            i = lo + tid
            span = np.int64(bs) * U
            last = span - bs
            vals = cuda.local.array(U, np.float32)
            while i < hi:
                # whole rounds, and one predicated last round (NaN past the end, ignored)
                if i + last < hi:
                    for u in range(U):
                        vals[u] = x[row, np.uint64(i + u * bs)]
                else:
                    for u in range(U):
                        vals[u] = f32_nan
                        if i + u * bs < hi:
                            vals[u] = x[row, np.uint64(i + u * bs)]
                rm = tree8(vals, 0)
                if U == 16:
                    rm = fm(rm, tree8(vals, 8))
                if rm > m:   # (NaN only where every value is NaN)
                    if rm == f32_inf:
                        rm = f32_ninf
                        for u in range(U):
                            if vals[u] < f32_inf:
                                rm = max(rm, vals[u])
                    if rm > m:
                        m = rm
                        br = i
                i += span
            sw = cuda.shared.array(32, np.float32)
            si = cuda.shared.array(32, np.int64)
            mx = block_fmax(sw, m, tid, bs)
            j = np.int64(0x7FFFFFFFFFFFFFFF)
            if m == mx and mx > f32_ninf:
                if br >= 0:
                    for u in range(U):
                        vals[u] = f32_nan
                        if br + u * bs < hi:
                            vals[u] = x[row, np.uint64(br + u * bs)]
                    for u in range(U - 1, -1, -1):
                        if vals[u] == mx:
                            j = br + u * bs
            jm = block_imin(si, j, tid, bs)
            if tid == 0:
                win_tail(slot, cnt, tokens, row, mx, jm)

        return kern

    def make(INDEX, TAIL, FENCE):
        # INDEX 0: the row maximum alone, one float atomic max a block into ``slot`` (a
        # float32 array). INDEX 1 (every token's compare and select) or 2 (a round's tree,
        # round_argmax): greedy's answer by one 64-bit atomic max a block of
        # (key << 32 | ~index), the lower index winning ties (``slot`` uint64); TAIL: then
        # greedy's tail, the row's last block (a count) takes the slot back to 0 and writes the
        # token (FENCE: a threadfence before the count, as phase 1 has)
        @cuda.jit
        def kern(x, n, chunk, slot, cnt, tokens):
            row, tid, bs, lo, hi = block_slice(n, chunk)
            xr = x[row]
            m = f32_ninf
            mi = hi
            i = lo + tid
            span = np.int64(bs) * UNROLL
            last = span - bs
            vals = cuda.local.array(UNROLL, np.float32)
            while i + last < hi:
                for u in range(UNROLL):
                    vals[u] = xr[i + u * bs]
                if INDEX == 2:
                    rm, ru = round_argmax(vals)
                    if rm > m:
                        m = rm
                        mi = i + ru * bs
                else:
                    for u in range(UNROLL):
                        if INDEX:
                            if vals[u] > m:
                                m = vals[u]
                                mi = i + u * bs
                        else:
                            m = max(m, vals[u])
                i += span
            while i < hi:
                if xr[i] > m:
                    m = xr[i]
                    mi = i
                i += bs
            if not INDEX:
                smf = cuda.shared.array(1024, np.float32)
                smf[tid] = m
                tree_max(smf, tid, bs)
                if tid == 0:
                    cuda.atomic.max(slot, row, smf[0])
                return
            sm = cuda.shared.array(1024, np.uint64)
            k = np.uint64(0)
            if mi < hi:
                k = (np.uint64(okey(m)) << np.uint64(32)) | np.uint64(
                    np.uint32(0xFFFFFFFF) - np.uint32(mi))
            sm[tid] = k
            tree_max(sm, tid, bs)
            if tid == 0:
                cuda.atomic.max(slot, row, sm[0])
                if TAIL:
                    if FENCE:
                        cuda.threadfence()
                    done = cuda.atomic.add(cnt, row, np.int32(1))
                    if done == cuda.gridDim.x - 1:
                        cnt[row] = 0
                        cuda.threadfence()
                        w = cuda.atomic.exch(slot, row, np.uint64(0))
                        tokens[row] = np.int32(np.uint32(0xFFFFFFFF) - np.uint32(w & np.uint64(0xFFFFFFFF)))

        return kern

    load4 = vector_load4(cuda)

    def make_v4(V, INDEX, KEEP):
        # 16-byte loads (``ld.global.v4.f32``; rows of a multiple of 4 logits, 16-byte aligned):
        # a round is V such loads per thread (4 V logits), float4 t + v * block of the split.
        # INDEX False ("row_max_v4"): the row maximum alone, as row_max. INDEX True: as
        # argmax_win (fmax tree a round, best round's base, the holders of the block's maximum
        # find its first slot, one split writes the token); KEEP: the best round's values are
        # kept in registers (a copy in the rounds that improve) instead of loaded again.
        W = 4 * V

        @cuda.jit
        def kern(x, n, chunk, slot, cnt, tokens):
            row = cuda.blockIdx.y
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            c4 = (chunk + 3) // 4
            lo = np.int64(cuda.blockIdx.x) * c4
            hi = min(lo + c4, n // 4)
            m = f32_ninf
            br = np.int64(-1)
            i = lo + tid
            span = np.int64(bs) * V
            last = span - bs
            vals = cuda.local.array(W, np.float32)
            keep = cuda.local.array(W, np.float32)
            while i < hi:
                if i + last < hi:
                    for v in range(V):
                        a, b, c, d = load4(x, row, (i + v * bs) * 4)
                        vals[4 * v] = a
                        vals[4 * v + 1] = b
                        vals[4 * v + 2] = c
                        vals[4 * v + 3] = d
                else:
                    for v in range(V):
                        a = b = c = d = f32_nan
                        if i + v * bs < hi:
                            a, b, c, d = load4(x, row, (i + v * bs) * 4)
                        vals[4 * v] = a
                        vals[4 * v + 1] = b
                        vals[4 * v + 2] = c
                        vals[4 * v + 3] = d
                rm = tree8(vals, 0)
                for q in range(8, W, 8):
                    rm = fm(rm, tree8(vals, q))
                if not INDEX:
                    m = fm(m, rm)
                elif rm > m:
                    if rm == f32_inf:
                        rm = f32_ninf
                        for u in range(W):
                            if vals[u] < f32_inf:
                                rm = max(rm, vals[u])
                    if rm > m:
                        m = rm
                        br = i
                        if KEEP:
                            for u in range(W):
                                keep[u] = vals[u]
                i += span
            sw = cuda.shared.array(32, np.float32)
            mx = block_fmax(sw, m, tid, bs)
            if not INDEX:
                if tid == 0:
                    cuda.atomic.max(slot, row, mx)
                return
            si = cuda.shared.array(32, np.int64)
            j = np.int64(0x7FFFFFFFFFFFFFFF)
            if m == mx and mx > f32_ninf and br >= 0:
                if KEEP:
                    for u in range(W):
                        vals[u] = keep[u]
                else:
                    for v in range(V):
                        a = b = c = d = f32_nan
                        if br + v * bs < hi:
                            a, b, c, d = load4(x, row, (br + v * bs) * 4)
                        vals[4 * v] = a
                        vals[4 * v + 1] = b
                        vals[4 * v + 2] = c
                        vals[4 * v + 3] = d
                for u in range(W - 1, -1, -1):
                    if vals[u] == mx:
                        j = (br + (u // 4) * bs) * 4 + (u % 4)
            jm = block_imin(si, j, tid, bs)
            if tid == 0:
                win_tail(slot, cnt, tokens, row, mx, jm)

        return kern

    return (make(0, False, False), make(1, False, False), make(1, True, False),
            make(1, True, True), make(2, False, False), make(2, True, True), make_win(8),
            make_win(16), make_v4(4, False, False), make_v4(8, False, False),
            dict(argmax_v4=make_v4(4, True, False), argmax_v4k=make_v4(4, True, True),
                 argmax_v8=make_v4(8, True, False), argmax_v8k=make_v4(8, True, True)))


def vector_load4(cuda):
    """``load4(x, row, j)``: the four float32 x[row, j : j + 4] by one 16-byte load (an LLVM
    <4 x float> load of alignment 16: ``ld.global.v4.f32``); j a multiple of 4 and the row
    16-byte aligned. The simulator: four loads."""
    from rocsample.kernels import _numba_cuda
    real = _numba_cuda(cuda)
    if not real:
        @cuda.jit(device=True)
        def load4(x, row, j):
            return x[row, j], x[row, j + 1], x[row, j + 2], x[row, j + 3]
        return load4

    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    @intrinsic
    def load4(typingctx, arr, row, j):
        rt = types.UniTuple(types.float32, 4)
        sig = rt(arr, row, j)

        def codegen(context, builder, sig, args):
            aty = sig.args[0]
            a, r, c = args
            ary = context.make_array(aty)(context, builder, value=a)
            r = context.cast(builder, r, sig.args[1], types.intp)
            c = context.cast(builder, c, sig.args[2], types.intp)
            ptr = cgutils.get_item_pointer(context, builder, aty, ary, [r, c], wraparound=False)
            vty = ir.VectorType(ir.FloatType(), 4)
            v = builder.load(builder.bitcast(ptr, vty.as_pointer()), align=16)
            vals = [builder.extract_element(v, ir.Constant(ir.IntType(32), k)) for k in range(4)]
            return context.make_tuple(builder, rt, vals)

        return sig, codegen

    return load4


def main() -> int:
    import rocsample
    from bench.common import graph_time, measure_copy_bandwidth

    be = rocsample.use_backend(os.environ.get("READ_BACKEND", "cuda"))
    sim = be.name == "sim"
    shapes = [(2, 512)] if sim else SHAPES
    if os.environ.get("READ_SHAPES"):
        shapes = [tuple(int(v) for v in a.split("x")) for a in os.environ["READ_SHAPES"].split(",")]
    splits_l = [1, 2] if sim else env_list("READ_SPLITS", SPLITS)
    blocks_l = [32] if sim else env_list("READ_BLOCKS", BLOCKS)
    cuda = be.cuda
    (kern, am, am_tail, am_fence, am_round, am_round_fence, am_win, am_win16, rm_v4, rm_v8,
     am_v) = build(cuda)
    variants = dict(argmax=am, argmax_tail=am_tail, argmax_tail_fence=am_fence,
                    argmax_round=am_round, argmax_round_tail_fence=am_round_fence,
                    argmax_win=am_win, argmax_win16=am_win16, **am_v)
    # the row-maximum streams timed at every split and block (READ_ROWMAX: "row_max,row_max_v4")
    rowmax = dict(row_max=kern, row_max_v4=rm_v4, row_max_v8=rm_v8)
    pick_r = env_list("READ_ROWMAX", ["row_max"], str)
    pick_v = env_list("READ_VARIANTS", list(variants), str)
    bw = 4e12 if sim else measure_copy_bandwidth(be)
    s = be.runtime.new_stream()
    st = be.stream(s)
    summary = []
    for rows, vocab in shapes:
        host = logits(rows, vocab)
        x, seed, pos = device_inputs(be, st, host)
        out = be.as_array(np.full(rows, -np.inf, np.float32), "out", st)
        cnt = be.as_array(np.zeros(rows, np.int32), "cnt", st)
        toks = be.as_array(np.zeros(rows, np.int32), "tokens", st)
        # the kernel is right before it is timed: every row's maximum at 3 splits
        for r_name in pick_r:
            out = be.as_array(np.full(rows, -np.inf, np.float32), "out", st)
            rowmax[r_name][(3, rows), blocks_l[0], st.numba](
                x, np.int64(vocab), np.int64(-(-vocab // 3)), out, cnt, toks)
            got = be.to_host(out, st)
            assert np.array_equal(got, host.max(axis=1)), f"{r_name} is wrong"
        floor = rows * vocab * 4 / bw * 1e6
        plan = rocsample.Sampler(rows, vocab, "float32", stream=s)
        plan.prewarm()

        def greedy(plan=plan, x=x, seed=seed, pos=pos):
            plan(x, seed=seed, position=pos, check=False, temperature=0.0)
        g_us = graph_time(be, greedy, s) * 1e6
        slot = be.as_array(np.zeros(rows, np.uint64), "slot", st)
        # greedy's own launch shape, and the best row_max shapes (READ_AM: "splits:block,...")
        am_pts = [(plan.plan.splits, plan.plan.block)] + [
            tuple(int(v) for v in a.split(":")) for a in os.environ.get("READ_AM", "").split(",")
            if a]
        for v_name in pick_v:
            v_kern = variants[v_name]
            for sp, b in am_pts:
                chunk = -(-vocab // sp)
                try:
                    v_kern[(sp, rows), b, st.numba](x, np.int64(vocab), np.int64(chunk), slot,
                                                    cnt, toks)
                except Exception as e:   # (e.g. too many registers for a block of 1024)
                    print(json.dumps(dict(kind=v_name, rows=rows, vocab=vocab, block=b,
                                          splits=sp, skipped=type(e).__name__)), flush=True)
                    continue
                if "tail" in v_name or "win" in v_name:
                    assert np.array_equal(be.to_host(toks, st), host.argmax(axis=1)), v_name
                else:
                    slot = be.as_array(np.zeros(rows, np.uint64), "slot", st)

                def fa(k=v_kern, sp=sp, b=b, chunk=chunk, rows=rows, vocab=vocab, slot=slot,
                       nb=st.numba, x=x, cnt=cnt, toks=toks):
                    k[(sp, rows), b, nb](x, np.int64(vocab), np.int64(chunk), slot, cnt, toks)
                us = graph_time(be, fa, s) * 1e6
                print(json.dumps(dict(kind=v_name, rows=rows, vocab=vocab, block=b, splits=sp,
                                      us=round(us, 3), x_floor=round(us / floor, 3))),
                      flush=True)
        print(json.dumps(dict(kind="greedy", rows=rows, vocab=vocab, us=round(g_us, 3),
                              x_floor=round(g_us / floor, 3), splits=plan.plan.splits)),
              flush=True)
        best = None
        for r_name in pick_r:
            rk = rowmax[r_name]
            for b in blocks_l:
                for sp in splits_l:
                    chunk = -(-vocab // sp)
                    nb = st.numba

                    def fn(x=x, out=out, sp=sp, b=b, chunk=chunk, nb=nb, rows=rows, vocab=vocab,
                           cnt=cnt, toks=toks, rk=rk):
                        rk[(sp, rows), b, nb](x, np.int64(vocab), np.int64(chunk), out, cnt, toks)
                    us = graph_time(be, fn, s) * 1e6
                    print(json.dumps(dict(kind=r_name, rows=rows, vocab=vocab, block=b,
                                          splits=sp, us=round(us, 3),
                                          x_floor=round(us / floor, 3))), flush=True)
                    if best is None or us < best[0]:
                        best = (us, b, sp)
        summary.append(f"{rows}x{vocab}: floor {floor:.2f} us; greedy {g_us:.2f} "
                       f"({g_us / floor:.2f}x); row_max best {best[0]:.2f} ({best[0] / floor:.2f}x, "
                       f"b{best[1]} s{best[2]})")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
