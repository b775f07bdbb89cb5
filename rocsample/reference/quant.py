"""NumPy reference of ggml's row converters: f16, bf16 and the 32-value block quantizers.

Bit-for-bit with ggml's ``quantize_row_*_ref`` (``ggml/src/ggml-quants.c``) as built for x86-64
without FMA contraction (the portable build, and what ``gguf.quants`` reproduces). Every float
operation is done in float32, in ggml's order; the quirks that decide bytes are kept on purpose:

- ``(int8_t)f`` / ``(uint8_t)f`` compile to ``cvttss2si`` on x86: truncation toward zero, and the
  "integer indefinite" 0x80000000 (low byte 0) for NaN and anything outside int32. That matters
  when the scale underflows to a denormal and ``1/d`` overflows to inf (tiny blocks).
- Maxima are found with ggml's strict ``<`` / ``>`` loops: the first element wins a tie, and an
  all-zero block keeps ``max = +0.0f`` (so q4_0 / q5_0 store d = -0.0).
- A NaN scale (only iq4_nl, when ``x*x`` overflows) is stored as fp16 0xFE00: x86's default NaN
  is negative, and ggml's fp16 conversion keeps its sign.

Device quantizers (``rocsample/kernels/quant.py``) must produce the same bytes.
"""

from __future__ import annotations

import numpy as np

from .._validate import describe

QK = 32  # values per block, every type here

#: block type -> bytes per 32-value block
BLOCK_BYTES: dict[str, int] = {
    "q4_0": 18,
    "q4_1": 20,
    "q5_0": 22,
    "q5_1": 24,
    "q8_0": 34,
    "iq4_nl": 18,
}

FLOAT_TYPES = ("f32", "f16", "bf16")

#: kvalues_iq4nl from ggml-common.h
KVALUES_IQ4NL = np.array(
    [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.int8
)

GROUP_MAX_EPS = np.float32(1e-15)

_F = np.float32


# ---- scalar-format conversions --------------------------------------------------------------


def f32_bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def fp32_to_fp16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> IEEE half bits, round to nearest even; NaN keeps sign and top payload, quieted.

    That is F16C's ``vcvtps2ph`` (what ggml's CPU backend uses for f16 rows on x86).
    """
    x = np.asarray(x, dtype=np.float32)
    u = f32_bits(x).astype(np.int64)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16).view(np.uint16).astype(np.int64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    nan_bits = ((u >> 16) & 0x8000) | 0x7E00 | ((u >> 13) & 0x3FF)
    return np.where(nan, nan_bits, h).astype(np.uint16)


def fp32_to_fp16_scale_bits(x: np.ndarray) -> np.ndarray:
    """GGML_FP32_TO_FP16 of a block scale: RNE; a (computed) NaN is x86's default NaN -> 0xFE00."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = x.astype(np.float16).view(np.uint16)
    return np.where(np.isnan(x), np.uint16(0xFE00), h).astype(np.uint16)


