"""Rows that fit one block's registers: what a one-launch, one-read sampler costs at 32000-wide
rows (issue #13: temperature at 64 x 32000 and top_p alone at the 32000-wide shapes, where
FlashInfer's one launch a row beats our two to four).

One block of 1024 threads a row holds the whole row in registers: 8 vectors of 4 logits a thread
(``vload.raw4``: rows up to 32768 logits, a multiple of 4, 16-byte aligned), one quad of SPEC
§2's Philox words a vector (``philox.quad_gumbel``, exact), each thread's best score (ties to the
lower index), then the block's best by one ``block_max`` of (order key << 32 | ~index) built
from the score's order key. ``race``: the token only (temperature-only sampling). ``nucleus``:
then, from the registers, the row's maximum, its sum of ``exp(x - max)`` and the sum over the
logits above the winner's, two block sums of float32 (the nucleus pass's test, without its
error bounds and without its fallback): an estimate of what top_p alone costs in one launch.
The race's tokens are checked against the reference's temperature-only sample first.
Graph-timed (bench/common.graph_time) beside the package's temperature and top_p-alone calls in
the same process.

    python3 tools/gpu/narrow_probe.py          # one JSON line per point, then a summary
    NARROW_BACKEND=sim python3 tools/gpu/narrow_probe.py   # a dry run at a tiny shape
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from sampler_inputs import device_inputs, logits  # noqa: E402 (this folder: sys.path[0])

SHAPES = [(1, 32000), (8, 32000), (64, 32000), (256, 32000)]
V = 8   # vectors of 4 logits a thread
W = 4 * V   # logits a thread


def build(cuda):
    from rocsample.kernels import philox, vload

    ph = philox.build(cuda)
    quad_gumbel = ph.quad_gumbel
    raw4, _head4 = vload.build(cuda)
    f32_ninf = np.float32(-math.inf)
    low32 = np.int64(0xFFFFFFFF)
    sign = np.int64(0x80000000)

    @cuda.jit(device=True)
    def okey(f):
        # float32 -> [0, 2**32) order-preserving (-0.0 as +0.0)
        if f == np.float32(0):
            f = np.float32(0)
        t = cuda.local.array(1, np.float32)
        t[0] = f
        b = np.int64(t.view(np.uint32)[0])
        if b >= sign:
            return low32 - b
        return b + sign

    @cuda.jit(device=True)
    def block_imax(sm, v, tid, bs):
        # the block's largest int64 v, to every thread (a shared tree; bs a power of two)
        cuda.syncthreads()
        sm[tid] = v
        cuda.syncthreads()
        step = bs // 2
        while step > 0:
            if tid < step and sm[tid + step] > sm[tid]:
                sm[tid] = sm[tid + step]
            cuda.syncthreads()
            step //= 2
        return sm[0]

    @cuda.jit(device=True)
    def block_fmax(sf, v, tid, bs):
        cuda.syncthreads()
        sf[tid] = v
        cuda.syncthreads()
        step = bs // 2
        while step > 0:
            if tid < step and sf[tid + step] > sf[tid]:
                sf[tid] = sf[tid + step]
            cuda.syncthreads()
            step //= 2
        return sf[0]

    @cuda.jit(device=True)
    def block_fsum(sf, v, tid, bs):
        cuda.syncthreads()
        sf[tid] = v
        cuda.syncthreads()
        step = bs // 2
        while step > 0:
            if tid < step:
                sf[tid] += sf[tid + step]
            cuda.syncthreads()
            step //= 2
        return sf[0]

    def make(NUC):
        @cuda.jit
        def kern(x, n, inv_t, seed, pos, p, tokens, flags):
            row = cuda.blockIdx.x
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            sd = seed[row]
            ps = pos[row]
            nq = n // 4
            xs = cuda.local.array(W, np.float32)
            for v in range(V):
                q = np.int64(tid) + np.int64(v) * bs
                a = b = c = d = f32_ninf
                if q < nq:
                    a, b, c, d = raw4(x, row, 4 * q)
                xs[4 * v] = a
                xs[4 * v + 1] = b
                xs[4 * v + 2] = c
                xs[4 * v + 3] = d
            best = f32_ninf
            bi = np.int64(-1)
            for v in range(V):
                q = np.int64(tid) + np.int64(v) * bs
                if q < nq:
                    g0, g1, g2, g3 = quad_gumbel(sd, ps, np.uint64(q))
                    s0 = np.float32(np.float32(xs[4 * v] * inv_t) + g0)
                    s1 = np.float32(np.float32(xs[4 * v + 1] * inv_t) + g1)
                    s2 = np.float32(np.float32(xs[4 * v + 2] * inv_t) + g2)
                    s3 = np.float32(np.float32(xs[4 * v + 3] * inv_t) + g3)
                    if s0 > best:
                        best = s0
                        bi = 4 * q
                    if s1 > best:
                        best = s1
                        bi = 4 * q + 1
                    if s2 > best:
                        best = s2
                        bi = 4 * q + 2
                    if s3 > best:
                        best = s3
                        bi = 4 * q + 3
            sm = cuda.shared.array(1024, np.int64)
            key = np.int64(-1)
            if bi >= 0:
                key = (okey(best) << 32) | (low32 - bi)
            km = block_imax(sm, key, tid, bs)
            tok = low32 - (km & low32)
            if NUC:
                # the row's maximum, then Z and the mass above the winner from the registers
                m = f32_ninf
                for u in range(W):
                    m = max(m, xs[u])
                sf = cuda.shared.array(1024, np.float32)
                mx = block_fmax(sf, m, tid, bs)
                wk = x[row, tok]
                z = np.float32(0)
                above = np.float32(0)
                for u in range(W):
                    e = np.float32(math.exp((xs[u] - mx) * inv_t))
                    z += e
                    if xs[u] > wk:
                        above += e
                zs = block_fsum(sf, z, tid, bs)
                ab = block_fsum(sf, above, tid, bs)
                if tid == 0:
                    flags[row] = 1 if ab < p * zs else 0
            if tid == 0:
                tokens[row] = np.int32(tok)

        return kern

    return make(False), make(True)


def _calls(race, nuc, rows, block, st, args, plan, x, seed, pos, temp, p):
    """(name, function) of the timed points at one shape."""
    return (("race", lambda: race[rows, block, st.numba](*args)),
            ("nucleus", lambda: nuc[rows, block, st.numba](*args)),
            ("package_temperature", lambda: plan(x, seed=seed, position=pos, check=False,
                                                 temperature=temp)),
            ("package_top_p", lambda: plan(x, seed=seed, position=pos, check=False,
                                           temperature=1.0, top_p=p)))


def main() -> int:
    import rocsample
    from bench.common import graph_time, measure_copy_bandwidth
    from rocsample.reference import sampling as ref

    be = rocsample.use_backend(os.environ.get("NARROW_BACKEND", "cuda"))
    sim = be.name == "sim"
    shapes = [(2, 1024)] if sim else SHAPES
    block = 32 if sim else 1024
    race, nuc = build(be.cuda)
    bw = 4e12 if sim else measure_copy_bandwidth(be)
    s = be.runtime.new_stream()
    st = be.stream(s)
    temp, p = 0.8, 0.95
    inv_t = np.float32(1) / np.float32(temp)
    out = []
    for rows, vocab in shapes:
        host = logits(rows, vocab)
        x, seed, pos = device_inputs(be, st, host)
        toks = be.as_array(np.zeros(rows, np.int32), "tokens", st)
        flags = be.as_array(np.zeros(rows, np.int32), "flags", st)
        args = (x, np.int64(vocab), inv_t, seed, pos, np.float32(p), toks, flags)
        race[rows, block, st.numba](*args)
        want = ref.sample(host, temperature=temp, seed=be.to_host(seed, st),
                          position=be.to_host(pos, st))
        got = be.to_host(toks, st)
        assert np.array_equal(got, want), ("race", got[:8], want[:8])
        if sim:   # (the dry run: both kernels run and the race is right; no timing)
            nuc[rows, block, st.numba](*args)
            print(json.dumps(dict(kind="dry", rows=rows, vocab=vocab, tokens=got.tolist(),
                                  flags=be.to_host(flags, st).tolist())))
            continue
        floor = rows * vocab * 4 / bw * 1e6
        plan = rocsample.Sampler(rows, vocab, "float32", stream=s)
        plan.prewarm()
        res = {}
        for name, fn in _calls(race, nuc, rows, block, st, args, plan, x, seed, pos, temp, p):
            us = graph_time(be, fn, s) * 1e6
            res[name] = us
            print(json.dumps(dict(kind=name, rows=rows, vocab=vocab, us=round(us, 3),
                                  x_floor=round(us / floor, 2))), flush=True)
        out.append(f"{rows}x{vocab}: " + ", ".join(f"{k} {v:.2f}" for k, v in res.items()))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
