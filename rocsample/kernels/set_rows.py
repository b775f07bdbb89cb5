"""set_rows kernels (SPEC §3): validate + pick duplicate winners, then write rows.

A call with few indices (the launcher's ``_FUSE_MAX_IDX``, counted in idx itself) is ONE launch,
``_set_rows_fused_{float,vec,quant}_kernel``: every thread block first reads all of idx (a few KB,
L2-resident after the first block) and finds the first bad position in C order itself (shared
``atomic.min``), so all blocks reach the same verdict without talking to each other. With a bad
index no block writes anything, and thread 0 of block 0 reports it into ``err``: the per-call slot
(``record == 0``, an eager checked call) or the sticky per-stream record (``record == 1``). A good
call writes each source row unless a later source row of its (i3, i2) slice names the same
destination row (the block scans the rest of the slice), so the highest source row wins.

Larger calls are three launches on one stream:

1. ``_set_rows_reset_kernel``: winners <- -1, per-call error slot <- "none".
2. ``_set_rows_check_kernel``: every (b3, b2, r) reads ``idx[b3 % i3, b2 % i2, r]``; a bad index
   ``atomic.min``s its flat position in idx into the per-call slot (so the first bad position in C
   order is kept, whatever the thread order); a good one ``atomic.max``es r into
   ``winner[b3, b2, v]`` so that the highest source row wins a duplicated destination row.
3. ``_set_rows_float_kernel`` / ``_set_rows_vec_kernel`` / ``_set_rows_quant_kernel``: do nothing
   if the per-call slot holds an error (dst stays byte-for-byte unchanged, also inside a replayed
   graph); thread 0 of block 0 copies the error's position and value into the slot and, when
   asked, into the sticky per-stream record that ``check_errors`` reads. Otherwise each source row
   whose index is valid and is the winner is converted and stored.

Quantized rows (``_set_rows_quant_kernel`` / ``_set_rows_fused_quant_kernel``) are done in chunks
of up to blockDim 32-value blocks of a row: the chunk's source is loaded as whole words (uint64 of
two f32, uint32 of two f16; eight loads in flight per thread), coalesced, into a padded shared
stage; thread t then quantizes block t, reading its values from the stage (the same quantizer
code, ``kernels.quant``; nothing of the block is copied into registers or local memory, which
keeps every quant kernel within gfx1151's 96 VGPRs per lane), into a shared output buffer, and
the chunk's bytes leave as whole uint32 words (an odd chunk of 18-, 22- or 34-byte blocks ends in
2 bytes stored as one halfword). That needs rows of src starting on whole source words and rows of
dst on whole uint32 words; other views take the ``_bytes`` kernels (element loads into the same
stage, the same shared output buffer, bytes stored one per thread and coalesced), which give the
same bytes. Every quant kernel copies iq4_nl's tables into shared memory (``load_iq4_table``).

The fused float kernel splits each row into tiles of ``4 * blockDim`` words (``parts`` per row),
one tile per block and trip, so a decode row spreads over several blocks and each thread moves at
most four words; a block's first tile is loaded before idx is validated (nothing is stored before
the verdict), so the source and index loads overlap.

Float rows are written two values at a time (``_vec`` kernels) when ne0 is even and every row of
src and dst starts on a whole pair (8 bytes for f32, 4 for f16 / bf16): src and dst are then seen
as flat 1-D arrays of uint64 (two f32) or uint32 (two halves) words, each thread loads four words
before it stores any, and the two halves of a word are converted separately with the same integer
code as the scalar kernel, so the bytes are identical. Anything else (odd ne0, a view starting
mid-pair, a strided column axis) takes the one-value-per-thread ``_float`` kernels.

All index math is int64 (numba's intp), so destinations past 2**31 elements are addressed
correctly. Source and float destinations travel as raw bits (uint32 / uint16 views): conversions
are integer operations, which keeps NaN payloads and rounding identical on every backend.

Error slot layout (int64[4]): ``[first bad idx position or NO_ERROR, its value,
first non-finite src position or NO_ERROR, 0]`` (the src check runs only in eager checked calls to
a quantized dst: ``_set_rows_finite_kernel``; such calls always take the unfused path, with the
finite check as a fourth launch between check and write).
Sticky record layout (int64[4]): ``[flag, first bad idx position, its value, call-site id]``; a
kernel only writes it while the flag is 0 (the first error stays until ``check_errors`` reads and
clears it).
"""

from __future__ import annotations

import types

import numpy as np

from rocsample.kernels import JIT_CACHE

from . import atomics as _atomics
from . import quant as _quant

