"""set_rows kernels (SPEC §3): validate + pick duplicate winners, then write rows.

One call is three launches on one stream:

1. ``_set_rows_reset_kernel``: winners <- -1, per-call error slot <- "none".
2. ``_set_rows_check_kernel``: every (b3, b2, r) reads ``idx[b3 % i3, b2 % i2, r]``; a bad index
   ``atomic.min``s its flat position in idx into the per-call slot (so the first bad position in C
   order is kept, whatever the thread order); a good one ``atomic.max``es r into
   ``winner[b3, b2, v]`` so that the highest source row wins a duplicated destination row.
3. ``_set_rows_float_kernel`` / ``_set_rows_quant_kernel``: do nothing if the per-call slot holds
   an error (dst stays byte-for-byte unchanged, also inside a replayed graph); thread 0 of block 0
   copies the error's position and value into the slot and, when asked, into the sticky
   per-stream record that ``check_errors`` reads. Otherwise each source row whose index is valid
   and is the winner is converted and stored.

All index math is int64 (numba's intp), so destinations past 2**31 elements are addressed
correctly. Source and float destinations travel as raw bits (uint32 / uint16 views): conversions
are integer operations, which keeps NaN payloads and rounding identical on every backend.

Error slot layout (int64[4]): ``[first bad idx position or NO_ERROR, its value,
first non-finite src position or NO_ERROR, 0]`` (the src check runs only in eager checked calls to
a quantized dst: ``_set_rows_finite_kernel``).
Sticky record layout (int64[4]): ``[flag, first bad idx position, its value, call-site id]``.
"""

from __future__ import annotations

import types

import numpy as np

from rocsample.kernels import JIT_CACHE

from . import quant as _quant

NO_ERROR = np.int64(2**63 - 1)
_QROWS_SHARED = 128  # 32-value blocks staged per pass in the quant kernel (128 * 33 * 4 B)
_QPAD = 33  # shared row stride of a staged block: avoids 32-way bank conflicts


