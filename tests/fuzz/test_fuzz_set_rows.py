"""Property-based fuzzing of set_rows, ring_write and check_errors (SPEC §3), bit for bit.

Every destination type, 2-D to 4-D shapes with broadcast indices, int32 / int64 indices with
duplicates, float32 / float16 sources with NaN / inf / huge / tiny blocks, host or device
placement of each array, checked and unchecked calls, a stream or none; about a third of the
cases carry one bad argument (an index out of range, a wrong width, dtype, broadcast, ...).
A call is judged as ``set_rows(...)`` followed by ``check_errors(stream)``: an unchecked call's
bad index surfaces there on device backends and at once on cpu (SEMANTICS.md), the same
``IndexError`` either way.
"""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rocsample
from rocsample.reference import set_rows as ref
from rocsample.reference.quant import BLOCK_BYTES

from . import harness as H

sr = importlib.import_module("rocsample.set_rows")  # the module (rocsample.set_rows is the function)

LIM = H.limits()
TYPES = ["f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl"]
TARGETS = [None, "idx_value", "src_nonfinite", "ne0", "dst_width", "idx_len", "broadcast",
           "dst_dtype", "src_dtype", "idx_dtype", "dst_type", "lead", "not_array"]


def _storage(t: str) -> np.dtype:
    return {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}.get(t, np.uint8)


def _width(t: str, ne0: int) -> int:
    return ne0 // 32 * BLOCK_BYTES[t] if t in BLOCK_BYTES else ne0


@dataclasses.dataclass
class RowsCase:
    dst: np.ndarray  # initial contents (host)
    src: np.ndarray
    idx: object  # np.ndarray, or a list for the "not_array" target
    dst_type: str | None
    t: str  # the resolved destination type
    where: dict  # "dst" / "src" / "idx" -> "host" or "device"
    check_bounds: bool
    stream: bool  # a new stream (else None)
    target: str | None
    bad: set
    three: bool = False  # the separate-check launch plan (idx > 4096 indices) forced on a device
    views: tuple = ()  # arrays passed as strided views of larger ones ("dst", "src", "idx")
    special: str | None = None  # "overlap" (src is a view of dst) or "readonly" (dst not writable)

    def __repr__(self) -> str:
        d = {k: getattr(self, k) for k in ("dst_type", "t", "where", "check_bounds", "stream",
                                           "target", "bad", "three", "views", "special")}
        idx = self.idx if not isinstance(self.idx, np.ndarray) else \
            f"{self.idx.dtype}{list(self.idx.shape)}={self.idx.ravel()[:12].tolist()}"
        return (f"RowsCase(dst {self.dst.dtype}{list(self.dst.shape)}, src {self.src.dtype}"
                f"{list(self.src.shape)} nonfinite={int((~np.isfinite(self.src)).sum())}, idx {idx}, {d})")


def _divisors(n: int) -> list:
    return [k for k in range(1, n + 1) if n % k == 0]


def _drop_leading(draw, shape: tuple, keep: int) -> tuple:
    """Drop some leading length-1 axes (fewer leading axes are allowed), keeping >= ``keep``."""
    while len(shape) > keep and shape[0] == 1 and draw(st.booleans()):
        shape = shape[1:]
    return shape