def fp32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """ggml_compute_fp32_to_bf16: round to nearest even on the top 16 bits; NaN -> quiet NaN."""
    u = f32_bits(x).astype(np.int64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = (u + (0x7FFF + ((u >> 16) & 1))) >> 16
    return np.where(nan, (u >> 16) | 64, rounded).astype(np.uint16)


def fp16_bits_to_fp32(h: np.ndarray) -> np.ndarray:
    """IEEE half bits -> float32, exact; a NaN keeps sign and payload and comes out quiet.

    That is ggml's ``ggml_compute_fp16_to_fp32`` (its portable code multiplies by 2**-112, which
    quiets a signalling NaN; F16C's ``vcvtph2ps`` does the same): half 0x7C01 -> 0x7FC02000.
    NumPy's own widening keeps the NaN signalling (0x7F802000).
    """
    h = np.asarray(h, dtype=np.uint16)
    u = h.view(np.float16).astype(np.float32).view(np.uint32)
    nan = (h & 0x7C00) == 0x7C00
    nan &= (h & 0x3FF) != 0
    return np.where(nan, u | np.uint32(0x400000), u).view(np.float32)


def widen_rows(x: np.ndarray) -> np.ndarray:
    """float32 or float16 rows as float32 (float16 by :func:`fp16_bits_to_fp32`: quiet NaNs)."""
    x = np.asarray(x)
    if x.dtype == np.float16:
        return fp16_bits_to_fp32(x.view(np.uint16))
    return x.astype(np.float32)


# ---- helpers reproducing C conversions --------------------------------------------------------


def _cvtt(v: np.ndarray) -> np.ndarray:
    """x86 ``cvttss2si``: truncate toward zero; NaN / out of int32 -> INT32_MIN. Returns int64."""
    v = np.asarray(v, dtype=np.float32)
    ok = (v >= _F(-2147483648.0)) & (v < _F(2147483648.0))
    with np.errstate(invalid="ignore"):
        t = np.where(ok, np.trunc(np.where(ok, v, _F(0))), _F(0)).astype(np.int64)
    return np.where(ok, t, np.int64(-(2**31)))


def _as_int8(i: np.ndarray) -> np.ndarray:
    return ((i & 0xFF) ^ 0x80) - 0x80


def _roundf(x: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero, exactly (no x + 0.5 double rounding)."""
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        frac = np.abs(x - t)
        return np.where(frac >= _F(0.5), t + np.sign(x), t).astype(np.float32)


def _recip_or_zero(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(d != 0, _F(1.0) / np.where(d != 0, d, _F(1.0)), _F(0.0)).astype(np.float32)


def _first_abs_max(b: np.ndarray) -> np.ndarray:
    """``if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`` from amax = max = 0."""
    ax = np.abs(b)
    i = np.argmax(ax, axis=1)
    m = b[np.arange(b.shape[0]), i]
    return np.where(ax.max(axis=1) > 0, m, _F(0.0)).astype(np.float32)


def _first_extreme(b: np.ndarray, fn) -> np.ndarray:
    """min/max of a C loop with strict compare: the first of equal values (so the sign of 0) wins."""
    v = fn(b, axis=1)
    i = np.argmax(b == v[:, None], axis=1)
    return b[np.arange(b.shape[0]), i]


def _pack_nibbles(lo16: np.ndarray, hi16: np.ndarray) -> np.ndarray:
    return ((lo16 | (hi16 << 4)) & 0xFF).astype(np.uint8)


def _u16_bytes(bits: np.ndarray) -> np.ndarray:
    b = bits.astype(np.int64)
    return np.stack([b & 0xFF, b >> 8], axis=1).astype(np.uint8)


# ---- block quantizers: blocks (n, 32) float32 -> (n, bytes) uint8 ----------------------------


def _q4_0(b):
    mx = _first_abs_max(b)
    d = (mx / _F(-8)).astype(np.float32)
    idv = _recip_or_zero(d)
    with np.errstate(invalid="ignore", over="ignore"):
        x0 = (b * idv[:, None]).astype(np.float32)
        q = np.minimum(15, _as_int8(_cvtt(x0 + _F(8.5))))
    q &= 0xFF
    return np.concatenate([_u16_bytes(fp32_to_fp16_scale_bits(d)), _pack_nibbles(q[:, :16], q[:, 16:])], 1)


def _q4_1(b):
    mn = _first_extreme(b, np.min)
    mx = _first_extreme(b, np.max)
    with np.errstate(over="ignore"):
        d = ((mx - mn) / _F(15)).astype(np.float32)
    idv = _recip_or_zero(d)
    with np.errstate(invalid="ignore", over="ignore"):
        x0 = ((b - mn[:, None]) * idv[:, None]).astype(np.float32)
        q = np.minimum(15, _as_int8(_cvtt(x0 + _F(0.5))))
    q &= 0xFF
    head = np.concatenate(
        [_u16_bytes(fp32_to_fp16_scale_bits(d)), _u16_bytes(fp32_to_fp16_scale_bits(mn))], 1
    )
    return np.concatenate([head, _pack_nibbles(q[:, :16], q[:, 16:])], 1)


def _qh_bytes(q: np.ndarray) -> np.ndarray:
    bits = (q >> 4) & 1
    qh = (bits << np.arange(32, dtype=np.int64)).sum(axis=1)
    return np.stack([(qh >> (8 * k)) & 0xFF for k in range(4)], axis=1).astype(np.uint8)


def _q5_0(b):
    mx = _first_abs_max(b)
    d = (mx / _F(-16)).astype(np.float32)
    idv = _recip_or_zero(d)
    with np.errstate(invalid="ignore", over="ignore"):
        x0 = (b * idv[:, None]).astype(np.float32)
        q = np.minimum(31, _as_int8(_cvtt(x0 + _F(16.5))))
    q &= 0xFF
    qs = _pack_nibbles(q[:, :16] & 0xF, q[:, 16:] & 0xF)
    return np.concatenate([_u16_bytes(fp32_to_fp16_scale_bits(d)), _qh_bytes(q), qs], 1)


def _q5_1(b):
    mn = _first_extreme(b, np.min)
    mx = _first_extreme(b, np.max)
    with np.errstate(over="ignore"):
        d = ((mx - mn) / _F(31)).astype(np.float32)
    idv = _recip_or_zero(d)
    with np.errstate(invalid="ignore", over="ignore"):
        x0 = ((b - mn[:, None]) * idv[:, None]).astype(np.float32)
        q = _cvtt(x0 + _F(0.5)) & 0xFF
    head = np.concatenate(
        [_u16_bytes(fp32_to_fp16_scale_bits(d)), _u16_bytes(fp32_to_fp16_scale_bits(mn))], 1
    )
    qs = _pack_nibbles(q[:, :16] & 0xF, q[:, 16:] & 0xF)
    return np.concatenate([head, _qh_bytes(q), qs], 1)


def _q8_0(b):
    amax = np.abs(b).max(axis=1)
    d = (amax / _F(127)).astype(np.float32)
    idv = _recip_or_zero(d)
    with np.errstate(invalid="ignore", over="ignore"):
        x0 = (b * idv[:, None]).astype(np.float32)
        q = _cvtt(_roundf(x0)) & 0xFF
    return np.concatenate([_u16_bytes(fp32_to_fp16_scale_bits(d)), q.astype(np.uint8)], 1)


def best_index_iq4nl(x: np.ndarray) -> np.ndarray:
    """ggml's best_index_int8 over kvalues_iq4nl: level i once x reaches the midpoint of i-1, i.

    Compared as ``x + x >= val[i-1] + val[i]``, exact in float32 (the older
    ``x - val[mu-1] < val[mu] - x`` form agrees: those differences are exact near every midpoint).
    """
    x2 = (x + x).astype(np.float32)
    idx = np.zeros(x.shape, dtype=np.int64)
    kv = KVALUES_IQ4NL.astype(np.int64)
    for step in (8, 4, 2, 1):
        j = idx + step
        mid = (kv[j - 1] + kv[j]).astype(np.float32)
        idx = np.where(x2 >= mid, j, idx)
    return idx


def _iq4_nl(b):
    n = b.shape[0]
    with np.errstate(over="ignore", under="ignore"):
        weight = (b * b).astype(np.float32)
    amax = np.abs(b).max(axis=1)
    mx = _first_abs_max(b)
    live = amax >= GROUP_MAX_EPS
    # ntry = -1: d = max / values[0], no scale search loop (itry runs from 1 to -1)
    d0 = np.where(live, mx, _F(1.0)) / _F(-127.0)
    idv = (_F(1.0) / d0).astype(np.float32)
    sumqx = np.zeros(n, dtype=np.float32)
    sumq2 = np.zeros(n, dtype=np.float32)
    L = np.zeros(b.shape, dtype=np.int64)
    kvf = KVALUES_IQ4NL.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for j in range(QK):  # sequential float32 sums, in ggml's order
            al = (idv * b[:, j]).astype(np.float32)
            lj = best_index_iq4nl(al)
            L[:, j] = lj
            q = kvf[lj]
            wq = (weight[:, j] * q).astype(np.float32)
            sumqx = (sumqx + (wq * b[:, j]).astype(np.float32)).astype(np.float32)
            sumq2 = (sumq2 + (wq * q).astype(np.float32)).astype(np.float32)
        d = np.where(sumq2 > 0, sumqx / np.where(sumq2 > 0, sumq2, _F(1.0)), _F(0.0)).astype(np.float32)
    d = np.where(live, d, _F(0.0)).astype(np.float32)
    L = np.where(live[:, None], L, 0)
    return np.concatenate([_u16_bytes(fp32_to_fp16_scale_bits(d)), _pack_nibbles(L[:, :16], L[:, 16:])], 1)


_QUANTIZERS = {
    "q4_0": _q4_0,
    "q4_1": _q4_1,
    "q5_0": _q5_0,
    "q5_1": _q5_1,
    "q8_0": _q8_0,
    "iq4_nl": _iq4_nl,
}


def _first_nonfinite(x: np.ndarray):
    bad = ~np.isfinite(x)
    if bad.any():
        pos = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), x.shape)
        return tuple(int(p) for p in pos), float(x[pos])
    return None


def quantize_rows(x: np.ndarray, qtype: str, *, name: str = "src") -> np.ndarray:
    """Quantize rows of float32 values to ggml blocks.

    Parameters
    ----------
    x : numpy.ndarray
        float32 (or float16, widened exactly by :func:`fp16_bits_to_fp32`) array ``(..., ne0)``, ``ne0 % 32 == 0``, all finite.
    qtype : str
        One of ``q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    numpy.ndarray
        uint8 array ``(..., ne0 // 32 * BLOCK_BYTES[qtype])``.

    Raises
    ------
    ValueError
        Unknown ``qtype``, ``ne0`` not a multiple of 32, or a non-finite value (named by position).

    Example
    -------
    >>> quantize_rows(np.zeros((1, 32), np.float32), "q8_0").shape
    (1, 34)
    """
    if qtype not in _QUANTIZERS:
        raise ValueError(f"dst_type: expected one of {', '.join(_QUANTIZERS)}, got {describe(qtype)}")
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float16):
        raise TypeError(f"{name}: expected float32 or float16, got {x.dtype}")
    x = widen_rows(x)
    if x.ndim == 0 or x.shape[-1] % QK:
        raise ValueError(f"{name}: expected rows of a multiple of 32 values, got shape {x.shape}")
    bad = _first_nonfinite(x)
    if bad is not None:
        raise ValueError(
            f"{name}: expected finite values for a {qtype} destination, got {bad[1]} at position {bad[0]}"
        )
    lead = x.shape[:-1]
    nb = x.shape[-1] // QK
    blocks = np.ascontiguousarray(x).reshape(-1, QK)
    if blocks.shape[0] == 0:
        out = np.zeros((0, BLOCK_BYTES[qtype]), np.uint8)
    else:
        out = _QUANTIZERS[qtype](blocks)
    return out.reshape(*lead, nb * BLOCK_BYTES[qtype])


def convert_rows(x: np.ndarray, dst_type: str) -> np.ndarray:
    """Convert float32/float16 rows to ``dst_type``'s storage (float32, uint16 bits, or blocks).

    float16 rows to an f16 dst are copied bit for bit (ggml's CPU set_rows ``memcpy``s them, NaN
    payloads included); to any other type they are widened first (:func:`widen_rows`).
    """
    x = np.asarray(x)
    if dst_type == "f16" and x.dtype == np.float16:
        return x.view(np.uint16).copy()
    x = widen_rows(x)
    if dst_type == "f32":
        return x
    if dst_type == "f16":
        return fp32_to_fp16_bits(x)
    if dst_type == "bf16":
        return fp32_to_bf16_bits(x)
    return quantize_rows(x, dst_type)