def build(cuda):
    q = _quant.build(cuda)
    quantize_block = q.quantize_block
    load_f32_bits = q.load_f32_bits
    convert_bits = q.convert_bits
    f32_from_bits = q.f32_from_bits
    i64 = np.int64
    NONE = NO_ERROR
    QROWS = _QROWS_SHARED
    QPAD = _QPAD
    SH = QROWS * QPAD

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_reset_kernel(winner, slot):
        t = cuda.grid(1)
        stride = cuda.gridsize(1)
        n = winner.shape[0]
        i = i64(t)
        while i < n:
            winner[i] = -1
            i += stride
        if t == 0:
            slot[0] = NONE
            slot[1] = 0
            slot[2] = NONE

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_check_kernel(idx, winner, slot, n_rows, use_winner, d3, d2):
        # idx (i3, i2, n_src); winner (d3, d2, n_rows) int32 (unused when use_winner == 0)
        i3 = idx.shape[0]
        i2 = idx.shape[1]
        n_src = idx.shape[2]
        total = i64(d3) * i64(d2) * i64(n_src)
        i = i64(cuda.grid(1))
        stride = i64(cuda.gridsize(1))
        while i < total:
            r = i % n_src
            rest = i // n_src
            b2 = rest % d2
            b3 = rest // d2
            j3 = b3 % i3
            j2 = b2 % i2
            v = i64(idx[j3, j2, r])
            if v < 0 or v >= n_rows:
                cuda.atomic.min(slot, 0, (j3 * i2 + j2) * n_src + r)
            elif use_winner != 0:
                cuda.atomic.max(winner, (b3, b2, v), np.int32(r))
            i += stride

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_finite_kernel(src, slot, src_f16):
        # quantizers reject inf / NaN (ggml's would write garbage): flag the first one in C order
        d2 = src.shape[1]
        n_src = src.shape[2]
        ne0 = src.shape[3]
        total = i64(src.shape[0]) * i64(d2) * i64(n_src) * i64(ne0)
        i = i64(cuda.grid(1))
        stride = i64(cuda.gridsize(1))
        while i < total:
            c = i % ne0
            rest = i // ne0
            r = rest % n_src
            rest = rest // n_src
            b2 = rest % d2
            b3 = rest // d2
            u = load_f32_bits(src, b3, b2, r, c, src_f16)
            if (u & 0x7F800000) == 0x7F800000:
                cuda.atomic.min(slot, 2, i)
            i += stride

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _record(idx, slot, sticky, record, site):
        if slot[0] == NONE:
            return
        pos = slot[0]
        i2 = idx.shape[1]
        n_src = idx.shape[2]
        r = pos % n_src
        j2 = (pos // n_src) % i2
        j3 = pos // (n_src * i2)
        v = i64(idx[j3, j2, r])
        slot[1] = v
        if record != 0:
            if sticky[0] == 0:
                sticky[0] = 1
                sticky[1] = pos
                sticky[2] = v
                sticky[3] = site

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _row_target(idx, winner, use_winner, n_rows, b3, b2, r):
        """Destination row of source row r, or -1 when it is not written (lost duplicate)."""
        v = i64(idx[b3 % idx.shape[0], b2 % idx.shape[1], r])
        if v < 0 or v >= n_rows:
            return i64(-1)
        if use_winner != 0 and winner[b3, b2, v] != r:
            return i64(-1)
        return v

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_float_kernel(
        dst, src, idx, winner, slot, sticky, use_winner, record, site, src_f16, dst_code
    ):
        # One thread block per source row (grid-stride), threads stride the columns: coalesced.
        if slot[0] != NONE or slot[2] != NONE:
            if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
                _record(idx, slot, sticky, record, site)
            return
        d3 = src.shape[0]
        d2 = src.shape[1]
        n_src = src.shape[2]
        ne0 = src.shape[3]
        n_rows = dst.shape[2]
        total_rows = i64(d3) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            r = row % n_src
            rest = row // n_src
            b2 = rest % d2
            b3 = rest // d2
            v = _row_target(idx, winner, use_winner, n_rows, b3, b2, r)
            if v >= 0:
                c = i64(cuda.threadIdx.x)
                while c < ne0:
                    u = load_f32_bits(src, b3, b2, r, c, src_f16)
                    dst[b3, b2, v, c] = convert_bits(u, dst_code)
                    c += cuda.blockDim.x
            row += cuda.gridDim.x

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_quant_kernel(
        dst, src, idx, winner, slot, sticky, use_winner, record, site, src_f16, qcode, bpb
    ):
        # One thread per 32-value block; a thread block walks a row in chunks of QROWS blocks,
        # staging each chunk through shared memory so global loads stay coalesced.
        if slot[0] != NONE or slot[2] != NONE:
            if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
                _record(idx, slot, sticky, record, site)
            return
        sh = cuda.shared.array(SH, np.float32)
        xb = cuda.local.array(32, np.float32)
        d3 = src.shape[0]
        d2 = src.shape[1]
        n_src = src.shape[2]
        ne0 = src.shape[3]
        nblk = ne0 // 32
        n_rows = dst.shape[2]
        tid = cuda.threadIdx.x
        nthr = cuda.blockDim.x
        total_rows = i64(d3) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            r = row % n_src
            rest = row // n_src
            b2 = rest % d2
            b3 = rest // d2
            v = _row_target(idx, winner, use_winner, n_rows, b3, b2, r)
            if v >= 0:  # uniform over the thread block: the syncthreads below are safe
                cb = i64(0)
                while cb < nblk:
                    n = nblk - cb
                    if n > nthr:
                        n = nthr
                    e = i64(tid)
                    while e < n * 32:
                        u = load_f32_bits(src, b3, b2, r, cb * 32 + e, src_f16)
                        sh[(e // 32) * QPAD + (e % 32)] = f32_from_bits(u)
                        e += nthr
                    cuda.syncthreads()
                    if tid < n:
                        for j in range(32):
                            xb[j] = sh[tid * QPAD + j]
                        quantize_block(qcode, xb, dst, b3, b2, v, (cb + tid) * bpb)
                    cuda.syncthreads()
                    cb += nthr
            row += cuda.gridDim.x

    @cuda.jit(cache=JIT_CACHE)
    def _ring_index_kernel(position, out, n_rows, advance):
        # out[i] = (position + i) mod n_rows; then optionally position += n (one thread block)
        p = i64(position[0])
        n = out.shape[0]
        i = i64(cuda.threadIdx.x)
        while i < n:
            q = (p + i) % n_rows
            if q < 0:
                q += n_rows
            out[i] = q
            i += cuda.blockDim.x
        cuda.syncthreads()
        if advance != 0 and cuda.threadIdx.x == 0:
            position[0] = p + n

    return types.SimpleNamespace(
        _set_rows_reset_kernel=_set_rows_reset_kernel,
        _set_rows_check_kernel=_set_rows_check_kernel,
        _set_rows_finite_kernel=_set_rows_finite_kernel,
        _ring_index_kernel=_ring_index_kernel,
        _set_rows_float_kernel=_set_rows_float_kernel,
        _set_rows_quant_kernel=_set_rows_quant_kernel,
        quant=q,
        QROWS=QROWS,
    )