NO_ERROR = np.int64(2**63 - 1)
_QROWS_SHARED = 128  # 32-value blocks staged per pass in the quant kernel (128 * 33 * 4 B)
_QPAD = 33  # shared row stride of a staged block: avoids 32-way bank conflicts
_QMAX_BPB = 34  # the largest block (q8_0): bytes of one chunk's output staged in shared memory


def build(cuda):
    q = _quant.build(cuda)
    at = _atomics.build(cuda)
    atomic_min = at.min
    atomic_max = at.max
    quantize_block = q.quantize_block
    load_iq4_table = q.load_iq4_table
    NTAB = _quant.IQ4_TABLE_SIZE
    load_f32_bits = q.load_f32_bits
    convert_bits = q.convert_bits
    f32_from_bits = q.f32_from_bits
    f16_to_f32_bits = q.f16_to_f32_bits
    i64 = np.int64
    U32 = np.uint32
    U64 = np.uint64
    NONE = NO_ERROR
    I64_MAX = np.int64(2**63 - 1)
    I64_MIN = np.int64(-(2**63))
    Z64 = np.uint64(0)
    ZERO8 = (Z64, Z64, Z64, Z64, Z64, Z64, Z64, Z64)
    ZERO16 = (ZERO8, ZERO8)
    QROWS = _QROWS_SHARED
    QPAD = _QPAD
    SH = QROWS * QPAD
    SOUT = QROWS * _QMAX_BPB // 4  # uint32 words of one chunk's quantized bytes
    SOUT8 = SOUT * 4

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
                atomic_min(slot, 0, (j3 * i2 + j2) * n_src + r)
            elif use_winner != 0:
                atomic_max(winner, (b3, b2, v), np.int32(r))
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
                atomic_min(slot, 2, i)
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

    # ---- row writers ----------------------------------------------------------------------

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _write_row(dst, src, b3, b2, r, v, src_f16, dst_code):
        # one value per thread and trip: any layout (the fallback)
        c = i64(cuda.threadIdx.x)
        ne0 = src.shape[3]
        if src_f16 and dst_code == 1:  # f16 -> f16: the bits, NaN payloads included (as ggml)
            while c < ne0:
                dst[b3, b2, v, c] = src[b3, b2, r, c]
                c += cuda.blockDim.x
            return
        while c < ne0:
            u = load_f32_bits(src, b3, b2, r, c, src_f16)
            dst[b3, b2, v, c] = convert_bits(u, dst_code)
            c += cuda.blockDim.x

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _pair(a, src_f16, dst_code):
        """Two source values in one word (low half first) -> two destination values in one word."""
        w = U64(a)
        if src_f16:
            if dst_code == 1:
                return w  # f16 -> f16: the bits (as ggml's memcpy), NaN payloads included
            lo = f16_to_f32_bits(U32(w & U64(0xFFFF)))
            hi = f16_to_f32_bits(U32((w >> U64(16)) & U64(0xFFFF)))
        else:
            if dst_code == 0:
                return w
            lo = U32(w & U64(0xFFFFFFFF))
            hi = U32(w >> U64(32))
        if dst_code == 0:
            return U64(lo) | (U64(hi) << U64(32))
        return U64(convert_bits(lo, dst_code)) | (U64(convert_bits(hi, dst_code)) << U64(16))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _write_row_vec(dflat, sflat, doff, soff, nvec, src_f16, dst_code):
        # words of two values; four loads in flight per thread before the first store. Unsigned
        # indices: numba adds no negative-index wraparound to them.
        nt = U64(cuda.blockDim.x)
        c = U64(cuda.threadIdx.x)
        n = U64(nvec)
        while c + U64(3) * nt < n:
            a0 = sflat[soff + c]
            a1 = sflat[soff + c + nt]
            a2 = sflat[soff + c + U64(2) * nt]
            a3 = sflat[soff + c + U64(3) * nt]
            dflat[doff + c] = _pair(a0, src_f16, dst_code)
            dflat[doff + c + nt] = _pair(a1, src_f16, dst_code)
            dflat[doff + c + U64(2) * nt] = _pair(a2, src_f16, dst_code)
            dflat[doff + c + U64(3) * nt] = _pair(a3, src_f16, dst_code)
            c += U64(4) * nt
        while c < n:
            dflat[doff + c] = _pair(sflat[soff + c], src_f16, dst_code)
            c += nt

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _quant_row(dst, src, b3, b2, r, v, sh, so8, tab, src_f16, qcode, bpb):
        # One thread per 32-value block; the thread block walks the row in chunks of blockDim
        # blocks (<= QROWS), staging each chunk through shared memory so global loads stay
        # coalesced; the chunk's bytes are quantized into shared memory (so8, as in
        # _quant_row_words) and leave byte by byte, coalesced. Called by every thread of the
        # block (it synchronizes).
        nblk = src.shape[3] // 32
        tid = cuda.threadIdx.x
        nthr = cuda.blockDim.x
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
            if tid < n:  # block tid of the chunk, read from the stage
                quantize_block(qcode, sh, U32(tid) * U32(QPAD), so8, 0, 0, 0, U64(tid) * U64(bpb), tab)
            cuda.syncthreads()
            nbytes = n * bpb
            base = cb * bpb
            k = i64(tid)
            while k < nbytes:
                dst[b3, b2, v, base + k] = so8[0, 0, 0, k]
                k += nthr
            cb += nthr

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _stage_pair(sh, e, u0, u1):
        # values e and e + 1 of a chunk (e even: both in block e // 32) into the padded stage
        k = (e >> U64(5)) * U64(QPAD) + (e & U64(31))
        sh[k] = f32_from_bits(u0)
        sh[k + U64(1)] = f32_from_bits(u1)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _stage_word(sh, w, a, src_f16):
        # source word w of a chunk (two values: uint64 of two f32, or uint32 of two f16 bits)
        x = U64(a)
        if src_f16:
            _stage_pair(sh, U64(2) * w, f16_to_f32_bits(U32(x & U64(0xFFFF))),
                        f16_to_f32_bits(U32((x >> U64(16)) & U64(0xFFFF))))
        else:
            _stage_pair(sh, U64(2) * w, U32(x & U64(0xFFFFFFFF)), U32(x >> U64(32)))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _load8(sflat, base, w, nt, nw):
        """Source words w + k * nt (k < 8) of a chunk of nw words at base; 0 past its end."""
        a0 = U64(0)
        a1 = U64(0)
        a2 = U64(0)
        a3 = U64(0)
        a4 = U64(0)
        a5 = U64(0)
        a6 = U64(0)
        a7 = U64(0)
        if w < nw:
            a0 = U64(sflat[base + w])
        if w + nt < nw:
            a1 = U64(sflat[base + w + nt])
        if w + U64(2) * nt < nw:
            a2 = U64(sflat[base + w + U64(2) * nt])
        if w + U64(3) * nt < nw:
            a3 = U64(sflat[base + w + U64(3) * nt])
        if w + U64(4) * nt < nw:
            a4 = U64(sflat[base + w + U64(4) * nt])
        if w + U64(5) * nt < nw:
            a5 = U64(sflat[base + w + U64(5) * nt])
        if w + U64(6) * nt < nw:
            a6 = U64(sflat[base + w + U64(6) * nt])
        if w + U64(7) * nt < nw:
            a7 = U64(sflat[base + w + U64(7) * nt])
        return a0, a1, a2, a3, a4, a5, a6, a7

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _stage8(sh, w, nt, nw, a, src_f16):
        """Stage the words of _load8 (those inside the chunk)."""
        if w < nw:
            _stage_word(sh, w, a[0], src_f16)
        if w + nt < nw:
            _stage_word(sh, w + nt, a[1], src_f16)
        if w + U64(2) * nt < nw:
            _stage_word(sh, w + U64(2) * nt, a[2], src_f16)
        if w + U64(3) * nt < nw:
            _stage_word(sh, w + U64(3) * nt, a[3], src_f16)
        if w + U64(4) * nt < nw:
            _stage_word(sh, w + U64(4) * nt, a[4], src_f16)
        if w + U64(5) * nt < nw:
            _stage_word(sh, w + U64(5) * nt, a[5], src_f16)
        if w + U64(6) * nt < nw:
            _stage_word(sh, w + U64(6) * nt, a[6], src_f16)
        if w + U64(7) * nt < nw:
            _stage_word(sh, w + U64(7) * nt, a[7], src_f16)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _quant_first_words(sflat, soff, nblk):
        """The first two trips (16 words per thread: all of a 128-block chunk with 128 threads) of
        a row's first chunk, for a caller that issues them before validating idx (loading src is
        always safe)."""
        n = nblk
        if n > cuda.blockDim.x:
            n = cuda.blockDim.x
        nt = U64(cuda.blockDim.x)
        w = U64(cuda.threadIdx.x)
        nw = U64(n) * U64(16)
        return (_load8(sflat, U64(soff), w, nt, nw),
                _load8(sflat, U64(soff), w + U64(8) * nt, nt, nw))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _stage_first_words(sh, first, nblk, src_f16):
        """Stage what _quant_first_words loaded (before the barrier _quant_row_words ends its
        stage phase with)."""
        n = nblk
        if n > cuda.blockDim.x:
            n = cuda.blockDim.x
        nt = U64(cuda.blockDim.x)
        w = U64(cuda.threadIdx.x)
        nw = U64(n) * U64(16)
        _stage8(sh, w, nt, nw, first[0], src_f16)
        _stage8(sh, w + U64(8) * nt, nt, nw, first[1], src_f16)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _quant_row_words(d16, dflat, doff, sflat, soff, nblk, sh, so, so8, tab,
                         src_f16, qcode, bpb, pre):
        # The row in chunks of up to blockDim 32-value blocks; per chunk:
        # 1. stage: its source words (two values each, 16 per block) are loaded whole, eight in
        #    flight per thread, coalesced, and unpacked as float32 into the padded shared stage;
        # 2. quantize: thread t quantizes block t of the chunk, reading it from the stage
        #    (bank-conflict free thanks to the pad), writing its bytes into the shared output
        #    bytes `so8` (the same quantizer code as every other path);
        # 3. copy out: the chunk's bytes go to dst as whole uint32 words (the chunk starts on a
        #    word: cb * bpb with cb a multiple of blockDim, bpb even), the last 2 bytes of an odd
        #    chunk of 18/22/34-byte blocks as one halfword.
        # Called by every thread of the block (it synchronizes). The next chunk's stage is written
        # only after the barrier that follows this chunk's quantize phase, and its output only
        # after the barrier that follows the next stage: two barriers per chunk suffice.
        # pre: the first two trips of the first chunk are staged already (_stage_first_words).
        tid = U32(cuda.threadIdx.x)
        nt = U32(cuda.blockDim.x)
        nb = U32(nblk)  # 32-bit chunk state (a row has < 2**31 blocks): half the registers
        cb = U32(0)
        while cb < nb:
            n = nb - cb
            if n > nt:
                n = nt
            nw = U32(n * U32(16))
            base = U64(soff) + U64(cb) * U64(16)
            w = tid
            if pre and cb == 0:
                w = U32(w + U32(16) * nt)
            while w + U32(7) * nt < nw:
                a0 = sflat[base + U64(w)]
                a1 = sflat[base + U64(w + nt)]
                a2 = sflat[base + U64(w + U32(2) * nt)]
                a3 = sflat[base + U64(w + U32(3) * nt)]
                a4 = sflat[base + U64(w + U32(4) * nt)]
                a5 = sflat[base + U64(w + U32(5) * nt)]
                a6 = sflat[base + U64(w + U32(6) * nt)]
                a7 = sflat[base + U64(w + U32(7) * nt)]
                _stage_word(sh, U64(w), a0, src_f16)
                _stage_word(sh, U64(w + nt), a1, src_f16)
                _stage_word(sh, U64(w + U32(2) * nt), a2, src_f16)
                _stage_word(sh, U64(w + U32(3) * nt), a3, src_f16)
                _stage_word(sh, U64(w + U32(4) * nt), a4, src_f16)
                _stage_word(sh, U64(w + U32(5) * nt), a5, src_f16)
                _stage_word(sh, U64(w + U32(6) * nt), a6, src_f16)
                _stage_word(sh, U64(w + U32(7) * nt), a7, src_f16)
                w = U32(w + U32(8) * nt)
            while w < nw:
                _stage_word(sh, U64(w), sflat[base + U64(w)], src_f16)
                w = U32(w + nt)
            cuda.syncthreads()
            if tid < n:  # block tid of the chunk, read from the stage
                quantize_block(qcode, sh, tid * U32(QPAD), so8, 0, 0, 0, U64(tid) * U64(bpb), tab)
            cuda.syncthreads()
            nbytes = U32(n * U32(bpb))
            nwd = U32(nbytes >> U32(2))
            dbase = U64(doff) + U64((cb * U32(bpb)) >> U32(2))
            k = tid
            while k < nwd:
                dflat[dbase + U64(k)] = so[0, 0, 0, k]
                k = U32(k + nt)
            if tid == 0 and nbytes != (nwd << U32(2)):  # the last 2 bytes: one halfword
                c = U32(nwd * U32(4))
                d16[(dbase + U64(nwd)) * U64(2)] = U32(so8[0, 0, 0, c]) | (U32(so8[0, 0, 0, c + U32(1)]) << U32(8))
            cb = U32(cb + nt)

    # ---- the single-launch (fused) path ---------------------------------------------------

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _is_bad(v, n_rows):
        return v < 0 or v >= n_rows

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _fused_first_bad(idx, n_rows, shi):
        """All threads of a block: the flat position in idx of its first bad index, or NONE.

        Each thread walks its share of idx in C order (four loads in flight) and stops at its
        first bad index, which it ``atomic.min``s into ``shi[0]``: the minimum over the block is
        the first bad position in C order. Also resets ``shi[1]`` (the duplicate marker).
        """
        tid = cuda.threadIdx.x
        if tid == 0:
            shi[0] = NONE
            shi[1] = -1
        cuda.syncthreads()
        i3 = idx.shape[0]
        i2 = idx.shape[1]
        n_src = idx.shape[2]
        nt = i64(cuda.blockDim.x)
        found = False
        j3 = 0
        while j3 < i3 and not found:
            j2 = 0
            while j2 < i2 and not found:
                base = (i64(j3) * i2 + j2) * n_src
                r = i64(tid)
                while r < n_src:
                    r1 = r + nt
                    r2 = r1 + nt
                    r3 = r2 + nt
                    v0 = i64(idx[j3, j2, r])
                    v1 = i64(0)
                    v2 = i64(0)
                    v3 = i64(0)
                    if r1 < n_src:
                        v1 = i64(idx[j3, j2, r1])
                    if r2 < n_src:
                        v2 = i64(idx[j3, j2, r2])
                    if r3 < n_src:
                        v3 = i64(idx[j3, j2, r3])
                    bad = NONE
                    if _is_bad(v0, n_rows):
                        bad = base + r
                    elif _is_bad(v1, n_rows):
                        bad = base + r1
                    elif _is_bad(v2, n_rows):
                        bad = base + r2
                    elif _is_bad(v3, n_rows):
                        bad = base + r3
                    if bad != NONE:
                        atomic_min(shi, 0, bad)
                        found = True
                        break
                    r += 4 * nt
                j2 += 1
            j3 += 1
        cuda.syncthreads()
        return shi[0]

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _fused_report(idx, err, record, site, pos):
        # thread 0 of block 0 only: the call's verdict into err (record 0: the per-call slot,
        # always written; record 1: the sticky record, written only for the first error)
        if cuda.blockIdx.x != 0 or cuda.threadIdx.x != 0:
            return
        if pos == NONE:
            if record == 0:
                err[0] = NONE
                err[1] = 0
                err[2] = NONE
            return
        i2 = idx.shape[1]
        n_src = idx.shape[2]
        r = pos % n_src
        j2 = (pos // n_src) % i2
        j3 = pos // (n_src * i2)
        v = i64(idx[j3, j2, r])
        if record == 0:
            err[0] = pos
            err[1] = v
            err[2] = NONE
        elif err[0] == 0:
            err[0] = 1
            err[1] = pos
            err[2] = v
            err[3] = site

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _fused_target(idx, use_winner, b3, b2, r, row, shi):
        """Destination row of source row r (indices already validated), or -1 when a later
        source row of the same idx slice names the same row (the highest source row wins).
        Called by every thread of the block (it synchronizes when use_winner)."""
        j3 = b3 % idx.shape[0]
        j2 = b2 % idx.shape[1]
        v = i64(idx[j3, j2, r])
        if use_winner == 0:
            return v
        n_src = idx.shape[2]
        nt = i64(cuda.blockDim.x)
        c = r + 1 + cuda.threadIdx.x
        while c < n_src:
            c1 = c + nt
            w0 = i64(idx[j3, j2, c])
            w1 = i64(-1)
            if c1 < n_src:
                w1 = i64(idx[j3, j2, c1])
            if w0 == v or w1 == v:
                shi[1] = row  # every writer stores the same value
            c += 2 * nt
        cuda.syncthreads()
        dup = shi[1] == row  # rows of a block only grow: an older mark never equals row
        cuda.syncthreads()  # everyone has read it before the next row may mark again
        if dup:
            return i64(-1)
        return v

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _row_index(row, d2, n_src):
        r = row % n_src
        rest = row // n_src
        return rest // d2, rest % d2, r

    # ---- kernels: three-launch path (after reset + check) ---------------------------------

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_float_kernel(
        dst, src, idx, winner, slot, sticky, use_winner, record, site, src_f16, dst_code
    ):
        # One thread block per source row (grid-stride), threads stride the columns: coalesced.
        if slot[0] != NONE or slot[2] != NONE:
            if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
                _record(idx, slot, sticky, record, site)
            return
        d2 = src.shape[1]
        n_src = src.shape[2]
        n_rows = dst.shape[2]
        total_rows = i64(src.shape[0]) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            v = _row_target(idx, winner, use_winner, n_rows, b3, b2, r)
            if v >= 0:
                _write_row(dst, src, b3, b2, r, v, src_f16, dst_code)
            row += cuda.gridDim.x

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_vec_kernel(
        dflat, sflat, ds3, ds2, dsr, ss3, ss2, ssr, d3, d2, n_src, nvec, n_rows,
        idx, winner, slot, sticky, use_winner, record, site, src_f16, dst_code
    ):
        # As _set_rows_float_kernel on flat word views: row (b3, b2, r) of src starts at word
        # b3*ss3 + b2*ss2 + r*ssr of sflat, row (b3, b2, v) of dst at b3*ds3 + b2*ds2 + v*dsr.
        # The slot and the first row's index are loaded before either is tested (reads only;
        # nothing is written unless the slot is clear), so the two loads overlap.
        s0 = slot[0]
        s2 = slot[2]
        total_rows = i64(d3) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            v = _row_target(idx, winner, use_winner, n_rows, b3, b2, r)
            if s0 != NONE or s2 != NONE:
                break
            if v >= 0:
                soff = U64(b3 * ss3 + b2 * ss2 + r * ssr)
                doff = U64(b3 * ds3 + b2 * ds2 + v * dsr)
                _write_row_vec(dflat, sflat, doff, soff, nvec, src_f16, dst_code)
            row += cuda.gridDim.x
        if (s0 != NONE or s2 != NONE) and cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
            _record(idx, slot, sticky, record, site)

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_quant_bytes_kernel(
        dst, src, idx, winner, slot, sticky, use_winner, record, site, src_f16, qcode, bpb
    ):
        # the fallback for rows that do not start on whole words (src or dst): element loads,
        # one coalesced byte store per quantized byte (_quant_row)
        if slot[0] != NONE or slot[2] != NONE:
            if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
                _record(idx, slot, sticky, record, site)
            return
        sh = cuda.shared.array(SH, np.float32)
        so8 = cuda.shared.array((1, 1, 1, SOUT8), np.uint8)
        tab = cuda.shared.array(NTAB, np.float32)
        load_iq4_table(tab)  # read after the next barrier
        d2 = src.shape[1]
        n_src = src.shape[2]
        n_rows = dst.shape[2]
        total_rows = i64(src.shape[0]) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            v = _row_target(idx, winner, use_winner, n_rows, b3, b2, r)
            if v >= 0:  # uniform over the thread block: the syncthreads inside are safe
                _quant_row(dst, src, b3, b2, r, v, sh, so8, tab, src_f16, qcode, bpb)
            row += cuda.gridDim.x

    # ---- kernels: single-launch path (no reset, no check, no winner buffer) ---------------

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_fused_float_kernel(dst, src, idx, err, use_winner, record, site, src_f16, dst_code):
        shi = cuda.shared.array(2, np.int64)
        bad = _fused_first_bad(idx, dst.shape[2], shi)
        _fused_report(idx, err, record, site, bad)
        if bad != NONE:
            return  # uniform: every block saw the same bad index
        d2 = src.shape[1]
        n_src = src.shape[2]
        total_rows = i64(src.shape[0]) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            v = _fused_target(idx, use_winner, b3, b2, r, row, shi)
            if v >= 0:
                _write_row(dst, src, b3, b2, r, v, src_f16, dst_code)
            row += cuda.gridDim.x

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _tile_index(tile, parts, d3, d2, n_src):
        """(b3, b2, r, part) of a tile: source row (b3, b2, r), words part * 4 * blockDim on.
        No 64-bit division on the decode shapes (one part per row, one (d3, d2) slice)."""
        row = tile
        part = i64(0)
        if parts != 1:
            row = tile // parts
            part = tile - row * parts
        if d3 == 1 and d2 == 1:
            return i64(0), i64(0), row, part, row
        b3, b2, r = _row_index(row, d2, n_src)
        return b3, b2, r, part, row

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_fused_vec_kernel(
        dflat, sflat, ds3, ds2, dsr, ss3, ss2, ssr, d3, d2, nvec, n_rows, parts,
        idx, err, use_winner, record, site, src_f16, dst_code
    ):
        # One launch, rows split in tiles of 4 * blockDim words (parts per row) so that a decode
        # row spreads over several blocks and every thread moves at most 4 words, all loads in
        # flight before its first store. The block's first tile is loaded before idx is
        # validated (reading src is always safe), so the two loads overlap; nothing is stored
        # before the verdict.
        shi = cuda.shared.array(2, np.int64)
        n_src = idx.shape[2]
        tiles = i64(d3) * i64(d2) * i64(n_src) * i64(parts)
        nt = U64(cuda.blockDim.x)
        n = U64(nvec)
        tile = i64(cuda.blockIdx.x)
        a0 = U64(0)
        a1 = U64(0)
        a2 = U64(0)
        a3 = U64(0)
        c = U64(0)
        if tile < tiles:
            b3, b2, r, part, row = _tile_index(tile, parts, d3, d2, n_src)
            soff = U64(b3 * ss3 + b2 * ss2 + r * ssr)
            c = U64(part) * U64(4) * nt + U64(cuda.threadIdx.x)
            if c < n:
                a0 = U64(sflat[soff + c])
            if c + nt < n:
                a1 = U64(sflat[soff + c + nt])
            if c + U64(2) * nt < n:
                a2 = U64(sflat[soff + c + U64(2) * nt])
            if c + U64(3) * nt < n:
                a3 = U64(sflat[soff + c + U64(3) * nt])
        bad = _fused_first_bad(idx, n_rows, shi)
        _fused_report(idx, err, record, site, bad)
        if bad != NONE:
            return
        first = True
        while tile < tiles:
            b3, b2, r, part, row = _tile_index(tile, parts, d3, d2, n_src)
            c = U64(part) * U64(4) * nt + U64(cuda.threadIdx.x)
            if not first:
                soff = U64(b3 * ss3 + b2 * ss2 + r * ssr)
                if c < n:
                    a0 = U64(sflat[soff + c])
                if c + nt < n:
                    a1 = U64(sflat[soff + c + nt])
                if c + U64(2) * nt < n:
                    a2 = U64(sflat[soff + c + U64(2) * nt])
                if c + U64(3) * nt < n:
                    a3 = U64(sflat[soff + c + U64(3) * nt])
            first = False
            v = _fused_target(idx, use_winner, b3, b2, r, row, shi)
            if v >= 0:
                doff = U64(b3 * ds3 + b2 * ds2 + v * dsr)
                if c < n:
                    dflat[doff + c] = _pair(a0, src_f16, dst_code)
                if c + nt < n:
                    dflat[doff + c + nt] = _pair(a1, src_f16, dst_code)
                if c + U64(2) * nt < n:
                    dflat[doff + c + U64(2) * nt] = _pair(a2, src_f16, dst_code)
                if c + U64(3) * nt < n:
                    dflat[doff + c + U64(3) * nt] = _pair(a3, src_f16, dst_code)
            tile += cuda.gridDim.x

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_fused_quant_bytes_kernel(dst, src, idx, err, use_winner, record, site, src_f16, qcode, bpb):
        shi = cuda.shared.array(2, np.int64)
        sh = cuda.shared.array(SH, np.float32)
        so8 = cuda.shared.array((1, 1, 1, SOUT8), np.uint8)
        tab = cuda.shared.array(NTAB, np.float32)
        load_iq4_table(tab)  # read after the next barrier
        bad = _fused_first_bad(idx, dst.shape[2], shi)
        _fused_report(idx, err, record, site, bad)
        if bad != NONE:
            return
        d2 = src.shape[1]
        n_src = src.shape[2]
        total_rows = i64(src.shape[0]) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            v = _fused_target(idx, use_winner, b3, b2, r, row, shi)
            if v >= 0:  # uniform over the thread block
                _quant_row(dst, src, b3, b2, r, v, sh, so8, tab, src_f16, qcode, bpb)
            row += cuda.gridDim.x

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_quant_kernel(
        dst, d16, dflat, ds3, ds2, dsr, sflat, ss3, ss2, ssr, d3, d2, n_src, nblk,
        idx, winner, slot, sticky, use_winner, record, site, src_f16, qcode, bpb
    ):
        # After reset + check: as _set_rows_quant_bytes_kernel on word views (_quant_row_words).
        # d16 (dst as uint16 halfwords) takes the last 2 bytes of odd chunks; row (b3, b2, v) of dst starts
        # at uint32 word b3*ds3 + b2*ds2 + v*dsr of dflat, row (b3, b2, r) of src at word
        # b3*ss3 + b2*ss2 + r*ssr of sflat.
        if slot[0] != NONE or slot[2] != NONE:
            if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
                _record(idx, slot, sticky, record, site)
            return
        sh = cuda.shared.array(SH, np.float32)
        tab = cuda.shared.array(NTAB, np.float32)
        load_iq4_table(tab)  # read after the next barrier
        so8 = cuda.shared.array((1, 1, 1, SOUT8), np.uint8)
        so = so8.view(np.uint32)
        n_rows = dst.shape[2]
        total_rows = i64(d3) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        while row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            v = _row_target(idx, winner, use_winner, n_rows, b3, b2, r)
            if v >= 0:  # uniform over the thread block: the syncthreads inside are safe
                _quant_row_words(d16, dflat, b3 * ds3 + b2 * ds2 + v * dsr, sflat,
                                 b3 * ss3 + b2 * ss2 + r * ssr, nblk, sh, so, so8, tab,
                                 src_f16, qcode, bpb, False)
            row += cuda.gridDim.x

    @cuda.jit(cache=JIT_CACHE)
    def _set_rows_fused_quant_kernel(
        dst, d16, dflat, ds3, ds2, dsr, sflat, ss3, ss2, ssr, d3, d2, nblk,
        idx, err, use_winner, record, site, src_f16, qcode, bpb
    ):
        # One launch: validate idx (every block), then as _set_rows_quant_kernel.
        shi = cuda.shared.array(2, np.int64)
        sh = cuda.shared.array(SH, np.float32)
        tab = cuda.shared.array(NTAB, np.float32)
        so8 = cuda.shared.array((1, 1, 1, SOUT8), np.uint8)
        so = so8.view(np.uint32)
        n_src = idx.shape[2]
        total_rows = i64(d3) * i64(d2) * i64(n_src)
        row = i64(cuda.blockIdx.x)
        # the first two trips of the block's first row are loaded before idx is validated (the
        # two loads overlap; they are staged, in shared memory only, after the verdict)
        first = ZERO16
        if row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            first = _quant_first_words(sflat, b3 * ss3 + b2 * ss2 + r * ssr, nblk)
        load_iq4_table(tab)  # after the preload is issued; read after the next barrier
        bad = _fused_first_bad(idx, dst.shape[2], shi)
        _fused_report(idx, err, record, site, bad)
        if bad != NONE:
            return
        if row < total_rows:  # into shared memory only: unused if that row turns out a duplicate
            _stage_first_words(sh, first, nblk, src_f16)
        pre = True
        while row < total_rows:
            b3, b2, r = _row_index(row, d2, n_src)
            v = _fused_target(idx, use_winner, b3, b2, r, row, shi)
            if v >= 0:  # uniform over the thread block
                _quant_row_words(d16, dflat, b3 * ds3 + b2 * ds2 + v * dsr, sflat,
                                 b3 * ss3 + b2 * ss2 + r * ssr, nblk, sh, so, so8, tab,
                                 src_f16, qcode, bpb, pre)
            pre = False  # a skipped (duplicate) first row leaves its preload unused
            row += cuda.gridDim.x

    @cuda.jit(cache=JIT_CACHE)
    def _ring_index_kernel(position, out, n_rows, advance):
        # out[i] = (position + i) mod n_rows, exact for every int64 position (reduced before the
        # add, so nothing overflows); then optionally position += n, wrapping in two's complement
        # past 2**63 - 1 like any int64 counter, computed without an overflowing add (one block)
        p = i64(position[0])
        n = i64(out.shape[0])
        start = p % n_rows
        if start < 0:
            start += n_rows
        i = i64(cuda.threadIdx.x)
        while i < n:
            out[i] = (start + i) % n_rows
            i += cuda.blockDim.x
        cuda.syncthreads()
        if advance != 0 and cuda.threadIdx.x == 0:
            if p > I64_MAX - n:
                position[0] = (p - (I64_MAX - n) - 1) + I64_MIN
            else:
                position[0] = p + n

    return types.SimpleNamespace(
        _set_rows_reset_kernel=_set_rows_reset_kernel,
        _set_rows_check_kernel=_set_rows_check_kernel,
        _set_rows_finite_kernel=_set_rows_finite_kernel,
        _ring_index_kernel=_ring_index_kernel,
        _set_rows_float_kernel=_set_rows_float_kernel,
        _set_rows_vec_kernel=_set_rows_vec_kernel,
        _set_rows_quant_kernel=_set_rows_quant_kernel,
        _set_rows_quant_bytes_kernel=_set_rows_quant_bytes_kernel,
        _set_rows_fused_float_kernel=_set_rows_fused_float_kernel,
        _set_rows_fused_vec_kernel=_set_rows_fused_vec_kernel,
        _set_rows_fused_quant_kernel=_set_rows_fused_quant_kernel,
        _set_rows_fused_quant_bytes_kernel=_set_rows_fused_quant_bytes_kernel,
        quant=q,
        QROWS=QROWS,
    )
