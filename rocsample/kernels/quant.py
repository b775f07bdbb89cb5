"""Device converters and 32-value block quantizers, bit-identical to ``rocsample.reference.quant``.

``build(cuda)`` returns a namespace of device functions compiled for the given numba CUDA-dialect
module (numba.cuda, numba.hip posing as it, or the simulator). Rules that keep the bytes exact:

- All float constants are float32 globals: a Python float literal would type as float64 in numba
  and promote the whole expression.
- A product that is followed by an add goes through ``_mul``: NVVM contracts ``a*b + c`` into
  ``fma.rn.f32`` by default (seen in the PTX of numba-cuda 0.30), which skips the rounding of the
  product that ggml's portable x86 build performs. ``libdevice.fmul_rn`` (``__fmul_rn``) is never
  fused. The simulator and backends without libdevice multiply plainly (they do not contract).
- Float-to-int conversions reproduce x86 ``cvttss2si`` (NaN / out of range -> INT32_MIN) instead
  of the GPU's saturating ``cvt.rzi``, because ggml's reference was defined on x86.
- Bit reinterpretation goes through a one-element local array and ``.view`` (no vendor intrinsic),
  and half / bfloat16 rounding is done with integer operations.

Block type codes (``QTYPE_CODES``) are the order of ``reference.quant.BLOCK_BYTES``.
"""

from __future__ import annotations

import types

import numpy as np

from rocsample.kernels import JIT_CACHE

from ..reference.quant import BLOCK_BYTES, KVALUES_IQ4NL

QTYPE_CODES = {name: i for i, name in enumerate(BLOCK_BYTES)}
FLOAT_CODES = {"f32": 0, "f16": 1, "bf16": 2}

_F = np.float32
_KVF = KVALUES_IQ4NL.astype(np.float32)
# midpoints of consecutive levels, doubled (best_index_int8 compares x + x against these)
_MID2 = np.zeros(16, dtype=np.float32)
_MID2[1:] = (KVALUES_IQ4NL[:-1].astype(np.int32) + KVALUES_IQ4NL[1:].astype(np.int32)).astype(np.float32)
# iq4_nl's tables as one, which kernels copy into shared memory (``load_iq4_table``): the doubled
# midpoints (entries 0..15), then the levels (16..31). A lookup by a per-thread index is one
# shared load, conflict-free (32 words in 32 banks); from constant memory it is serialized over
# the distinct addresses of a warp (sm_90), and AMD reads global constants with 64-bit
# addresses, two VGPRs each (what, with the binary search's chains in flight, took iq4_nl past
# gfx1151's 96 VGPRs per lane).
IQ4_TABLE = np.concatenate([_MID2, _KVF]).astype(np.float32)
IQ4_TABLE_SIZE = IQ4_TABLE.size