@st.composite
def src_values(draw, shape, dtype):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "normal", "wide", "zeros", "tiny", "huge", "mixed",
                                 "ints", "halfway", "nan_payloads"]))
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "wide":
        x *= np.float32(1e4)
    elif kind == "zeros":
        x[...] = 0
        if x.size and draw(st.booleans()):
            x.reshape(-1)[0] = -0.0
    elif kind == "tiny":
        x *= np.float32(1e-16)
    elif kind == "huge":
        x *= np.float32(1e37)
    elif kind == "mixed":
        m = rng.integers(0, 5, shape)
        x[m == 0] *= np.float32(1e-20)
        x[m == 1] *= np.float32(1e20)
    elif kind == "ints":
        x = np.round(x * 8).astype(np.float32)
    elif kind == "halfway":  # values on rounding edges of the quantizers
        x = (np.round(x * 16) / 16 + np.float32(1 / 32)).astype(np.float32)
    elif kind == "nan_payloads" and x.size:  # NaNs with payloads, +-inf (float dst types keep them)
        with np.errstate(over="ignore"):
            x = x.astype(dtype)
        bits = x.view(np.uint16 if x.dtype == np.float16 else np.uint32).reshape(-1)
        exp = np.uint16(0x7C00) if x.dtype == np.float16 else np.uint32(0x7F800000)
        pay = rng.integers(0, 2**10 if x.dtype == np.float16 else 2**23, bits.size).astype(bits.dtype)
        m = rng.integers(0, 3, bits.size)
        sign = (rng.integers(0, 2, bits.size).astype(bits.dtype) << np.uint32(15 if x.dtype == np.float16 else 31)).astype(bits.dtype)
        bits[m == 1] = (sign | exp | np.maximum(pay, 1).astype(bits.dtype))[m == 1]  # NaN, payload
        bits[m == 2] = (sign | exp)[m == 2]  # +-inf
        return x
    with np.errstate(over="ignore"):
        return x.astype(dtype)


