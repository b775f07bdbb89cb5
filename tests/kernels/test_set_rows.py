"""set_rows on the selected backend against rocsample.reference, byte for byte (SPEC §3).

Shapes: ggml's test grid (ne0 in {32, 96, 256, 4096}, 1..11 rows, broadcast factors 2 and 3,
strided rows). ne0 = 32 is one quant block per row (a single thread per row in the quant kernel);
96 is three blocks (a partial warp); 256 is 8 blocks; 4096 is 128 blocks = one full chunk of the
quant kernel's shared-memory staging and two unrolled trips (8 words of two values) of the paired
float kernel. The simulator runs a reduced grid: it executes every thread in Python.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

from rocsample.reference import set_rows as ref
from rocsample.reference.quant import BLOCK_BYTES

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

SIM = os.environ.get("ROCSAMPLE_BACKEND") == "sim"
FLOAT_TYPES = ["f32", "f16", "bf16"]
QUANT_TYPES = list(BLOCK_BYTES)
ALL_TYPES = FLOAT_TYPES + QUANT_TYPES


# ---- helpers -------------------------------------------------------------------------------


def assert_bytes_equal(got, want, label=""):
    """Byte-exact comparison that prints the mismatching rows and bytes (and flags NaN / inf)."""
    g = np.ascontiguousarray(got).view(np.uint8)
    w = np.ascontiguousarray(want).view(np.uint8)
    assert g.shape == w.shape, f"{label}: shape {g.shape} != {w.shape}"
    if np.array_equal(g, w):
        return
    rows_g = g.reshape(-1, g.shape[-1])
    rows_w = w.reshape(-1, w.shape[-1])
    bad = np.flatnonzero((rows_g != rows_w).any(axis=1))
    lines = [f"{label}: {bad.size} of {rows_g.shape[0]} rows differ (flat rows {bad[:8].tolist()})"]
    for r in bad[:3]:
        cols = np.flatnonzero(rows_g[r] != rows_w[r])
        lines.append(f"  row {r}: bytes {cols[:8].tolist()} got {rows_g[r][cols[:8]].tolist()} "
                     f"want {rows_w[r][cols[:8]].tolist()}")
    if np.asarray(got).dtype.kind == "f":
        a = np.asarray(got)
        lines.append(f"  got has nan: {bool(np.isnan(a).any())}, inf: {bool(np.isinf(a).any())}")
    pytest.fail("\n".join(lines))


def make_dst(t, lead, n_rows, ne0, rng):
    """A destination filled with random bytes, so rows that must not change are noticed."""
    if t in BLOCK_BYTES:
        return rng.integers(0, 256, (*lead, n_rows, ne0 // 32 * BLOCK_BYTES[t]), dtype=np.uint8)
    if t == "f32":
        return rng.standard_normal((*lead, n_rows, ne0)).astype(np.float32)
    bits = rng.integers(0, 0x7C00, (*lead, n_rows, ne0), dtype=np.uint16)
    return bits.view(np.float16) if t == "f16" else bits


def run(backend, dst, src, idx, t, **kw):
    """set_rows on the backend with device copies of the inputs; returns dst's new host bytes."""
    if not backend.is_device:
        out = dst.copy()
        rocsample_set_rows(out, src, idx, dst_type=t, **kw)
        return out
    d = backend.as_array(np.ascontiguousarray(dst), "dst")
    s = backend.as_array(src, "src") if src.flags.c_contiguous else backend.as_array(np.ascontiguousarray(src), "src")
    i = backend.as_array(np.ascontiguousarray(idx), "idx")
    try:
        rocsample_set_rows(d, s, i, dst_type=t, **kw)
    finally:
        host = backend.to_host(d)
    return host.view(dst.dtype)


def rocsample_set_rows(*a, **kw):
    return sr.set_rows(*a, **kw)


def expected(dst, src, idx, t):
    out = dst.copy()
    ref.set_rows(out, src, idx, dst_type=t)
    return out


# ---- agreement with the reference ----------------------------------------------------------

if SIM:
    GRID = [(t, ne0, n) for t in ALL_TYPES for ne0, n in [(32, 3), (96, 5)]]
else:
    GRID = [(t, ne0, n) for t in ALL_TYPES for ne0 in (32, 96, 256, 4096) for n in (1, 2, 5, 11)]