def build(cuda):
    F0 = _F(0.0)
    F1 = _F(1.0)
    F_HALF = _F(0.5)
    F_M8 = _F(-8.0)
    F_M16 = _F(-16.0)
    F_15 = _F(15.0)
    F_31 = _F(31.0)
    F_127 = _F(127.0)
    F_M127 = _F(-127.0)
    F_8_5 = _F(8.5)
    F_16_5 = _F(16.5)
    F_LO = _F(-2147483648.0)
    F_HI = _F(2147483648.0)
    EPS = _F(1e-15)
    TABLE = IQ4_TABLE
    NTAB = IQ4_TABLE_SIZE
    f32 = np.float32
    i64 = np.int64
    U32 = np.uint32

    lib = getattr(cuda, "libdevice", None)
    fmul_rn = getattr(lib, "fmul_rn", None) if lib is not None else None

    if fmul_rn is not None:

        @cuda.jit(device=True, cache=JIT_CACHE)
        def _mul(a, b):
            return fmul_rn(a, b)

    else:

        @cuda.jit(device=True, cache=JIT_CACHE)
        def _mul(a, b):
            return a * b

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _f32_from_bits(u):
        la = cuda.local.array(1, np.uint32)
        la[0] = u
        return la.view(np.float32)[0]

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _bits_from_f32(x):
        la = cuda.local.array(1, np.float32)
        la[0] = x
        return i64(la.view(np.uint32)[0])

    # The float converters below work on uint32 bits. numba types an operation on two uint32s
    # as 64-bit, so every intermediate is cast back with U32(...): LLVM then narrows the whole
    # chain to 32-bit instructions (a 64-bit integer op is two or more on a GPU, and these run
    # once per element of a float destination). No value below needs more than 32 bits.

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _f16_to_f32_bits(h):
        h = U32(h)
        sign = U32(U32(h & 0x8000) << 16)
        e = U32(U32(h >> 10) & 0x1F)
        m = U32(h & 0x3FF)
        if e == 31:  # inf, or a NaN made quiet as ggml's ggml_compute_fp16_to_fp32 does
            if m != 0:
                return U32(sign | U32(0x7FC00000) | U32(m << 13))
            return U32(sign | U32(0x7F800000))
        if e == 0:
            if m == 0:
                return sign
            p = U32(9)
            while U32(m >> p) == 0:
                p = U32(p - 1)
            return U32(sign | U32(U32(p + 103) << 23) | U32(U32(m << U32(23 - p)) & 0x7FFFFF))
        return U32(sign | U32(U32(e + 112) << 23) | U32(m << 13))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _f32_bits_to_f16(u, scale_nan):
        # scale_nan: a computed NaN is x86's default NaN (negative), stored as 0xFE00
        u = U32(u)
        sign = U32(U32(u >> 16) & 0x8000)
        a = U32(u & 0x7FFFFFFF)
        if a > 0x7F800000:
            if scale_nan:
                return U32(0xFE00)
            return U32(sign | U32(0x7E00) | U32(U32(a >> 13) & 0x3FF))
        if a >= 0x477FF000:  # >= 65520 rounds to inf
            return U32(sign | U32(0x7C00))
        if a >= 0x38800000:  # normal half
            m = U32(a - 0x38000000)
            return U32(sign | U32(U32(U32(m + 0x0FFF) + U32(U32(m >> 13) & 1)) >> 13))
        if a <= 0x33000000:  # <= 2**-25 ties to even zero
            return sign
        e = U32(a >> 23)
        mant = U32(U32(a & 0x7FFFFF) | 0x800000)
        shift = U32(126 - e)  # 14 .. 24
        h = U32(mant >> shift)
        rem = U32(mant & U32(U32(U32(1) << shift) - 1))
        half = U32(U32(1) << U32(shift - 1))
        if rem > half or (rem == half and U32(h & 1) == 1):
            h = U32(h + 1)
        return U32(sign | h)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _f32_bits_to_bf16(u):
        u = U32(u)
        if U32(u & 0x7FFFFFFF) > 0x7F800000:
            return U32(U32(u >> 16) | 64)
        # no wrap: u <= 0xFF800000 here (NaNs took the branch above)
        return U32(U32(u + U32(0x7FFF + U32(U32(u >> 16) & 1))) >> 16)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _cvtt(v):
        if v >= F_LO and v < F_HI:
            return i64(v)
        return i64(-2147483648)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _as_int8(i):
        return ((i & 0xFF) ^ 0x80) - 0x80

    # The quantizers read their block's 32 values from ``xs[xo + j]`` (a shared stage: no copy
    # of the block in registers) and write byte k of it to ``dst[b3, b2, row, off + k]``; xo and
    # off are unsigned (uint32 / uint64) and so is every offset added to them, so an index is
    # never tested for a negative wraparound (a signed one costs a compare and a select per byte,
    # which the compiler hoists out of a chunk loop as 34 live registers).

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _put_half(dst, b3, b2, row, off, h):
        dst[b3, b2, row, off] = h & 0xFF
        dst[b3, b2, row, off + U32(1)] = (h >> 8) & 0xFF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _scale_bits(d):
        return _f32_bits_to_f16(_bits_from_f32(d), True)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _first_abs_max(xs, xo):
        amax = F0
        mx = F0
        for j in range(32):
            x = xs[xo + U32(j)]
            a = abs(x)
            if amax < a:
                amax = a
                mx = x
        return mx

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _recip(d):
        r = F0
        if d != F0:
            r = F1 / d
        return r

    # The value passes below go through the block in groups of 8 values (4 pairs j, j + 16 of
    # the nibble types), one call per group with a constant start: a loop of 8 is unrolled whole
    # by NVVM and by AMDGPU's LLVM (constant shifts and offsets), a plain loop of 32 stays rolled
    # (variable 64-bit shifts, an offset update per value: 21-82 % more instructions per block
    # on sm_90, measured).

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q4_0_4(xs, xo, dst, b3, b2, row, off, idv):
        for j in range(4):
            q0 = min(15, _as_int8(_cvtt(_mul(xs[xo + U32(j)], idv) + F_8_5))) & 0xFF
            q1 = min(15, _as_int8(_cvtt(_mul(xs[xo + U32(j + 16)], idv) + F_8_5))) & 0xFF
            dst[b3, b2, row, off + U32(j)] = (q0 | (q1 << 4)) & 0xFF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q4_0(xs, xo, dst, b3, b2, row, off):
        mx = _first_abs_max(xs, xo)
        d = mx / F_M8
        idv = _recip(d)
        _put_half(dst, b3, b2, row, off, _scale_bits(d))
        _q4_0_4(xs, xo, dst, b3, b2, row, off + U32(2), idv)
        _q4_0_4(xs, xo + U32(4), dst, b3, b2, row, off + U32(6), idv)
        _q4_0_4(xs, xo + U32(8), dst, b3, b2, row, off + U32(10), idv)
        _q4_0_4(xs, xo + U32(12), dst, b3, b2, row, off + U32(14), idv)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _min_max(xs, xo):
        mn = xs[xo]
        mx = mn
        for j in range(1, 32):
            v = xs[xo + U32(j)]
            if v < mn:
                mn = v
            if v > mx:
                mx = v
        return mn, mx

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q4_1_4(xs, xo, dst, b3, b2, row, off, mn, idv):
        for j in range(4):
            q0 = min(15, _as_int8(_cvtt(_mul(xs[xo + U32(j)] - mn, idv) + F_HALF))) & 0xFF
            q1 = min(15, _as_int8(_cvtt(_mul(xs[xo + U32(j + 16)] - mn, idv) + F_HALF))) & 0xFF
            dst[b3, b2, row, off + U32(j)] = (q0 | (q1 << 4)) & 0xFF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q4_1(xs, xo, dst, b3, b2, row, off):
        mn, mx = _min_max(xs, xo)
        d = (mx - mn) / F_15
        idv = _recip(d)
        _put_half(dst, b3, b2, row, off, _scale_bits(d))
        _put_half(dst, b3, b2, row, off + U32(2), _scale_bits(mn))
        _q4_1_4(xs, xo, dst, b3, b2, row, off + U32(4), mn, idv)
        _q4_1_4(xs, xo + U32(4), dst, b3, b2, row, off + U32(8), mn, idv)
        _q4_1_4(xs, xo + U32(8), dst, b3, b2, row, off + U32(12), mn, idv)
        _q4_1_4(xs, xo + U32(12), dst, b3, b2, row, off + U32(16), mn, idv)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q5_0_4(xs, xo, dst, b3, b2, row, off, idv, qh, g):
        # pairs g + j, g + j + 16 (g a constant): their high bits into qh at g + j, g + j + 16
        for j in range(4):
            q0 = min(31, _as_int8(_cvtt(_mul(xs[xo + U32(j)], idv) + F_16_5))) & 0xFF
            q1 = min(31, _as_int8(_cvtt(_mul(xs[xo + U32(j + 16)], idv) + F_16_5))) & 0xFF
            dst[b3, b2, row, off + U32(j)] = ((q0 & 0xF) | ((q1 & 0xF) << 4)) & 0xFF
            qh |= ((q0 >> 4) & 1) << (g + j)
            qh |= ((q1 >> 4) & 1) << (g + j + 16)
        return qh

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q5_0(xs, xo, dst, b3, b2, row, off):
        mx = _first_abs_max(xs, xo)
        d = mx / F_M16
        idv = _recip(d)
        _put_half(dst, b3, b2, row, off, _scale_bits(d))
        qh = _q5_0_4(xs, xo, dst, b3, b2, row, off + U32(6), idv, i64(0), 0)
        qh = _q5_0_4(xs, xo + U32(4), dst, b3, b2, row, off + U32(10), idv, qh, 4)
        qh = _q5_0_4(xs, xo + U32(8), dst, b3, b2, row, off + U32(14), idv, qh, 8)
        qh = _q5_0_4(xs, xo + U32(12), dst, b3, b2, row, off + U32(18), idv, qh, 12)
        for k in range(4):
            dst[b3, b2, row, off + U32(2 + k)] = (qh >> (8 * k)) & 0xFF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q5_1_4(xs, xo, dst, b3, b2, row, off, mn, idv, qh, g):
        for j in range(4):
            q0 = _cvtt(_mul(xs[xo + U32(j)] - mn, idv) + F_HALF) & 0xFF
            q1 = _cvtt(_mul(xs[xo + U32(j + 16)] - mn, idv) + F_HALF) & 0xFF
            dst[b3, b2, row, off + U32(j)] = ((q0 & 0xF) | ((q1 & 0xF) << 4)) & 0xFF
            qh |= ((q0 >> 4) & 1) << (g + j)
            qh |= ((q1 >> 4) & 1) << (g + j + 16)
        return qh

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q5_1(xs, xo, dst, b3, b2, row, off):
        mn, mx = _min_max(xs, xo)
        d = (mx - mn) / F_31
        idv = _recip(d)
        _put_half(dst, b3, b2, row, off, _scale_bits(d))
        _put_half(dst, b3, b2, row, off + U32(2), _scale_bits(mn))
        qh = _q5_1_4(xs, xo, dst, b3, b2, row, off + U32(8), mn, idv, i64(0), 0)
        qh = _q5_1_4(xs, xo + U32(4), dst, b3, b2, row, off + U32(12), mn, idv, qh, 4)
        qh = _q5_1_4(xs, xo + U32(8), dst, b3, b2, row, off + U32(16), mn, idv, qh, 8)
        qh = _q5_1_4(xs, xo + U32(12), dst, b3, b2, row, off + U32(20), mn, idv, qh, 12)
        for k in range(4):
            dst[b3, b2, row, off + U32(4 + k)] = (qh >> (8 * k)) & 0xFF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _roundf_cvtt(v):
        # (int8_t)roundf(v): roundf is half away from zero; then cvttss2si
        if not (v >= F_LO and v < F_HI):
            return i64(-2147483648)
        t = i64(v)
        frac = abs(v - f32(t))
        if frac >= F_HALF:
            if v > F0:
                t += 1
            else:
                t -= 1
        return t

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q8_0_8(xs, xo, dst, b3, b2, row, off, idv):
        for j in range(8):
            # rounded product: ptxas may fuse a plain mul.f32 into the roundf subtraction
            dst[b3, b2, row, off + U32(j)] = _roundf_cvtt(_mul(xs[xo + U32(j)], idv)) & 0xFF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _q8_0(xs, xo, dst, b3, b2, row, off):
        amax = F0
        for j in range(32):
            a = abs(xs[xo + U32(j)])
            amax = amax if amax > a else a
        d = amax / F_127
        idv = _recip(d)
        _put_half(dst, b3, b2, row, off, _scale_bits(d))
        _q8_0_8(xs, xo, dst, b3, b2, row, off + U32(2), idv)
        _q8_0_8(xs, xo + U32(8), dst, b3, b2, row, off + U32(10), idv)
        _q8_0_8(xs, xo + U32(16), dst, b3, b2, row, off + U32(18), idv)
        _q8_0_8(xs, xo + U32(24), dst, b3, b2, row, off + U32(26), idv)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _best_index(x, tab):
        # x is a rounded product (_mul): x + x must not fuse with it
        x2 = x + x
        idx = 0
        step = 8
        while step > 0:
            j = idx + step
            if x2 >= tab[j]:
                idx = j
            step >>= 1
        return idx

    # iq4_nl's bytes are the level indices of its sum pass (ggml's reference keeps them, L[j],
    # and packs L[j] | L[j + 16] << 4), so they are written during that pass: the first half's
    # indices wait as nibbles of two uint32 (8 values each), not as 16 registers, and no pass
    # computes them again. Its tables (``tab``) are in shared memory: 32 words in 32 banks, so
    # a warp's lookups by per-thread index are conflict-free (a constant-memory lookup is
    # serialized over the distinct addresses of a warp).

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _iq4_group(xs, xo, idv, sumqx, sumq2, tab, nib, dst, b3, b2, row, off, second):
        """8 values: the weighted sums, in the reference's order, and the values' indices. Of
        the first half (second == 0) the indices go into nib (value k at bits 4k); of the
        second they complete the bytes of the pairs (value - 16, value)."""
        for k in range(8):
            x = xs[xo + U32(k)]
            lv = _best_index(_mul(idv, x), tab)
            q = tab[U32(16) + U32(lv)]
            wq = _mul(_mul(x, x), q)
            sumqx = sumqx + _mul(wq, x)
            sumq2 = sumq2 + _mul(wq, q)
            if second == 0:
                nib = U32(nib | U32(U32(lv) << U32(4 * k)))
            else:
                dst[b3, b2, row, off + U32(k)] = U32(U32(U32(nib >> U32(4 * k)) & U32(0xF)) | U32(U32(lv) << U32(4))) & U32(0xFF)
        return sumqx, sumq2, nib

    @cuda.jit(device=True, cache=JIT_CACHE)
    def _iq4_nl(xs, xo, dst, b3, b2, row, off, tab):
        amax = F0
        mx = F0
        for j in range(32):
            x = xs[xo + U32(j)]
            a = abs(x)
            if a > amax:
                amax = a
                mx = x
        if amax < EPS:
            for k in range(18):
                dst[b3, b2, row, off + U32(k)] = 0
            return
        d = mx / F_M127
        idv = F1 / d
        sumqx, sumq2, n0 = _iq4_group(xs, xo, idv, F0, F0, tab, U32(0), dst, b3, b2, row, off, 0)
        sumqx, sumq2, n1 = _iq4_group(xs, xo + U32(8), idv, sumqx, sumq2, tab, U32(0), dst, b3, b2, row, off, 0)
        sumqx, sumq2, n0 = _iq4_group(xs, xo + U32(16), idv, sumqx, sumq2, tab, n0, dst, b3, b2, row, off + U32(2), 1)
        sumqx, sumq2, n1 = _iq4_group(xs, xo + U32(24), idv, sumqx, sumq2, tab, n1, dst, b3, b2, row, off + U32(10), 1)
        d = F0
        if sumq2 > F0:
            d = sumqx / sumq2
        _put_half(dst, b3, b2, row, off, _scale_bits(d))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def quantize_block(code, xs, xo, dst, b3, b2, row, off, tab):
        """Quantize the 32 floats ``xs[xo:xo + 32]`` (xo unsigned) into the block's bytes
        ``dst[b3, b2, row, off:off + bytes]`` (off a uint64); ``tab``: ``IQ4_TABLE`` in shared
        memory (``load_iq4_table``), read by iq4_nl only."""
        if code == 0:
            _q4_0(xs, xo, dst, b3, b2, row, off)
        elif code == 1:
            _q4_1(xs, xo, dst, b3, b2, row, off)
        elif code == 2:
            _q5_0(xs, xo, dst, b3, b2, row, off)
        elif code == 3:
            _q5_1(xs, xo, dst, b3, b2, row, off)
        elif code == 4:
            _q8_0(xs, xo, dst, b3, b2, row, off)
        else:
            _iq4_nl(xs, xo, dst, b3, b2, row, off, tab)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_iq4_table(tab):
        """Every thread of the block: ``IQ4_TABLE`` into the shared ``tab`` (read after a
        barrier)."""
        k = cuda.threadIdx.x
        while k < NTAB:
            tab[k] = TABLE[k]
            k += cuda.blockDim.x

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_f32_bits(src, b3, b2, r, c, src_f16):
        # the source is handed over as raw bits (uint32 for f32, uint16 for f16)
        if src_f16:
            return _f16_to_f32_bits(src[b3, b2, r, c])
        return U32(src[b3, b2, r, c])

    @cuda.jit(device=True, cache=JIT_CACHE)
    def convert_bits(u, dst_code):
        # u: float32 bits (uint32); returns the destination's bits as uint32
        if dst_code == 0:
            return U32(u)
        if dst_code == 1:
            return _f32_bits_to_f16(u, False)
        return _f32_bits_to_bf16(u)

    return types.SimpleNamespace(
        quantize_block=quantize_block,
        load_iq4_table=load_iq4_table,
        load_f32_bits=load_f32_bits,
        convert_bits=convert_bits,
        f32_from_bits=_f32_from_bits,
        bits_from_f32=_bits_from_f32,
        f16_to_f32_bits=_f16_to_f32_bits,
        f32_bits_to_f16=_f32_bits_to_f16,
        f32_bits_to_bf16=_f32_bits_to_bf16,
        mul=_mul,
    )