@st.composite
def rows_cases(draw, target=None):
    t = draw(st.sampled_from(TYPES))
    quant = t in BLOCK_BYTES
    ne0 = 32 * draw(st.integers(1, LIM.ne0_blocks)) if quant else draw(st.integers(1, LIM.ne0_float))
    d3, d2 = draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([1, 1, 2, 3]))
    n_rows = draw(st.integers(1, LIM.set_rows))
    n_src = draw(st.integers(0 if target is None else 1, LIM.n_src))
    i3, i2 = draw(st.sampled_from(_divisors(d3))), draw(st.sampled_from(_divisors(d2)))
    src_dt = draw(st.sampled_from([np.float32, np.float16]))
    src_shape = _drop_leading(draw, (d3, d2, n_src, ne0), 1 if n_src == 1 else 2)
    src = draw(src_values(src_shape, src_dt))
    idx_dt = draw(st.sampled_from([np.int32, np.int64]))
    idx_shape = _drop_leading(draw, (i3, i2, n_src), 1)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    idx = rng.integers(0, n_rows, idx_shape).astype(idx_dt)
    W = _width(t, ne0)
    dst_shape = _drop_leading(draw, (d3, d2, n_rows, W), 2)
    dst = rng.integers(0, 256, int(np.prod(dst_shape)) * np.dtype(_storage(t)).itemsize,
                       dtype=np.uint8).view(_storage(t)).reshape(dst_shape)
    dst_type = t if quant or draw(st.booleans()) else None
    if t == "bf16" and dst_type is None:
        dst_type = "bf16"  # uint16 storage says nothing about bf16 by itself
    where = {k: draw(st.sampled_from(["host", "device", "device"])) for k in ("dst", "src", "idx")}
    bad: set = set()
    if target == "idx_value":
        pos = draw(st.integers(0, idx.size - 1))
        idx.reshape(-1)[pos] = draw(st.sampled_from([-1, n_rows, n_rows + 7, -(2**31)]))
        bad = {"idx"}
    elif target == "src_nonfinite":
        if not quant:
            t, dst_type = "q8_0", "q8_0"  # non-finite values are refused for block types only
            ne0 = 32
            W = 34
            src = draw(src_values(src_shape[:-1] + (32,), src_dt))
            dst = rng.integers(0, 256, (*dst_shape[:-1], W), dtype=np.uint8)
        pos = draw(st.integers(0, src.size - 1))
        src.reshape(-1)[pos] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        bad = {"src"}
    elif target == "ne0":
        if not quant:
            t, dst_type = "q4_0", "q4_0"
        src = draw(src_values(src_shape[:-1] + (draw(st.sampled_from([1, 31, 33, 48])),), src_dt))
        dst = rng.integers(0, 256, (*dst_shape[:-1], 18 * 2), dtype=np.uint8).view(_storage(t))
        bad = {"src", "dst"}
    elif target == "dst_width":
        dst = np.zeros((*dst_shape[:-1], W + draw(st.sampled_from([-1, 1, 32]))), _storage(t)) \
            if W > 1 else np.zeros((*dst_shape[:-1], 2), _storage(t))
        bad = {"dst"}
    elif target == "idx_len":
        idx = rng.integers(0, n_rows, (*idx_shape[:-1], n_src + 1)).astype(idx_dt)
        bad = {"idx"}
    elif target == "broadcast":
        if d2 in (2, 3):
            idx = rng.integers(0, n_rows, (i3, d2 + 1 if d2 == 2 else 2, n_src)).astype(idx_dt)
        else:
            idx = rng.integers(0, n_rows, (2, 1, n_src)).astype(idx_dt)
            if d3 == 2:
                idx = rng.integers(0, n_rows, (3, i2, n_src)).astype(idx_dt)
        bad = {"idx"}
    elif target == "dst_dtype":
        with np.errstate(invalid="ignore"):
            dst = dst.astype({np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float32,
                              np.dtype(np.uint16): np.int32}[dst.dtype]) \
                if dst.dtype != np.uint8 else dst.view(np.int8)
        bad = {"dst", "dst_type"}
        if dst_type is None:
            dst_type = t if t != "f32" else None
    elif target == "src_dtype":
        with np.errstate(invalid="ignore"):
            src = src.astype(draw(st.sampled_from([np.float64, np.int32])))
        bad = {"src"}
    elif target == "idx_dtype":
        idx = idx.astype(draw(st.sampled_from([np.float64, np.uint32, np.int16])))
        bad = {"idx"}
    elif target == "dst_type":
        dst_type = draw(st.sampled_from(["q8", "Q4_X", "f64", 3]))
        bad = {"dst_type"}
    elif target == "lead":
        dst = np.zeros((d3 + 1, d2, n_rows, W), _storage(t))
        bad = {"dst"}
    elif target == "not_array":
        which = draw(st.sampled_from(["idx", "src"]))
        if which == "idx":
            idx = idx.tolist()
        else:
            src = src.tolist()
            where["src"] = "host"
        where[which] = "host"
        bad = {which}
    check_bounds = draw(st.booleans())
    if t in BLOCK_BYTES and target != "idx_value" and isinstance(src, np.ndarray) \
            and src.dtype.kind == "f" and not np.isfinite(src).all():
        bad = bad | {"src"}  # a float16 overflow made inf: refused for a block type
    views: tuple = ()
    if target is None and draw(st.integers(0, 2)) == 0:  # SPEC §3: strided views accepted
        views = tuple(k for k in ("dst", "src", "idx") if draw(st.booleans()))
    special = None
    if target is None and t == "f32" and src_dt == np.float32 \
            and 1 <= n_src <= dst.shape[-2] and draw(st.integers(0, 7)) == 0:
        special, bad = "overlap", {"src", "dst"}  # SPEC §3: refused with a named error
    elif target is None and n_src and draw(st.integers(0, 7)) == 0:
        special, bad = "readonly", {"dst"}
        where["dst"] = "host"
    return RowsCase(dst, src, idx, dst_type, t, where, check_bounds, draw(st.booleans()),
                    target, bad, draw(st.integers(0, 3)) == 0, views, special)