@pytest.mark.parametrize("t,ne0,n_src", GRID)
def test_matches_reference(backend, rng, t, ne0, n_src):
    n_rows = n_src + 3
    src = rng.standard_normal((n_src, ne0)).astype(np.float32) * np.float32(rng.choice([0.01, 1, 300]))
    idx = rng.permutation(n_rows)[:n_src].astype(np.int64)
    dst = make_dst(t, (), n_rows, ne0, rng)
    assert_bytes_equal(run(backend, dst, src, idx, t), expected(dst, src, idx, t), f"{t} ne0={ne0}")


@pytest.mark.parametrize("t", ALL_TYPES if not SIM else ["f16", "q4_1", "iq4_nl"])
@pytest.mark.parametrize("factors", [(2, 3), (3, 2)] if not SIM else [(2, 3)])
def test_broadcast_idx(backend, rng, t, factors):
    # idx (i3, i2, n_src) is shared by d3 / i3 x d2 / i2 slices: idx[b3 % i3, b2 % i2, r]
    f3, f2 = factors
    i3, i2, n_src, ne0, n_rows = 1, 2, 3, 64, 7
    d3, d2 = i3 * f3, i2 * f2
    src = rng.standard_normal((d3, d2, n_src, ne0)).astype(np.float32)
    idx = np.stack([np.stack([rng.permutation(n_rows)[:n_src] for _ in range(i2)]) for _ in range(i3)])
    dst = make_dst(t, (d3, d2), n_rows, ne0, rng)
    assert_bytes_equal(run(backend, dst, src, idx, t), expected(dst, src, idx, t), t)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("src_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("t", ["f32", "bf16", "q8_0"] if SIM else ALL_TYPES)
def test_dtypes(backend, rng, t, src_dtype, idx_dtype):
    src = (rng.standard_normal((3, 64)) * 10).astype(src_dtype)
    idx = np.array([4, 0, 2], dtype=idx_dtype)
    dst = make_dst(t, (), 5, 64, rng)
    assert_bytes_equal(run(backend, dst, src, idx, t), expected(dst, src, idx, t), t)


@pytest.mark.parametrize("t", ["f32", "q5_0"] if SIM else ALL_TYPES)
def test_strided_src_and_dst_rows(backend, rng, t):
    # a row view of src (every other row, padded rows) and a dst whose rows sit in a wider buffer
    big = rng.standard_normal((2, 6, 96)).astype(np.float32)
    src = big[:, ::2, :64]
    idx = np.array([[3, 1, 0]], dtype=np.int64)
    dst_big = make_dst(t, (2,), 4, 128, rng)
    w = 64 if t not in BLOCK_BYTES else 2 * BLOCK_BYTES[t]
    if backend.is_device:
        d_big = backend.as_array(dst_big, "dst")
        # numba device arrays take no Ellipsis: spell the leading axes out
        view = d_big[tuple([slice(None)] * (d_big.ndim - 1)) + (slice(0, w),)]
        sr.set_rows(view, backend.as_array(np.ascontiguousarray(big), "src")[:, ::2, :64],
                    backend.as_array(idx, "idx"), dst_type=t)
        got = backend.to_host(d_big).view(dst_big.dtype)
    else:
        got = dst_big.copy()
        sr.set_rows(got[..., :w], src, idx, dst_type=t)
    want = dst_big.copy()
    ref.set_rows(want[..., :w], np.ascontiguousarray(src), idx, dst_type=t)
    assert_bytes_equal(got, want, t)


QUANT_LAYOUTS = [
    # (name, src column offset, dst byte offset, expected kernel family)
    ("words", 0, 0, "words"),
    ("src_row_mid_word", 1, 0, "bytes"),  # f32 rows starting on an odd value: no uint64 words
    ("dst_row_mid_word", 0, 2, "bytes"),  # dst rows 2 bytes past a word: no uint32 words
]


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])
@pytest.mark.parametrize("layout", QUANT_LAYOUTS, ids=[q[0] for q in QUANT_LAYOUTS])
@pytest.mark.parametrize("t", ["q8_0", "q5_0", "iq4_nl"] if SIM else QUANT_TYPES)
def test_quant_word_and_byte_kernels(backend, rng, launches, path, t, layout, checked):
    # the word kernels (whole-word loads and stores, staged in shared memory) take rows that
    # start on whole words; anything else takes the byte kernels: the same bytes either way.
    # 3 blocks per row: an odd chunk of 18/22/34-byte blocks ends in 2 bytes written by byte.
    name, soff, doff, family = layout
    ne0, n_src, n_rows = 96, 3, 5
    bpb = BLOCK_BYTES[t]
    src_big = (rng.standard_normal((n_src, ne0 + 2)) * 3).astype(np.float32)
    width = ne0 // 32 * bpb
    dst_big = rng.integers(0, 256, (n_rows, (width + 3) // 4 * 4 + 4), dtype=np.uint8)  # word rows
    idx = np.array([4, 0, 2], np.int64)
    ssl, dsl = np.s_[:, soff:soff + ne0], np.s_[:, doff:doff + ne0 // 32 * bpb]
    want = dst_big.copy()
    ref.set_rows(want[dsl], np.ascontiguousarray(src_big[ssl]), idx, dst_type=t)
    if not backend.is_device:
        got = dst_big.copy()
        sr.set_rows(got[dsl], src_big[ssl], idx, dst_type=t, check_bounds=checked)
        assert_bytes_equal(got, want, f"{t} {name}")
        return
    d = backend.as_array(dst_big, "dst")
    sr.set_rows(d[dsl], backend.as_array(src_big, "src")[ssl], backend.as_array(idx, "idx"),
                dst_type=t, check_bounds=checked)
    assert_bytes_equal(backend.to_host(d), want, f"{t} {name}")
    names = [getattr(k, "py_func", k).__name__ for k in launches]
    quant = [n for n in names if "quant" in n]
    assert len(quant) == 1, names
    assert quant[0].endswith("_bytes_kernel") == (family == "bytes"), names


def test_values_of_special_floats(backend):
    # NaN payloads, infinities, ties and half subnormals take the integer conversion paths
    vals = np.array([0x7F800001, 0xFFC00000, 0x7F800000, 0xFF800000, 0x3F808000, 0x3F818000,
                     0x33000001, 0x38800000, 0x477FF000, 0x00000001, 0x80000000, 0x7FFFFFFF],
                    np.uint32).view(np.float32)
    src = np.resize(vals, 32).astype(np.float32)[None]
    for t in FLOAT_TYPES:
        dst = np.zeros((2, 32), np.uint16 if t != "f32" else np.float32)
        if t == "f16":
            dst = dst.view(np.float16)
        idx = np.array([1])
        assert_bytes_equal(run(backend, dst, src, idx, t), expected(dst, src, idx, t), t)


# ---- duplicates, bounds, zero size ----------------------------------------------------------


@pytest.mark.parametrize("t", ["f32", "q4_0"] if SIM else ALL_TYPES)
def test_duplicates_highest_source_row_wins(backend, rng, t):
    src = rng.standard_normal((6, 32)).astype(np.float32)
    idx = np.array([2, 0, 2, 2, 0, 1])
    dst = make_dst(t, (), 4, 32, rng)
    got = run(backend, dst, src, idx, t)
    want = expected(dst, src, idx, t)
    assert_bytes_equal(got, want, t)
    # row 2 came from source row 3, row 0 from source row 4
    only3 = expected(dst, src[3:4], np.array([2]), t)
    assert_bytes_equal(got[2], only3[2], f"{t} dup row 2")


@pytest.mark.parametrize("bad", [-1, 5, 2**40])
@pytest.mark.parametrize("t", ["f16", "q8_0"])
def test_bad_index_raises_and_leaves_dst_unchanged(backend, rng, t, bad):
    src = rng.standard_normal((2, 3, 32)).astype(np.float32)
    idx = np.array([[0, 4, 1], [2, bad, bad]], dtype=np.int64)
    dst = make_dst(t, (2,), 5, 32, rng)
    before = dst.copy()
    if not backend.is_device:
        with pytest.raises(IndexError, match=rf"idx: .*got {bad} at position \(1, 1\)"):
            sr.set_rows(dst, src, idx, dst_type=t)
        assert_bytes_equal(dst, before, "dst after a bad index")
        return
    d = backend.as_array(dst, "dst")
    with pytest.raises(IndexError, match=rf"idx: .*got {bad} at position \(1, 1\)"):
        sr.set_rows(d, backend.as_array(src, "src"), backend.as_array(idx, "idx"), dst_type=t)
    assert_bytes_equal(backend.to_host(d).view(dst.dtype), before, "dst after a bad index")


def test_unchecked_bad_index_is_reported_by_check_errors(backend, rng, new_stream):
    st = new_stream()
    src = rng.standard_normal((3, 32)).astype(np.float32)
    idx = np.array([0, 7, 1])
    dst = rng.standard_normal((4, 32)).astype(np.float32)
    before = dst.copy()
    if backend.is_device:
        d = backend.as_array(dst, "dst", backend.stream(st))
        sr.set_rows(d, backend.as_array(src, "src", backend.stream(st)),
                    backend.as_array(idx, "idx", backend.stream(st)), stream=st, check_bounds=False)
        with pytest.raises(IndexError, match=r"got 7 at position 1"):
            sr.check_errors(st)
        assert_bytes_equal(backend.to_host(d, backend.stream(st)), before, "dst")
        sr.check_errors(st)  # cleared
    else:
        with pytest.raises(IndexError, match=r"got 7 at position 1"):
            sr.set_rows(dst, src, idx, stream=st, check_bounds=False)


def test_zero_size_is_noop(backend, rng):
    dst = rng.standard_normal((4, 32)).astype(np.float32)
    before = dst.copy()
    got = run(backend, dst, np.zeros((0, 32), np.float32), np.zeros((0,), np.int64), "f32")
    assert_bytes_equal(got, before, "zero rows")
    got = run(backend, dst[:, :0].copy(), np.zeros((2, 0), np.float32), np.array([0, 1]), "f32")
    assert got.shape == (4, 0)


# ---- ring buffer ----------------------------------------------------------------------------


def test_ring_write_wraps(backend, rng):
    n_rows, ne0 = 5, 32
    ring = rng.standard_normal((n_rows, ne0)).astype(np.float32)
    new = rng.standard_normal((3, ne0)).astype(np.float32)
    want = ring.copy()
    want[[4, 0, 1]] = new
    if backend.is_device:
        d = backend.as_array(ring, "dst")
        sr.ring_write(d, backend.as_array(new, "src"), 9)
        got = backend.to_host(d)
    else:
        got = ring.copy()
        sr.ring_write(got, new, 9)
    assert_bytes_equal(got, want, "ring")


def test_ring_write_device_position_advances(backend, rng):
    if not backend.is_device:
        pytest.skip("device positions are for GPU backends")
    ring = np.zeros((4, 32), np.float32)
    d = backend.as_array(ring, "dst")
    pos = backend.as_array(np.array([3], np.int64), "position")
    rows = [rng.standard_normal((1, 32)).astype(np.float32) for _ in range(3)]
    for r in rows:
        sr.ring_write(d, backend.as_array(r, "src"), pos, advance=True)
    got = backend.to_host(d)
    assert backend.to_host(pos)[0] == 6
    assert_bytes_equal(got[[3, 0, 1]], np.concatenate(rows), "ring rows")


# ---- bad input, each before any launch ------------------------------------------------------


def _dev(backend, a):
    return backend.as_array(a, "x") if backend.is_device else a


@pytest.mark.parametrize(
    "case,exc,msg",
    [
        ("src_dtype", TypeError, r"src: expected float32 or float16, got float64"),
        ("idx_dtype", TypeError, r"idx: expected int32 or int64, got float32"),
        ("ne0_not_32", ValueError, r"src: expected rows of a multiple of 32 values for a q4_0 dst"),
        ("dst_too_small", ValueError, r"dst: expected 36 bytes per row"),
        ("dst_width", ValueError, r"dst: expected 64 values per row"),
        ("lead_mismatch", ValueError, r"dst: expected leading dims"),
        ("n_src_mismatch", ValueError, r"idx: expected n_src=3"),
        ("broadcast", ValueError, r"idx: expected i2 dividing d2=3"),
        ("dst_type", ValueError, r"dst_type: expected one of"),
        ("dst_type_dtype", TypeError, r"dst: expected dtype uint8 for dst_type 'q8_0'"),
        ("no_dst_type", ValueError, r"dst_type: expected one of .* for a dst of dtype uint8"),
        ("noncontig_quant", ValueError, r"dst: expected contiguous rows of q8_0 blocks"),
        ("nonfinite", ValueError, r"src: expected finite values for a q4_0 destination"),
    ],
)
def test_bad_input_raises_before_launch(backend, rng, case, exc, msg):
    src = rng.standard_normal((3, 64)).astype(np.float32)
    idx = np.array([0, 1, 2])
    dst = np.zeros((4, 64), np.float32)
    t = None
    if case == "src_dtype":
        src = src.astype(np.float64)
    elif case == "idx_dtype":
        idx = idx.astype(np.float32)
    elif case == "ne0_not_32":
        src = src[:, :48].copy()
        dst = np.zeros((4, 18), np.uint8)
        t = "q4_0"
    elif case == "dst_too_small":
        dst = np.zeros((4, 30), np.uint8)
        t = "q4_0"
    elif case == "dst_width":
        dst = np.zeros((4, 60), np.float32)
    elif case == "lead_mismatch":
        src = rng.standard_normal((2, 3, 64)).astype(np.float32)
        dst = np.zeros((3, 4, 64), np.float32)
    elif case == "n_src_mismatch":
        idx = np.array([0, 1])
    elif case == "broadcast":
        src = rng.standard_normal((3, 3, 64)).astype(np.float32)
        dst = np.zeros((3, 4, 64), np.float32)
        idx = np.zeros((2, 3), np.int64)
    elif case == "dst_type":
        t = "q7_7"
    elif case == "dst_type_dtype":
        t = "q8_0"
    elif case == "no_dst_type":
        dst = np.zeros((4, 68), np.uint8)
    elif case == "noncontig_quant":
        t = "q8_0"
        dst = np.zeros((4, 136), np.uint8)
    elif case == "nonfinite":
        src[2, 5] = np.inf
        dst = np.zeros((4, 36), np.uint8)
        t = "q4_0"
    d = _dev(backend, dst)
    if case == "noncontig_quant":
        d = d[:, ::2]
    before = dst.copy()
    with pytest.raises(exc, match=msg):
        sr.set_rows(d, _dev(backend, src), _dev(backend, idx), dst_type=t)
    after = backend.to_host(d) if backend.is_device and case != "noncontig_quant" else dst
    if case != "noncontig_quant":
        assert_bytes_equal(after, before, case)


# ---- 64-bit index math ----------------------------------------------------------------------


@pytest.mark.gpu
def test_rows_past_2_31_elements(backend, rng):
    # a q8_0 ring of 2**31 + rows bytes: the last rows sit past every 32-bit offset
    ne0 = 4096
    w = ne0 // 32 * BLOCK_BYTES["q8_0"]
    n_rows = (2**31) // w + 64
    cuda = backend.cuda
    d = cuda.device_array((n_rows, w), dtype=np.uint8)
    src = rng.standard_normal((3, ne0)).astype(np.float32)
    idx = np.array([n_rows - 1, n_rows - 2, 5], dtype=np.int64)
    sr.set_rows(d, backend.as_array(src, "src"), backend.as_array(idx, "idx"), dst_type="q8_0")
    want = ref.convert_rows(src, "q8_0")
    got = np.stack([d[i].copy_to_host() for i in idx])
    assert_bytes_equal(got, want, "rows past 2**31 bytes")
    # f32 destination of more than 2**31 elements
    n_rows = (2**31) // ne0 + 8
    d = cuda.device_array((n_rows, ne0), dtype=np.float32)
    idx = np.array([n_rows - 1, 0, n_rows - 5], dtype=np.int64)
    sr.set_rows(d, backend.as_array(src, "src"), backend.as_array(idx, "idx"))
    got = np.stack([d[i].copy_to_host() for i in idx])
    assert_bytes_equal(got, src, "f32 rows past 2**31 elements")


@pytest.mark.cuda
def test_quant_kernel_has_no_fused_multiply_add(backend, rng):
    # ggml's reference rounds every product before adding (portable x86 build); NVVM would
    # contract a*b + c into fma.rn.f32, so products go through __fmul_rn. Check the PTX.
    from rocsample.kernels import set_rows as kern

    src = rng.standard_normal((2, 64)).astype(np.float32)
    for t in QUANT_TYPES:
        dst = make_dst(t, (), 3, 64, rng)
        want = expected(dst, src, np.array([2, 0]), t)
        # checked (device src: the three-launch kernel) and unchecked (the single-launch kernel)
        assert_bytes_equal(run(backend, dst, src, np.array([2, 0]), t), want, t)
        assert_bytes_equal(run(backend, dst, src, np.array([2, 0]), t, check_bounds=False), want, t)
    # a row that starts mid-word: the byte kernels too
    src_odd = np.ascontiguousarray(np.pad(src, ((0, 0), (1, 0))))
    for t in QUANT_TYPES:
        dst = make_dst(t, (), 3, 64, rng)
        want = expected(dst, src, np.array([2, 0]), t)
        d = backend.as_array(dst, "dst")
        s = backend.as_array(src_odd, "src")[:, 1:]
        for cb in (True, False):
            sr.set_rows(d, s, backend.as_array(np.array([2, 0]), "idx"), dst_type=t, check_bounds=cb)
            assert_bytes_equal(backend.to_host(d), want, f"{t} bytes kernel")
    ns = backend.kernels(kern.build)
    for name in ("_set_rows_quant_kernel", "_set_rows_fused_quant_kernel",
                 "_set_rows_quant_bytes_kernel", "_set_rows_fused_quant_bytes_kernel"):
        asm = getattr(ns, name).inspect_asm()
        assert asm, f"no compiled specialization of {name} to inspect"
        for sig, ptx in asm.items():
            assert "fma." not in ptx, f"fused multiply-add in the {name} PTX for {sig}"
