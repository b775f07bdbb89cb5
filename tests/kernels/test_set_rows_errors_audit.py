"""set_rows bad input (SPEC §3, §1; docs/SEMANTICS.md): the cases test_set_rows.py leaves open.

Every refused call must raise naming the argument, launch no kernel and leave dst byte for byte as
it was. Index errors name the FIRST bad position in C order of idx's own shape (also when idx is
broadcast, and for int32 extremes) on both device paths (one fused launch / reset + check + write).
The captured-graph error record keeps the first bad call per stream until ``check_errors`` reads it.
``ring_write``: negative positions wrap like Python's ``%``, more new rows than the ring holds
(the last one written wins), and bad positions. Shapes are tiny: the simulator runs every thread.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample import graphs
from rocsample.errors import CaptureError

from .test_set_rows import assert_bytes_equal, expected, make_dst

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function


def _dev(backend, a, st=None):
    return backend.as_array(a, "x", backend.stream(st)) if backend.is_device else a


def _host(backend, d, like, st=None):
    return backend.to_host(d, backend.stream(st)).view(like.dtype) if backend.is_device else d


# ---- argument checks: raised before any launch, dst unchanged ------------------------------

CASES = [
    ("idx_bool", TypeError, r"idx: expected int32 or int64, got bool"),
    ("idx_float64", TypeError, r"idx: expected int32 or int64, got float64"),
    ("idx_uint32", TypeError, r"idx: expected int32 or int64, got uint32"),
    ("idx_uint64", TypeError, r"idx: expected int32 or int64, got uint64"),
    ("idx_int16", TypeError, r"idx: expected int32 or int64, got int16"),
    ("src_int32", TypeError, r"src: expected float32 or float16, got int32"),
    ("src_f16_to_q_bad_ne0", ValueError, r"src: expected rows of a multiple of 32 values for a q8_0 dst, got ne0=40"),
    ("broadcast_i3", ValueError, r"idx: expected i3 dividing d3=3 \(broadcast\), got i3=2"),
    ("idx_zero_broadcast", ValueError, r"idx: expected non-zero broadcast dims \(i3, i2\)"),
    ("idx_4d", ValueError, r"idx: expected a 1-D to 3-D array"),
    ("src_5d", ValueError, r"src: expected a 1-D to 4-D array"),
    ("dst_1d", ValueError, r"dst: expected a 2-D to 4-D array"),
    ("dst_type_vs_float_dtype", TypeError, r"dst: expected dtype float16 or uint16 for dst_type 'f16', got float32"),
    ("quant_dst_too_wide", ValueError, r"dst: expected 68 bytes per row \(64 values of q8_0"),
    ("bad_stream", TypeError, r"stream: expected"),
]


IDX_DTYPES = {"idx_bool": np.bool_, "idx_float64": np.float64, "idx_uint32": np.uint32,
              "idx_uint64": np.uint64, "idx_int16": np.int16}


@pytest.mark.parametrize("case,exc,msg", CASES, ids=[c[0] for c in CASES])
def test_bad_arguments_raise_before_any_launch(backend, rng, launches, case, exc, msg):
    src = rng.standard_normal((3, 64)).astype(np.float32)
    idx = np.array([0, 3, 1])
    dst = make_dst("f32", (), 4, 64, rng)
    kw = {}
    if case in IDX_DTYPES:
        idx = np.array([0, 1, 0]).astype(IDX_DTYPES[case])
    elif case == "src_int32":
        src = np.zeros((3, 64), np.int32)
    elif case == "src_f16_to_q_bad_ne0":
        src = src[:, :40].astype(np.float16)
        dst = make_dst("q8_0", (), 4, 64, rng)[:, :34].copy()
        kw["dst_type"] = "q8_0"
    elif case == "broadcast_i3":
        src = rng.standard_normal((3, 1, 3, 64)).astype(np.float32)
        dst = make_dst("f32", (3, 1), 4, 64, rng)
        idx = np.zeros((2, 1, 3), np.int64)
    elif case == "idx_zero_broadcast":
        idx = np.zeros((0, 3), np.int64)
    elif case == "idx_4d":
        idx = idx.reshape(1, 1, 1, 3)
    elif case == "src_5d":
        src = src.reshape(1, 1, 1, 3, 64)
    elif case == "dst_1d":
        dst = dst[0].copy()
    elif case == "dst_type_vs_float_dtype":
        kw["dst_type"] = "f16"
    elif case == "quant_dst_too_wide":
        dst = make_dst("q8_0", (), 4, 64, rng)
        dst = np.concatenate([dst, dst[:, :1]], axis=1)  # 69 bytes per row
        kw["dst_type"] = "q8_0"
    elif case == "bad_stream":
        kw["stream"] = "not a stream"
    before = dst.copy()
    d = _dev(backend, dst)
    with pytest.raises(exc, match=msg):
        sr.set_rows(d, _dev(backend, src), _dev(backend, idx), **kw)
    if launches is not None:
        assert launches == [], f"{case}: {len(launches)} kernel(s) launched before the error"
    assert_bytes_equal(_host(backend, d, dst), before, case)


def test_non_contiguous_quant_rows_leave_the_buffer_unchanged(backend, rng, launches):
    # the rows of blocks sit every other byte of a wider buffer: refused, the buffer untouched
    big = rng.integers(0, 256, (4, 72), dtype=np.uint8)
    src = rng.standard_normal((2, 64)).astype(np.float32)
    d_big = _dev(backend, big)
    with pytest.raises(ValueError, match=r"dst: expected contiguous rows of q4_0 blocks, got row stride 2"):
        sr.set_rows(d_big[:, ::2], _dev(backend, src), _dev(backend, np.array([1, 2])), dst_type="q4_0")
    if launches is not None:
        assert launches == []
    assert_bytes_equal(_host(backend, d_big, big), big, "buffer around a strided quant dst")


# ---- index errors: first bad position in C order, nothing written --------------------------


@pytest.mark.parametrize("t", ["f16", "q4_1"])
def test_int32_extreme_indices(backend, rng, path, t):
    # -2**31 and 2**31 - 1 must stay out of range after widening (no wrap into [0, n_rows))
    src = rng.standard_normal((2, 3, 32)).astype(np.float32)
    idx = np.array([[1, 2, 0], [3, np.iinfo(np.int32).max, np.iinfo(np.int32).min]], np.int32)
    dst = make_dst(t, (2,), 4, 32, rng)
    d = _dev(backend, dst)
    with pytest.raises(IndexError, match=rf"idx: expected values in \[0, n_rows=4\), got {2**31 - 1} "
                                         r"at position \(1, 1\)$"):
        sr.set_rows(d, _dev(backend, src), _dev(backend, idx), dst_type=t)
    assert_bytes_equal(_host(backend, d, dst), dst, "dst after int32 extremes")


@pytest.mark.parametrize("t", ["f32", "q8_0"])
def test_bad_index_in_broadcast_idx_names_its_idx_position(backend, rng, path, t):
    # idx (1, 2, 3) serves d3 = 2 x d2 = 4 slices; two bad entries in the second idx slice: the
    # error names the first in idx's own C order, (0, 1, 1), not a (b3, b2, r) of src
    src = rng.standard_normal((2, 4, 3, 32)).astype(np.float32)
    idx = np.array([[[0, 2, 1], [3, -2, 7]]], np.int64)
    dst = make_dst(t, (2, 4), 4, 32, rng)
    d = _dev(backend, dst)
    with pytest.raises(IndexError, match=r"idx: expected values in \[0, n_rows=4\), got -2 at position \(0, 1, 1\)$"):
        sr.set_rows(d, _dev(backend, src), _dev(backend, idx), dst_type=t)
    assert_bytes_equal(_host(backend, d, dst), dst, "dst after a bad broadcast index")


@pytest.mark.parametrize("mix", ["numpy_dst", "numpy_src_idx"])
def test_host_and_device_mix_bad_index_leaves_dst(backend, rng, mix):
    # a NumPy dst on a GPU backend is copied over and back: a refused call must not copy back
    src = rng.standard_normal((3, 32)).astype(np.float32)
    idx = np.array([1, 0, 4])
    dst = make_dst("q5_0", (), 4, 32, rng)
    before = dst.copy()
    if mix == "numpy_dst":
        d, s, i = dst, _dev(backend, src), _dev(backend, idx)
    else:
        d, s, i = _dev(backend, dst), src, idx
    with pytest.raises(IndexError, match=r"got 4 at position 2$"):
        sr.set_rows(d, s, i, dst_type="q5_0")
    assert_bytes_equal(_host(backend, d, dst) if mix != "numpy_dst" else d, before, mix)


# ---- the captured-graph error record --------------------------------------------------------


def test_captured_errors_first_call_kept_per_stream(backend, rng, new_stream):
    # two sites with bad indices in one graph: the record keeps the first call's (with its own
    # idx shape and n_rows); another stream's record stays clean; reading clears it; the next
    # replay records it again. Neither dst is written.
    st, other = new_stream(), new_stream()
    sr.prewarm(st)
    sr.prewarm(other)
    a = make_dst("f16", (), 4, 32, rng)
    b = make_dst("q4_0", (), 3, 32, rng)
    da, db = _dev(backend, a, st), _dev(backend, b, st)
    s1 = _dev(backend, rng.standard_normal((2, 32)).astype(np.float32), st)
    i1 = _dev(backend, np.array([0, 9]), st)
    i2 = _dev(backend, np.array([[-4, 1]]), st)
    with graphs.capture(st) as g:
        sr.set_rows(da, s1, i1, stream=st)
        sr.set_rows(db, s1, i2, dst_type="q4_0", stream=st)
    try:
        for rep in range(2):
            g.replay(st)
            sr.check_errors(other)  # nothing recorded on another stream
            with pytest.raises(IndexError, match=r"idx: expected values in \[0, n_rows=4\), got 9 at position 1$"):
                sr.check_errors(st)
            sr.check_errors(st)  # read and cleared
            assert_bytes_equal(_host(backend, da, a, st), a, f"replay {rep}: first dst")
            assert_bytes_equal(_host(backend, db, b, st), b, f"replay {rep}: second dst")
    finally:
        g.release()


def test_capture_on_an_unwarmed_stream(backend, rng, new_stream, launches):
    # GPU backends: the per-stream error record cannot be allocated inside a capture, so the call
    # is refused (CaptureError, nothing launched) and the stream captures normally after prewarm.
    # cpu keeps its record on the host and needs no warming.
    st = new_stream()
    dst = make_dst("f32", (), 4, 32, rng)
    d = _dev(backend, dst, st)
    src = rng.standard_normal((1, 32)).astype(np.float32)
    s, i = _dev(backend, src, st), _dev(backend, np.array([2]), st)
    if backend.is_device:
        with pytest.raises(CaptureError, match=r"set_rows: this stream has no error record yet"):
            with graphs.capture(st):
                sr.set_rows(d, s, i, stream=st)
        assert launches == []
        assert backend.runtime.capture_status(backend.stream(st)).name == "NONE"
        sr.prewarm(st)
    with graphs.capture(st) as g:
        sr.set_rows(d, s, i, stream=st)
    try:
        g.replay(st)
        assert_bytes_equal(_host(backend, d, dst, st), expected(dst, src, np.array([2]), "f32"), "replayed")
        sr.check_errors(st)
    finally:
        g.release()


# ---- ring_write -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["int", "array"])
def test_ring_write_negative_position_wraps(backend, rng, kind):
    ring = make_dst("bf16", (), 5, 32, rng)
    new = rng.standard_normal((2, 32)).astype(np.float32)
    d = _dev(backend, ring)
    pos = -6 if kind == "int" else _dev(backend, np.array([-6], np.int64))
    sr.ring_write(d, _dev(backend, new), pos, dst_type="bf16")  # -6 % 5 = 4: rows 4, 0
    assert_bytes_equal(_host(backend, d, ring), expected(ring, new, np.array([4, 0]), "bf16"), kind)


@pytest.mark.parametrize("kind", ["int", "array"])
def test_ring_write_more_rows_than_the_ring(backend, rng, kind):
    # 5 new rows into 3 from position 1: rows 1, 2, 0, 1, 2; the last written (highest) wins
    ring = make_dst("q4_0", (), 3, 32, rng)
    new = rng.standard_normal((5, 32)).astype(np.float32)
    d = _dev(backend, ring)
    pos = 1 if kind == "int" else _dev(backend, np.array([1], np.int64))
    sr.ring_write(d, _dev(backend, new), pos, dst_type="q4_0", advance=kind == "array")
    want = expected(ring, new[[2, 3, 4]], np.array([0, 1, 2]), "q4_0")
    assert_bytes_equal(_host(backend, d, ring), want, kind)
    if kind == "array":
        assert (backend.to_host(pos) if backend.is_device else pos)[0] == 6


BAD_POSITIONS = [
    ("bool", lambda: True),
    ("float", lambda: 3.0),
    ("str", lambda: "3"),
    ("int32_array", lambda: np.array([3], np.int32)),
    ("two_positions", lambda: np.array([3, 4], np.int64)),
    ("2d_position", lambda: np.array([[3]], np.int64)),
]


@pytest.mark.parametrize("name,make", BAD_POSITIONS, ids=[b[0] for b in BAD_POSITIONS])
def test_ring_write_bad_positions(backend, rng, launches, name, make):
    ring = make_dst("f32", (), 4, 32, rng)
    d = _dev(backend, ring)
    pos = make()
    if isinstance(pos, np.ndarray):
        pos = _dev(backend, pos)
    with pytest.raises(TypeError, match=r"position: expected an int or a 1-element int64"):
        sr.ring_write(d, _dev(backend, rng.standard_normal((1, 32)).astype(np.float32)), pos, advance=True)
    if launches is not None:
        assert launches == []
    assert_bytes_equal(_host(backend, d, ring), ring, name)


def test_ring_write_needs_a_row(backend, rng):
    d = _dev(backend, np.zeros((0, 32), np.float32))
    with pytest.raises(ValueError, match=r"dst: expected at least one row in the ring, got shape \(0, 32\)"):
        sr.ring_write(d, _dev(backend, np.ones((1, 32), np.float32)), 0)


# ---- 64-bit sizes ---------------------------------------------------------------------------


def test_too_many_rows_for_the_winner_buffer_is_refused(backend, launches):
    # the duplicate-winner buffer is int32: 2**31 destination rows (a zero-stride view, no
    # memory) must be refused naming dst before any launch, not wrap. GPU backends only: the
    # reference has no winner buffer. (32-bit overflow of offsets is a real-GPU test:
    # test_set_rows.py::test_rows_past_2_31_elements.)
    if not backend.is_device or backend.name != "sim":
        pytest.skip("cpu-only: (sim) a zero-stride device view: the simulator's arrays are NumPy underneath")
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    base = np.zeros(32, np.float32)
    huge = FakeCUDAArray(np.lib.stride_tricks.as_strided(base, shape=(2**31, 32), strides=(0, 4)))
    with pytest.raises(ValueError, match=r"dst: expected fewer than 2\*\*31 rows in all, got 2147483648 rows"):
        sr.set_rows(huge, _dev(backend, np.ones((2, 32), np.float32)), _dev(backend, np.array([0, 1])))
    assert launches == []
    assert not base.any()