def _place(be, case, name, value, st_):
    """The argument as the call gets it: host or device, and as a strided view of a larger array
    (every other row, inside a wider row) when the case says so."""
    if not isinstance(value, np.ndarray):
        return value
    # (an empty array is placed as it is: numba cannot slice a zero-size device array, whose
    # pointer is NULL: "non-empty slice into empty slice")
    if name not in case.views or value.ndim == 0 or value.size == 0:
        return H.place(be, value, case.where[name], name, st_)
    if value.ndim == 1:  # idx: every other element
        big = np.zeros(2 * value.shape[0], value.dtype)
        big[::2] = value
        return H.place(be, big, case.where[name], name, st_)[::2]
    # every other row, each inside a wider row: a row stride on two axes
    big = np.zeros(value.shape[:-2] + (2 * value.shape[-2], value.shape[-1] + 3), value.dtype)
    # explicit slices, no Ellipsis: numba's device-array slicing fails on `...` with a
    # zero-length axis (seen on the H200: TypeError in numba.cuda.cudadrv.dummyarray)
    view = (slice(None),) * (value.ndim - 2) + (slice(None, None, 2), slice(0, value.shape[-1]))
    big[view] = value
    return H.place(be, big, case.where[name], name, st_)[view]


def _overlap_view(case: RowsCase) -> tuple:
    """The "overlap" case's src, as a view of dst: its first len(idx[-1]) rows on every leading
    axis. Explicit slices, no Ellipsis: numba's device arrays fail on ``dst[..., :k, :]`` of a
    4-D array (seen on the H200 in the twenty-third session's gate: TypeError in
    numba.cuda.cudadrv.dummyarray; tests/regress/test_fuzz_overlap_view_sliced_with_ellipsis.py)."""
    nd = np.asarray(case.dst).ndim
    return (slice(None),) * (nd - 2) + (slice(0, np.asarray(case.idx).shape[-1]), slice(None))


def _run_rows(be, case: RowsCase):
    s = be.runtime.new_stream() if case.stream else None
    dst = _place(be, case, "dst", case.dst, s)
    src = _place(be, case, "src", case.src, s)
    idx = _place(be, case, "idx", case.idx, s)
    if case.special == "overlap":  # src: rows of dst itself (same dtype and width)
        src = dst[_overlap_view(case)]
    elif case.special == "readonly":
        dst.flags.writeable = False
    state = {"dst": dst, "s": s, "before": H.host_of(be, dst, s)}

    def call():
        fuse = sr._FUSE_MAX_IDX
        if case.three:  # as tests/kernels/conftest.py's "three" path: reset, check, write kernels
            sr._FUSE_MAX_IDX = 0
        try:
            res = rocsample.set_rows(dst, src, idx, dst_type=case.dst_type, stream=s,
                                     check_bounds=case.check_bounds)
        finally:
            sr._FUSE_MAX_IDX = fuse
        try:
            rocsample.check_errors(s)
        finally:
            state["after"] = H.host_of(be, dst, s)
        return {"dst": state["after"], "_same_object": res is dst}

    return call, state


def _expected(case: RowsCase):
    want = np.array(case.dst, copy=True)
    H.quiet(ref.set_rows)(want, np.asarray(case.src), np.asarray(case.idx), dst_type=case.dst_type)
    return want


def _unchecked_nonfinite_device(be, case) -> bool:
    """SEMANTICS: a device src with non-finite values to a block type is not read for them in an
    unchecked call; the bytes are ggml's x86-defined ones (no reference here), no error."""
    return (be.is_device and case.t in BLOCK_BYTES and case.where["src"] == "device"
            and not case.check_bounds and isinstance(case.src, np.ndarray)
            and case.src.dtype in (np.float32, np.float16) and case.target in (None, "src_nonfinite")
            and not np.isfinite(case.src).all())


def _bad_index_message(case: RowsCase) -> str | None:
    idx = np.asarray(case.idx)
    n_rows = case.dst.shape[-2]
    flat = idx.reshape(-1)
    badpos = np.flatnonzero((flat < 0) | (flat >= n_rows))
    if not badpos.size:
        return None
    p = badpos[0]
    where = np.unravel_index(p, idx.shape)
    where = str(int(where[0])) if len(where) == 1 else str(tuple(int(w) for w in where))
    return f"idx: expected values in [0, n_rows={n_rows}), got {int(flat[p])} at position {where}"


