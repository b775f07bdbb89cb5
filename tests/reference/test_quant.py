"""The reference quantizers against gguf.quants (bit for bit) and hand-worked iq4_nl blocks."""

from __future__ import annotations

import numpy as np
import pytest

from rocsample.reference import quant as rq

gguf = pytest.importorskip("gguf")
from gguf import quants as gq  # noqa: E402

_T = gguf.GGMLQuantizationType
TYPES = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"]


def _gguf(x, name):
    with np.errstate(all="ignore"):
        return gq.quantize(x, getattr(_T, name.upper()))


def assert_same_bytes(got, want, x):
    got = np.asarray(got).reshape(want.shape)
    bad = np.flatnonzero((got != want).reshape(len(want), -1).any(axis=1))
    if bad.size:
        lines = [f"{bad.size} mismatching rows, first {bad[:5].tolist()}"]
        for i in bad[:3]:
            lines.append(f"row {i}: x[:8]={x[i][:8]} got={got[i][:12]} want={want[i][:12]}")
        pytest.fail("\n".join(lines))


def _adversarial():
    rows = np.zeros((10, 32), np.float32)
    # 0: all zero: d = -0.0 for q4_0/q5_0 (max stays +0 in ggml's loop)
    rows[1, 5] = 1e30  # a single huge value
    rows[2, 3], rows[2, 9] = 5, -5  # tie for the largest |x| with opposite signs: the first wins
    rows[3, 3], rows[3, 9] = -5, 5
    rows[4] = 1e-40  # denormals: 1/d overflows to inf, (int8_t) of inf / nan is 0 on x86
    rows[4, 7] = -3e-39
    rows[5] = (np.arange(32) - 16) * np.float32(1e-38)
    rows[6] = np.float32(3e38) * np.sign(np.arange(32) - 15.5)  # max - min overflows to inf
    rows[7, ::2] = -2.5
    rows[8] = np.linspace(-1, 1, 32, dtype=np.float32)  # values on rounding boundaries
    rows[9] = 7.0  # constant block: d = 0 for q4_1 / q5_1
    return rows


@pytest.mark.parametrize("name", TYPES)
def test_matches_gguf_random(name, rng):
    scale = rng.choice(np.array([1e-3, 1.0, 1e3], np.float32), size=(3000, 1))
    x = (rng.standard_normal((3000, 32)).astype(np.float32) * scale).astype(np.float32)
    x = x.reshape(1000, 96)  # three blocks per row
    assert_same_bytes(rq.quantize_rows(x, name), _gguf(x, name), x)


@pytest.mark.parametrize("name", TYPES)
def test_matches_gguf_adversarial(name):
    x = _adversarial()
    assert_same_bytes(rq.quantize_rows(x, name), _gguf(x, name), x)


@pytest.mark.parametrize("name", ["q4_0", "q4_1", "q5_0", "q5_1"])
def test_negative_zero_first_follows_c_not_gguf(name):
    # ggml's loops never replace max/min on an equal value, so -0.0 at x[0] of a zero block keeps
    # ggml's initial +0 (q4_0/q5_0: d = +0 / -8 = -0.0 -> 0x8000) or becomes min = -0.0
    # (q4_1/q5_1: m = 0x8000). gguf's argmax/min takes the element itself and differs here.
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = -0.0
    got = rq.quantize_rows(x, name)
    off = 0 if name in ("q4_0", "q5_0") else 2
    assert got[0, off] == 0x00 and got[0, off + 1] == 0x80


def test_bf16_matches_gguf(rng):
    x = rng.standard_normal((64, 32)).astype(np.float32) * np.float32(1e3)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, 3.4e38], np.float32)
    nans = np.array([0x7FC00000, 0x7F800001, 0xFFBFFFFF, 0x7FFFFFFF], np.uint32).view(np.float32)
    halfway = np.array([0x3F808000, 0x3F818000, 0x3F80FFFF], np.uint32).view(np.float32)  # ties
    x = np.concatenate([x.ravel(), specials, nans, halfway, np.zeros(32 - 13, np.float32)])
    x = x.reshape(-1, 32).astype(np.float32)
    want = _gguf(x, "bf16")
    got = rq.fp32_to_bf16_bits(x).view(np.uint8).reshape(want.shape)
    assert_same_bytes(got, want, x)


def test_f16_bits_match_numpy_for_non_nan(rng):
    x = np.concatenate([
        rng.standard_normal(4096).astype(np.float32) * np.float32(3e4),
        rng.standard_normal(4096).astype(np.float32) * np.float32(1e-6),  # half subnormals
        np.array([65504, 65519.99, 65520, -65520, np.inf, -np.inf, 0.0, -0.0, 2**-25, 2**-24 * 1.5],
                 np.float32),
    ])
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(rq.fp32_to_fp16_bits(x), want)


def test_f16_nan_is_quieted_with_payload():
    x = np.array([0x7F800001, 0xFFC00000, 0x7FA02000], np.uint32).view(np.float32)
    assert rq.fp32_to_fp16_bits(x).tolist() == [0x7E00, 0xFE00, 0x7E01 | 0x0100 >> 0]


