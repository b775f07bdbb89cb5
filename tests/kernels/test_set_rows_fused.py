"""set_rows' single-launch path and its paired float writes, byte for byte against the reference.

- Single launch: a call whose idx holds at most ``_FUSE_MAX_IDX`` indices is one kernel (every
  block validates all of idx itself); a bad index writes nothing and is reported exactly as the
  three-launch path reports it (eager: IndexError at once; unchecked / captured: the stream's
  sticky record, which ``check_errors`` raises and clears). ``path`` runs the same cases through
  both paths (``_FUSE_MAX_IDX = 0`` forces reset + check + write).
- Paired writes: a float dst whose rows start on whole two-value words (8 bytes for f32, 4 for
  f16 / bf16, same for src) is written a word at a time; odd ne0, a view starting mid-word or a
  row stride that is not a whole number of words falls back to one value per thread. Each case
  asserts which kernel ran (on GPU backends) and compares bytes with the reference (everywhere).
- The 32-bit float converters, compiled by numba for the CPU (the simulator runs them as Python,
  so it cannot see a typing or narrowing mistake), against the reference.

Launches are counted by wrapping ``backend.launch`` (bound repeated-call launches go through it
on ``sim``). The simulator runs every thread in Python: blocks are kept to one warp where the
unrolled loops must be reached (``_VEC_BLOCK`` / ``_FLOAT_BLOCK`` patched down).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample import graphs
from rocsample.binder import Binder
from rocsample.kernels import set_rows as kern
from rocsample.reference import set_rows as ref

from .test_set_rows import assert_bytes_equal, expected, make_dst, run

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

FUSED_VEC = "_set_rows_fused_vec_kernel"


@pytest.fixture
def launches(backend, monkeypatch):
    """Names of the kernels launched through the backend, in order (None on cpu)."""
    if not backend.is_device:
        return None
    ns = backend.kernels(kern.build)
    names = {id(v): k for k, v in vars(ns).items()}
    log: list = []
    orig = backend.launch

    def launch(kernel, grid, block, stream, *args):
        log.append(names.get(id(kernel), repr(kernel)))
        return orig(kernel, grid, block, stream, *args)

    monkeypatch.setattr(backend, "launch", launch)
    return log



@pytest.fixture
def one_warp(monkeypatch):
    # one warp per block: rows of a few words already reach the unrolled loops; three blocks in
    # all, so each block walks many rows (grid-stride) and the simulator validates idx only thrice
    monkeypatch.setattr(sr, "_VEC_BLOCK", 32)
    monkeypatch.setattr(sr, "_FLOAT_BLOCK", 32)
    monkeypatch.setattr(sr, "_QUANT_BLOCK", 32)
    monkeypatch.setattr(sr, "_MAX_GRID", 3)


def _dev(backend, a, st=None):
    return backend.as_array(a, "x", backend.stream(st)) if backend.is_device else a


def _host(backend, d, like, st=None):
    return backend.to_host(d, backend.stream(st)).view(like.dtype) if backend.is_device else d


# ---- one launch -----------------------------------------------------------------------------


@pytest.mark.parametrize("check_bounds", [True, False])
@pytest.mark.parametrize("t", ["f32", "f16", "bf16", "q8_0"])
def test_small_call_is_one_launch(backend, rng, launches, t, check_bounds):
    src = rng.standard_normal((3, 64)).astype(np.float32)
    idx = np.array([4, 0, 2])
    dst = make_dst(t, (), 6, 64, rng)
    got = run(backend, dst, src, idx, t, check_bounds=check_bounds)
    assert_bytes_equal(got, expected(dst, src, idx, t), t)
    if launches is None:
        return
    if t == "q8_0" and check_bounds:
        # an eager checked call to a quantized dst also checks a device src for inf / NaN first
        assert launches == ["_set_rows_reset_kernel", "_set_rows_check_kernel",
                            "_set_rows_finite_kernel", "_set_rows_quant_kernel"]
    else:
        want = "_set_rows_fused_quant_kernel" if t == "q8_0" else FUSED_VEC
        assert launches == [want]


def test_large_idx_is_three_launches(backend, rng, launches, monkeypatch):
    monkeypatch.setattr(sr, "_FUSE_MAX_IDX", 2)
    src = rng.standard_normal((3, 64)).astype(np.float32)
    idx = np.array([4, 0, 2])
    dst = make_dst("f16", (), 6, 64, rng)
    got = run(backend, dst, src, idx, "f16", check_bounds=False)
    assert_bytes_equal(got, expected(dst, src, idx, "f16"), "three launches")
    if launches is not None:
        assert launches == ["_set_rows_reset_kernel", "_set_rows_check_kernel", "_set_rows_vec_kernel"]


@pytest.mark.parametrize("t", ["f16", "q4_0"])
def test_duplicates_and_broadcast_both_paths(backend, rng, path, one_warp, t):
    # idx (1, 2, n) shared by d3 = 2 slices; many duplicates, some beyond one warp of rows, so the
    # duplicate scan of the single-launch path crosses its unrolled trips
    n_src, n_rows, ne0 = 70, 5, 32
    src = rng.standard_normal((2, 2, n_src, ne0)).astype(np.float32)
    idx = rng.integers(0, n_rows, (1, 2, n_src))
    idx[0, 0, -1] = 3  # the last source row wins row 3 of slice b2 = 0
    dst = make_dst(t, (2, 2), n_rows, ne0, rng)
    got = run(backend, dst, src, idx, t, check_bounds=False)
    want = expected(dst, src, idx, t)
    assert_bytes_equal(got, want, f"{t} {path}")
    only = expected(dst[:, :1], src[:, :1, -1:], np.array([3]), t)
    assert_bytes_equal(got[:, 0, 3], only[:, 0, 3], "highest source row wins")


def test_paths_give_identical_bytes(backend, rng, monkeypatch, one_warp):
    src = (rng.standard_normal((2, 3, 6, 64)) * 50).astype(np.float16)
    idx = rng.integers(0, 7, (2, 1, 6)).astype(np.int32)
    outs = []
    for limit in (4096, 0):
        monkeypatch.setattr(sr, "_FUSE_MAX_IDX", limit)
        for t in ("f32", "f16", "bf16", "q4_1"):
            dst = make_dst(t, (2, 3), 7, 64, np.random.default_rng(5))
            outs.append(run(backend, dst, src, idx, t, check_bounds=False))
    for a, b in zip(outs[:4], outs[4:]):
        assert_bytes_equal(a, b, "fused vs three launches")


# ---- bad indices -----------------------------------------------------------------------------


@pytest.mark.parametrize("t", ["f32", "bf16", "q5_1"])
def test_bad_index_writes_nothing_and_names_the_first(backend, rng, path, one_warp, new_stream, t):
    # several bad indices; the first in C order sits in the third unrolled slot of a thread
    # (r = 66 with 32 threads) of slice (0, 1), before slice (1, 0) whose first entry is bad too
    n_src = 70
    idx = rng.integers(0, 4, (2, 2, n_src))
    idx[0, 1, 66] = 9
    idx[0, 1, 69] = -3
    idx[1, 0, 0] = -1
    src = rng.standard_normal((2, 2, n_src, 32)).astype(np.float32)
    dst = make_dst(t, (2, 2), 4, 32, rng)
    before = dst.copy()
    msg = r"idx: expected values in \[0, n_rows=4\), got 9 at position \(0, 1, 66\)"
    st = new_stream()
    if not backend.is_device:
        with pytest.raises(IndexError, match=msg):
            sr.set_rows(dst, src, idx, dst_type=t, stream=st, check_bounds=False)
        assert_bytes_equal(dst, before, "cpu")
        return
    d = _dev(backend, dst, st)
    s, i = _dev(backend, src, st), _dev(backend, idx, st)
    sr.set_rows(d, s, i, dst_type=t, stream=st, check_bounds=False)  # no raise: recorded
    assert_bytes_equal(_host(backend, d, dst, st), before, "unchecked")
    with pytest.raises(IndexError, match=msg):
        sr.check_errors(st)
    sr.check_errors(st)  # read and cleared
    with pytest.raises(IndexError, match=msg):  # eager checked: raised at once, nothing recorded
        sr.set_rows(d, s, i, dst_type=t, stream=st)
    assert_bytes_equal(_host(backend, d, dst, st), before, "checked")
    sr.check_errors(st)


def test_first_error_stays_until_read(backend, rng, new_stream):
    if not backend.is_device:
        pytest.skip("the sticky record is a GPU-backend device record")
    st = new_stream()
    dst = _dev(backend, np.zeros((4, 32), np.float32), st)
    src = _dev(backend, rng.standard_normal((2, 32)).astype(np.float32), st)
    good = _dev(backend, np.array([1, 2]), st)
    sr.set_rows(dst, src, _dev(backend, np.array([0, 7]), st), stream=st, check_bounds=False)
    sr.set_rows(dst, src, _dev(backend, np.array([3, -5]), st), stream=st, check_bounds=False)
    sr.set_rows(dst, src, good, stream=st, check_bounds=False)  # a good call clears nothing
    with pytest.raises(IndexError, match=r"got 7 at position 1$"):
        sr.check_errors(st)
    sr.check_errors(st)
    sr.set_rows(dst, src, _dev(backend, np.array([3, -5]), st), stream=st, check_bounds=False)
    with pytest.raises(IndexError, match=r"got -5 at position 1$"):
        sr.check_errors(st)


def test_captured_call_is_one_launch(backend, rng, launches, new_stream):
    if not backend.is_device:
        pytest.skip("capture of device launches")
    st = new_stream()
    sr.prewarm(st)
    ring = rng.standard_normal((6, 64)).astype(np.float32).astype(np.float16)
    d = _dev(backend, ring, st)
    s = _dev(backend, np.zeros((1, 64), np.float32), st)
    i = _dev(backend, np.zeros(1, np.int64), st)
    with graphs.capture(st) as g:
        sr.set_rows(d, s, i, stream=st)
    try:
        assert launches == [FUSED_VEC]
        want = ring.copy()
        for step, row in enumerate([3, 5, 0]):
            new = rng.standard_normal((1, 64)).astype(np.float32)
            graphs.copy_to_device(s, new, st)
            graphs.copy_to_device(i, np.array([row], np.int64), st)
            g.replay(st)
            ref.set_rows(want, new, np.array([row]))
            assert_bytes_equal(_host(backend, d, ring, st), want, f"replay {step}")
        sr.check_errors(st)
        graphs.copy_to_device(i, np.array([6], np.int64), st)
        g.replay(st)
        assert_bytes_equal(_host(backend, d, ring, st), want, "bad replay")
        with pytest.raises(IndexError, match=r"got 6 at position 0"):
            sr.check_errors(st)
    finally:
        g.release()


def test_repeated_unchecked_calls_reuse_one_bound_launch(backend, rng, launches, monkeypatch, new_stream):
    if not backend.is_device:
        pytest.skip("the repeated-call path is for GPU backends")
    monkeypatch.setattr(sr, "_FAST_ON_SIM", True)
    monkeypatch.setattr(sr, "_binder", Binder(entries=16, execs=64))
    st = new_stream()
    host = np.zeros((5, 64), np.uint16)
    d = _dev(backend, host, st)
    s = _dev(backend, np.zeros((2, 64), np.float32), st)
    i = _dev(backend, np.array([1, 3]), st)
    want = host.copy()
    for step in range(4):
        new = rng.standard_normal((2, 64)).astype(np.float32)
        rows = np.array([step % 5, (step + 2) % 5])
        graphs.copy_to_device(s, new, st)
        graphs.copy_to_device(i, rows, st)
        del launches[:]
        sr.set_rows(d, s, i, dst_type="bf16", stream=st, check_bounds=False)
        # bound from the third call on: on a GPU it bypasses backend.launch (cuLaunchKernel)
        assert launches == ([FUSED_VEC] if step < 2 or backend.name == "sim" else []), step
        ref.set_rows(want, new, rows, dst_type="bf16")
        assert_bytes_equal(_host(backend, d, host, st), want, f"step {step}")
    (call,) = sr._binder._table.values()
    assert call.scratch == () and len(call.launches) == 1  # bound once, holding no scratch
    if backend.name == "sim":
        # another object for the same stream (as torch.cuda.current_stream() makes every call)
        # still hits; the same handle on another device is another key (and refused: the arrays
        # live on this device)
        same = type(st)(st.handle, st.device)
        del launches[:]
        sr.set_rows(d, s, i, dst_type="bf16", stream=same, check_bounds=False)
        assert launches == [FUSED_VEC] and len(sr._binder) == 1
        with pytest.raises(ValueError, match="stream: expected a stream on device"):
            sr.set_rows(d, s, i, dst_type="bf16", stream=type(st)(st.handle, 1 - st.device),
                        check_bounds=False)
    # fresh arrays of the same layout: the same bound launch, re-pointed at them
    new = rng.standard_normal((2, 64)).astype(np.float32)
    s2, i2 = _dev(backend, new, st), _dev(backend, np.array([4, 0]), st)
    sr.set_rows(d, s2, i2, dst_type="bf16", stream=st, check_bounds=False)
    ref.set_rows(want, new, np.array([4, 0]), dst_type="bf16")
    assert_bytes_equal(_host(backend, d, host, st), want, "fresh arrays")
    assert len(sr._binder) == 1
    graphs.copy_to_device(i, np.array([2, 5]), st)
    sr.set_rows(d, s, i, dst_type="bf16", stream=st, check_bounds=False)
    assert_bytes_equal(_host(backend, d, host, st), want, "bad index through the bound launch")
    with pytest.raises(IndexError, match=r"got 5 at position 1"):
        sr.check_errors(st)


@pytest.mark.parametrize("t", ["q8_0", "q5_0", "f32", "f16"])
def test_bound_word_kernels_follow_fresh_arrays(backend, rng, monkeypatch, new_stream, t):
    # the word quant kernels and the tiled vec kernel address flat views made from dst and src
    # (uint32 / uint16 / uint64 words): a bound launch must re-point those at each call's fresh
    # arrays too (3 blocks per row: the quant chunk's halfword tail as well)
    if not backend.is_device:
        pytest.skip("the repeated-call path is for GPU backends")
    monkeypatch.setattr(sr, "_FAST_ON_SIM", True)
    monkeypatch.setattr(sr, "_binder", Binder(entries=16, execs=64))
    st = new_stream()
    ne0 = 96
    for step in range(4):
        dst = make_dst(t, (), 5, ne0, rng)
        src = rng.standard_normal((2, ne0)).astype(np.float32)
        idx = np.array([step % 5, (step + 3) % 5])
        d = _dev(backend, dst, st)
        sr.set_rows(d, _dev(backend, src, st), _dev(backend, idx, st), dst_type=t, stream=st,
                    check_bounds=False)
        assert_bytes_equal(_host(backend, d, dst, st), expected(dst, src, idx, t), f"{t} step {step}")
    assert len(sr._binder) == 1


def test_ring_write_device_position_single_set_rows_launch(backend, rng, launches):
    if not backend.is_device:
        pytest.skip("device positions are for GPU backends")
    ring = np.zeros((4, 32), np.float32)
    d = _dev(backend, ring)
    pos = _dev(backend, np.array([3], np.int64))
    rows = rng.standard_normal((2, 32)).astype(np.float32)
    sr.ring_write(d, _dev(backend, rows), pos, advance=True)
    assert launches == ["_ring_index_kernel", FUSED_VEC]
    got = backend.to_host(d)
    assert_bytes_equal(got[[3, 0]], rows, "ring rows")


# ---- paired (two values per word) float writes ------------------------------------------------


def _kernel_used(launches):
    return [k for k in launches if "float" in k or "vec" in k]


@pytest.mark.parametrize("ne0", [2, 40, 226, 33])
@pytest.mark.parametrize("src_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("t", ["f32", "f16", "bf16"])
def test_paired_writes_match_reference(backend, rng, launches, path, one_warp, t, src_dtype, ne0):
    # 226 values = 113 words: three unrolled trips of four words per thread plus a remainder
    src = (rng.standard_normal((3, ne0)) * 30).astype(src_dtype)
    idx = np.array([2, 0, 3])
    dst = make_dst(t, (), 4, ne0, rng)
    got = run(backend, dst, src, idx, t, check_bounds=False)
    assert_bytes_equal(got, expected(dst, src, idx, t), f"{t} ne0={ne0}")
    if launches is not None:
        paired = "vec" if ne0 % 2 == 0 else "float"
        assert paired in _kernel_used(launches)[0], launches


@pytest.mark.parametrize("src_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("t", ["f32", "f16", "bf16"])
def test_rows_split_in_tiles(backend, rng, launches, one_warp, t, src_dtype):
    # 520 values = 260 words: with 32 threads, tiles of 128 words give three parts per row, the
    # last of 4 words; 2 x 3 source rows with a duplicate and broadcast idx make 18 tiles over 3
    # blocks, so a block walks tiles of the same row and rows of other (b3, b2) slices
    ne0 = 520
    src = (rng.standard_normal((2, 3, ne0)) * 30).astype(src_dtype)
    idx = np.array([[4, 1, 4]])  # broadcast over d3 = 2; source row 2 wins row 4
    dst = make_dst(t, (2,), 5, ne0, rng)
    for cb in (True, False):
        got = run(backend, dst, src, idx, t, check_bounds=cb)
        assert_bytes_equal(got, expected(dst, src, idx, t), f"{t} tiles, check_bounds={cb}")
    if launches is not None:
        assert _kernel_used(launches)[-1] == FUSED_VEC, launches


def _special_bits():
    f32 = np.array([0x7F800001, 0xFFC00000, 0x7FBFE000, 0x7F800000, 0xFF800000, 0x3F808000,
                    0x3F818000, 0x33000001, 0x33000000, 0x38800000, 0x387FF000, 0x477FF000,
                    0x477FEFFF, 0x00000001, 0x80000000, 0x7FFFFFFF, 0x3F7FFFFF, 0x387FC000],
                   np.uint32).view(np.float32)
    f16 = np.array([0x0001, 0x03FF, 0x8200, 0x7C00, 0xFC00, 0x7C01, 0xFE00, 0x7E55, 0x3C00,
                    0x0400, 0x8001, 0x7BFF, 0x0000, 0x8000, 0x1234, 0xABCD, 0x0155, 0x7FFF],
                   np.uint16).view(np.float16)
    return f32, f16


@pytest.mark.parametrize("src_kind", ["f32", "f16"])
def test_paired_writes_of_special_values(backend, launches, src_kind):
    # NaN payloads, infinities, rounding ties, half subnormals: each half of a word converted alone
    f32, f16 = _special_bits()
    vals = f32 if src_kind == "f32" else f16
    src = np.stack([vals, vals[::-1]])
    for t in ("f32", "f16", "bf16"):
        dst = make_dst(t, (), 3, src.shape[1], np.random.default_rng(1))
        idx = np.array([2, 0])
        assert_bytes_equal(run(backend, dst, src, idx, t), expected(dst, src, idx, t), f"{src_kind}->{t}")
    if launches is not None:
        assert set(launches) == {FUSED_VEC}


# (case, dst type) -> which kernel must run: a view whose rows start mid-word, or whose row
# stride is not a whole number of words, falls back to one value per thread
VIEW_CASES = [
    ("aligned_view", "f16", "vec"),  # columns 2.. of rows of 70 halves: 4-byte starts, 140-byte rows
    ("dst_col1", "f16", "float"),  # starts 2 bytes into a word
    ("dst_col1", "f32", "float"),  # starts 4 bytes into an 8-byte word
    ("dst_odd_rows", "bf16", "float"),  # rows of 67 halves: 134-byte stride
    ("src_col1", "f16", "float"),  # src starts 4 bytes into an 8-byte word
    ("src_strided_cols", "f32", "float"),  # every other src column
    ("four_d", "f32", "vec"),  # strides on every row axis, in whole words
]


@pytest.mark.parametrize("case,t,kind", VIEW_CASES)
def test_views_pick_the_right_kernel(backend, rng, launches, path, one_warp, case, t, kind):
    ne0 = 64
    lead = (2, 3) if case == "four_d" else ()
    width = {"aligned_view": 70, "dst_odd_rows": 67, "dst_col1": 66, "four_d": 72}.get(case, ne0)
    col = {"aligned_view": 2, "dst_col1": 1, "four_d": 4}.get(case, 0)
    big = make_dst(t, lead, 5, width, rng)
    src_big = rng.standard_normal((*lead, 3, 2 * ne0 + 2)).astype(np.float32)
    if case == "src_col1":
        src_sel = (Ellipsis, slice(1, 1 + ne0))
    elif case == "src_strided_cols":
        src_sel = (Ellipsis, slice(0, 2 * ne0, 2))
    else:
        src_sel = (Ellipsis, slice(0, ne0))
    idx = np.array([4, 1, 3])
    if case == "four_d":
        idx = np.stack([np.stack([rng.permutation(5)[:3] for _ in range(3)]) for _ in range(2)])
    dsel = (slice(col, col + ne0),)
    want = big.copy()
    ref.set_rows(want[..., col:col + ne0], np.ascontiguousarray(src_big[src_sel]), idx, dst_type=t)
    if backend.is_device:
        d_big = backend.as_array(big, "dst")
        lead_all = tuple([slice(None)] * (d_big.ndim - 1))  # numba device arrays take no Ellipsis
        d_src_big = backend.as_array(src_big, "src")
        s_view = d_src_big[lead_all + src_sel[1:]]
        sr.set_rows(d_big[lead_all + dsel], s_view, backend.as_array(idx, "idx"), dst_type=t,
                    check_bounds=False)
        got = backend.to_host(d_big).view(big.dtype)
        assert kind in _kernel_used(launches)[0], (case, launches)
    else:
        got = big.copy()
        sr.set_rows(got[..., col:col + ne0], src_big[src_sel], idx, dst_type=t, check_bounds=False)
    assert_bytes_equal(got, want, case)


# ---- the device converters, compiled (the simulator runs them as Python) ---------------------


def test_converters_compiled_match_reference():
    # rocsample.kernels.quant's converters compiled by numba for the CPU: the same typing and
    # LLVM narrowing as on a GPU (the uint32 casts must keep every intermediate exact), against
    # the NumPy reference on every half, random floats and dense runs around each rounding edge.
    # (Exhaustively over all 2**32 inputs they were checked equal to the former int64 versions.)
    numba = pytest.importorskip("numba")
    from rocsample.kernels import quant
    from rocsample.reference import quant as R

    class CpuCuda:  # just enough of the CUDA dialect for the integer converters
        @staticmethod
        def jit(*a, **k):
            return numba.njit(a[0]) if a and callable(a[0]) else numba.njit

    q = quant.build(CpuCuda)
    f16, bf16, h2f, conv = q.f32_bits_to_f16, q.f32_bits_to_bf16, q.f16_to_f32_bits, q.convert_bits

    @numba.njit
    def apply(u, o16, obf, osc, oc1, oc2, oc0):
        for i in range(u.size):
            o16[i] = f16(u[i], False)
            osc[i] = f16(u[i], True)
            obf[i] = bf16(u[i])
            oc1[i] = conv(u[i], 1)
            oc2[i] = conv(u[i], 2)
            oc0[i] = conv(u[i], 0)

    @numba.njit
    def halves(out):
        for i in range(65536):
            out[i] = h2f(np.uint16(i))

    rng = np.random.default_rng(0)
    edges = [0x33000000, 0x38800000, 0x477FF000, 0x7F800000]
    u = np.concatenate([rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32)]
                       + [np.arange(e - 4096, e + 4096, dtype=np.uint32) for e in edges]
                       + [np.arange(e - 4096, e + 4096, dtype=np.uint32) | np.uint32(0x80000000) for e in edges]
                       + [np.arange(0x33000000, 0x38800000, 4099, dtype=np.uint32)])
    o16, obf, osc, oc1, oc2, oc0 = outs = [np.zeros(u.size, np.uint32) for _ in range(6)]
    apply(u, *outs)
    x = u.view(np.float32)
    assert np.array_equal(o16, R.fp32_to_fp16_bits(x))
    assert np.array_equal(osc, R.fp32_to_fp16_scale_bits(x))
    assert np.array_equal(obf, R.fp32_to_bf16_bits(x))
    assert np.array_equal(oc1, o16) and np.array_equal(oc2, obf) and np.array_equal(oc0, u)
    h = np.zeros(65536, np.uint32)
    halves(h)
    assert np.array_equal(h, R.fp16_bits_to_fp32(np.arange(65536, dtype=np.uint16)).view(np.uint32))