def _judge_rows(be, case: RowsCase, out, state):
    untouched = {}
    if not out.ok and "after" in state:
        untouched["dst"] = (state["before"], state["after"])
    nonfinite_dev = be.is_device and case.where["src"] == "device" and "src" in case.bad
    H.check_hygiene(out, case, untouched, launch_first=nonfinite_dev)
    if _unchecked_nonfinite_device(be, case) and case.bad <= {"src"}:
        if not out.ok:
            H.fail(f"an unchecked device-src call with non-finite values raised {out.brief()} "
                   "(SEMANTICS: it writes ggml's bytes)", case)
        return
    if case.bad:
        H.check_named_refusal(out, case.bad, case)
        if case.target == "idx_value":
            want = _bad_index_message(case)
            if not isinstance(out.error, IndexError) or str(out.error) != want:
                H.fail(f"want IndexError({want!r}), got {out.brief()}", case)
        return
    if not out.ok:
        H.fail(f"a valid call raised {out.brief()}", case)
    if not out.values.pop("_same_object"):
        H.fail("set_rows did not return dst itself", case)
    want = _expected(case)
    got = out.values["dst"]
    if not np.array_equal(np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)):
        g = np.ascontiguousarray(got).view(np.uint8).reshape(-1, got.shape[-1] * got.itemsize)
        w = np.ascontiguousarray(want).view(np.uint8).reshape(g.shape)
        rows = np.flatnonzero((g != w).any(axis=1))
        r = rows[0]
        cols = np.flatnonzero(g[r] != w[r])[:8]
        H.fail(f"{be.name}: dst rows (flattened) {rows[:8].tolist()} differ from the reference; "
               f"row {r} bytes {cols.tolist()}: got {g[r, cols].tolist()}, want {w[r, cols].tolist()}",
               case)


def _twin_rows(a, b):
    if not np.array_equal(np.ascontiguousarray(a["dst"]).view(np.uint8),
                          np.ascontiguousarray(b["dst"]).view(np.uint8)):
        return "dst bytes differ"
    return None


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"bad-{t}" if t else "valid")
def test_fuzz_set_rows(backend, target):
    n = H.examples("set_rows")
    budget = n if target is None else max(3, n // 10)

    @H.fuzz_settings("set_rows", max_examples=budget)
    @given(case=rows_cases(target))
    def check(case):
        call, state = _run_rows(backend, case)
        out = H.run(call, backend)
        H.log("set_rows", f"{case.t} bad={target}", out)
        _judge_rows(backend, case, out, state)
        if H.twin_enabled(backend) and not _unchecked_nonfinite_device(backend, case):
            with H.on_backend("cpu") as cpu:
                ccall, _ = _run_rows(cpu, case)
                cout = H.run(ccall, cpu)
            H.check_twins(out, cout, case, _twin_rows)

    check()


# ---- ring_write ----------------------------------------------------------------------------
@st.composite
def ring_cases(draw):
    t = draw(st.sampled_from(TYPES))
    quant = t in BLOCK_BYTES
    ne0 = 32 * draw(st.integers(1, LIM.ne0_blocks)) if quant else draw(st.integers(1, LIM.ne0_float))
    d3, d2 = draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([1, 1, 2]))
    n_ring = draw(st.integers(1, LIM.set_rows))
    n = draw(st.integers(0, min(LIM.n_src, 2 * n_ring + 1)))
    src = draw(src_values(_drop_leading(draw, (d3, d2, n, ne0), 2), np.float32))
    if quant:  # non-finite values to a block type are set_rows' test; here the rows are
        src = np.where(np.isfinite(src), src, np.float32(1))
    W = _width(t, ne0)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dst_shape = _drop_leading(draw, (d3, d2, n_ring, W), 2)
    dst = rng.integers(0, 256, int(np.prod(dst_shape)) * np.dtype(_storage(t)).itemsize,
                       dtype=np.uint8).view(_storage(t)).reshape(dst_shape)
    I64 = 2**63
    pos = draw(st.one_of(st.integers(-3 * n_ring, 4 * n_ring), st.integers(-(2**70), 2**70),
                         st.integers(I64 - 3 * n_ring - 2, I64 + 2), st.integers(-I64 - 2, -I64 + 3)))
    form = draw(st.sampled_from(["int", "int", "numpy", "device", "bad"]))
    if form != "int":  # an int64 array holds an int64 value
        pos = min(max(pos, -I64), I64 - 1)
    bad_kind = draw(st.sampled_from(["float", "int32_dev", "shape", "bool"])) if form == "bad" else None
    return dict(t=t, dst=dst, src=src, pos=pos, form=form, bad_kind=bad_kind,
                advance=draw(st.booleans()), where_dst=draw(st.sampled_from(["host", "device"])),
                check_bounds=draw(st.booleans()))