@pytest.mark.parametrize("name", TYPES + ["iq4_nl"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_nonfinite_rejected_with_position(name, bad):
    x = np.zeros((2, 64), np.float32)
    x[1, 37] = bad
    with pytest.raises(ValueError, match=r"src: expected finite values.*position \(1, 37\)"):
        rq.quantize_rows(x, name)


def test_iq4_nl_zero_block_is_all_zero_bytes():
    x = np.zeros((1, 64), np.float32)
    x[0, 40] = 1e-16  # second block: max |x| < GROUP_MAX_EPS (1e-15) -> all zero too
    assert not rq.quantize_rows(x, "iq4_nl").any()


def test_iq4_nl_hand_block_constant():
    # Block 1: all 32 values = 1.0.
    #   max = 1 (first), d = 1 / -127, id = 1/d = -127.0 exactly (1/(-1/127) rounds back to -127).
    #   al = -127 for every j -> level 0 (x + x = -254 < -231 = -127 + -104), q = -127.
    #   w = 1, sumqx = 32 * (-127) = -4064, sumq2 = 32 * 16129 = 516128 (exact in float32).
    #   d = -4064 / 516128 = -1/127 -> float32 -0.007874016; fp16: -0.007874 = -1.0078125 * 2**-7
    #   -> sign 1, exp 8 (2**-7 + 15), mantissa round(0.0078125... * 1024) = 8: 0xA008.
    #   All quants are index 0: qs bytes 0x00.
    x = np.ones((1, 32), np.float32)
    got = rq.quantize_rows(x, "iq4_nl")[0]
    assert got[:2].tolist() == [0x08, 0xA0]
    assert not got[2:].any()


def test_iq4_nl_hand_block_two_levels():
    # Block 2: x[j] = 2.0 for j < 16, x[j] = -1.0 for j >= 16.
    #   max = 2 (first of the largest |x|), d = 2 / -127, id = -63.5 (exact).
    #   j < 16: al = -127 -> level 0 (q = -127), w = 4: w*q*x = 4 * -127 * 2 = -1016, w*q*q = 64516.
    #   j >= 16: al = 63.5 -> x + x = 127 >= 53 + 69 = 122 -> level 13 (69); 127 < 69 + 89 = 158.
    #       w = 1: w*q*x = 69 * -1 = -69, w*q*q = 4761.
    #   sumqx = 16 * -1016 + 16 * -69 = -17360, sumq2 = 16 * 64516 + 16 * 4761 = 1108432.
    #   d = -17360 / 1108432 = -0.0156618...; fp16: 2**-6 * 1.0023... -> exp 9, mantissa
    #   round(0.00235... * 1024) = 2 -> 0xA402.
    #   qs[j] = L[j] | L[j + 16] << 4 = 0 | 13 << 4 = 0xD0 for all 16 bytes.
    x = np.concatenate([np.full(16, 2.0), np.full(16, -1.0)]).astype(np.float32)[None]
    got = rq.quantize_rows(x, "iq4_nl")[0]
    assert got[:2].tolist() == [0x02, 0xA4]
    assert got[2:].tolist() == [0xD0] * 16


def test_best_index_equals_older_ggml_form(rng):
    # ggml's older best_index_int8 (bisection, then x - val[mu-1] < val[mu] - x) agrees with the
    # exact doubled-midpoint form on every float32 near each midpoint and at random.
    kv = rq.KVALUES_IQ4NL.astype(np.float32)
    mids = (kv[:-1] + kv[1:]) / np.float32(2)
    near = np.array([np.nextafter(m, np.float32(s * np.inf)) for m in mids for s in (-1, 1)], np.float32)
    near = np.concatenate([near, mids])
    x = np.concatenate([near, rng.uniform(-140, 130, 20000).astype(np.float32)]).astype(np.float32)

    def old(v):
        if v <= kv[0]:
            return 0
        if v >= kv[15]:
            return 15
        ml, mu = 0, 15
        while mu - ml > 1:
            mav = (ml + mu) // 2
            if v < kv[mav]:
                mu = mav
            else:
                ml = mav
        return mu - 1 if np.float32(v - kv[mu - 1]) < np.float32(kv[mu] - v) else mu

    want = np.array([old(v) for v in x])
    assert np.array_equal(rq.best_index_iq4nl(x), want)


def test_f16_widening_quiets_nans_like_ggml():
    # ggml_compute_fp16_to_fp32 (and F16C's vcvtph2ps) widen a NaN half with its payload and the
    # quiet bit set; every other half widens exactly, as NumPy's astype does
    h = np.arange(65536, dtype=np.uint16)
    got = rq.fp16_bits_to_fp32(h).view(np.uint32)
    plain = h.view(np.float16).astype(np.float32).view(np.uint32)
    nan = ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0)
    assert np.array_equal(got[~nan], plain[~nan])
    assert np.array_equal(got[nan], plain[nan] | np.uint32(0x400000))
    assert got[0x7C01] == 0x7FC02000 and got[0xFC01] == 0xFFC02000


def test_f16_rows_to_f16_are_copied_bit_for_bit():
    # ggml's CPU set_rows memcpys f16 rows into an f16 dst: signalling NaNs stay signalling
    h = np.array([[0x7C01, 0xFC01, 0x7E01, 0x0001, 0x7BFF, 0x8000, 0x7C00, 0x3C00]], np.uint16)
    assert np.array_equal(rq.convert_rows(h.view(np.float16), "f16"), h)
    # through float32 they would be quieted
    assert rq.convert_rows(h.view(np.float16).astype(np.float32), "f16")[0, 0] == 0x7E01