def _run_ring(be, c):
    s = be.runtime.new_stream()
    dst = H.place(be, c["dst"], c["where_dst"], "dst", s)
    src = H.place(be, c["src"], "device", "src", s)
    p = c["pos"]
    if c["form"] == "int":
        position = p
    elif c["form"] == "numpy":
        position = np.array([p], np.int64)
    elif c["form"] == "device":
        position = H.place(be, np.array([p], np.int64), "device", "position", s)
    elif c["bad_kind"] == "float":
        position = float(p)
    elif c["bad_kind"] == "bool":
        position = True
    elif c["bad_kind"] == "int32_dev":
        position = H.place(be, np.array([p % 2**31], np.int32), "device", "position", s)
    else:
        position = H.place(be, np.array([p, p], np.int64), "device", "position", s)

    def call():
        dt = None if c["t"] in ("f32", "f16") else c["t"]
        rocsample.ring_write(dst, src, position, dst_type=dt, stream=s,
                             check_bounds=c["check_bounds"], advance=c["advance"])
        rocsample.check_errors(s)
        vals = {"dst": H.host_of(be, dst, s)}
        if not isinstance(position, (int, float, bool)):
            vals["position"] = H.host_of(be, position, s)
        return vals

    return call


def _ring_expected(c):
    n_ring = c["dst"].shape[-2]
    n = c["src"].shape[-2]
    want = np.array(c["dst"], copy=True)
    idx = np.array([(c["pos"] + i) % n_ring for i in range(n)], np.int64)  # exact Python ints
    dt = None if c["t"] in ("f32", "f16") else c["t"]
    ref.set_rows(want, c["src"], idx.astype(np.int64), dst_type=dt)
    return want


@H.fuzz_settings("ring_write")
@given(c=ring_cases())
def test_fuzz_ring_write(backend, c):
    out = H.run(_run_ring(backend, c), backend)
    H.log("ring_write", f"{c['t']} {c['form']}", out)
    H.check_hygiene(out, c)
    if c["form"] == "bad":
        H.check_named_refusal(out, {"position"}, c)
        return
    n = c["src"].shape[-2]
    I64 = 2**63
    # SEMANTICS: int64 positions; an int outside is refused, so is advancing a NumPy one past
    # 2**63 - 1 (before the write); a device position wraps like an int64 counter
    host_pos = c["form"] == "numpy" or (c["form"] == "device" and not backend.is_device)
    if not -I64 <= c["pos"] < I64 or (host_pos and c["advance"] and c["pos"] + n >= I64):
        H.check_named_refusal(out, {"position"}, c)
        return
    if not out.ok:
        H.fail(f"a valid ring_write raised {out.brief()}", c)
    want = _ring_expected(c)
    if not np.array_equal(np.ascontiguousarray(out.values["dst"]).view(np.uint8),
                          np.ascontiguousarray(want).view(np.uint8)):
        H.fail(f"{backend.name}: ring rows differ from set_rows at (position + i) % n_ring", c)
    if "position" in out.values:
        moved = c["advance"] and c["form"] in ("numpy", "device")
        want_p = (c["pos"] + (n if moved else 0) + I64) % 2**64 - I64
        got_p = int(out.values["position"][0])
        if got_p != want_p:
            H.fail(f"position after the write {got_p}, want {want_p}", c)
