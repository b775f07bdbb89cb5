"""NumPy oracle of set_rows (SPEC §3, ggml's GGML_OP_SET_ROWS).

Axis order is NumPy's (ggml's ``ne`` reversed): ``dst (d3, d2, n_rows, W)``,
``src (d3, d2, n_src, ne0)``, ``idx (i3, i2, n_src)``; fewer leading axes are allowed and read as 1.
``dst[b3, b2, idx[b3 % i3, b2 % i2, r], :] = convert(src[b3, b2, r, :])``.

Also the block-type table the device side reuses (``BLOCK_BYTES``, 32 values per block).
"""

from __future__ import annotations

import numpy as np

from .._validate import describe, dtype_of, fail
from ..backends.numba_arrays import c_strides
from .quant import BLOCK_BYTES, FLOAT_TYPES, QK, convert_rows

__all__ = ["BLOCK_BYTES", "FLOAT_TYPES", "QK", "DST_TYPES", "plan_shapes", "set_rows"]

DST_TYPES = FLOAT_TYPES + tuple(BLOCK_BYTES)

# storage dtypes accepted for each destination type
_DST_STORAGE = {
    "f32": ("float32",),
    "f16": ("float16", "uint16"),
    "bf16": ("bfloat16", "uint16", "int16"),
}


def resolve_dst_type(dst, dst_type) -> str:
    """The destination type from ``dst_type`` or, when None, from dst's dtype."""
    dn = dtype_of(dst)
    if dst_type is None:
        if dn == "float32":
            return "f32"
        if dn == "float16":
            return "f16"
        if dn == "bfloat16":
            return "bf16"
        fail(
            "dst_type",
            f"one of {', '.join(DST_TYPES)} for a dst of dtype {dn} (only float32, float16 and "
            "bfloat16 imply it)",
            "None",
        )
    if not isinstance(dst_type, str) or dst_type.lower() not in DST_TYPES:
        fail("dst_type", f"one of {', '.join(DST_TYPES)}", describe(dst_type))
    t = dst_type.lower()
    allowed = _DST_STORAGE.get(t, ("uint8",))
    if dn not in allowed:
        fail("dst", f"dtype {' or '.join(allowed)} for dst_type {t!r}", dn, TypeError)
    return t


def plan_shapes(dst, src, idx, dst_type):
    """Validate shapes and dtypes; return (dst4_shape, src4_shape, idx3_shape, row_width).

    Works on anything with ``.shape`` and ``.dtype`` (host or device arrays). Raises ValueError /
    TypeError naming the argument.
    """
    sn, idn = dtype_of(src), dtype_of(idx)
    if sn not in ("float32", "float16"):
        fail("src", "float32 or float16", sn, TypeError)
    if idn not in ("int32", "int64"):
        fail("idx", "int32 or int64", idn, TypeError)
    dsh, ssh, ish = tuple(dst.shape), tuple(src.shape), tuple(idx.shape)
    if not 1 <= len(ssh) <= 4:
        fail("src", "a 1-D to 4-D array (d3, d2, n_src, ne0)", f"a {len(ssh)}-D array of shape {ssh}")
    if len(ssh) == 1:
        ssh = (1, ssh[0])
    if not 2 <= len(dsh) <= 4:
        fail("dst", "a 2-D to 4-D array (d3, d2, n_rows, row)", f"a {len(dsh)}-D array of shape {dsh}")
    if not 1 <= len(ish) <= 3:
        fail("idx", "a 1-D to 3-D array (i3, i2, n_src)", f"a {len(ish)}-D array of shape {ish}")
    s4 = (1,) * (4 - len(ssh)) + ssh
    d4 = (1,) * (4 - len(dsh)) + dsh
    i3 = (1,) * (3 - len(ish)) + ish
    ne0 = s4[3]
    if dst_type in BLOCK_BYTES:
        if ne0 % QK:
            fail("src", f"rows of a multiple of {QK} values for a {dst_type} dst", f"ne0={ne0}")
        width = ne0 // QK * BLOCK_BYTES[dst_type]
        strides = getattr(dst, "strides", None)
        if strides is None or callable(strides):  # torch: .stride() counts elements; use the CAI
            cai = getattr(dst, "__cuda_array_interface__", None)
            strides = cai.get("strides") if cai else None  # None: C-contiguous
        if strides is not None and len(dsh) and dsh[-1] > 1 and tuple(strides)[-1] != 1:
            fail("dst", f"contiguous rows of {dst_type} blocks", f"row stride {tuple(strides)[-1]} bytes")
        what = f"{width} bytes per row ({ne0} values of {dst_type}, {BLOCK_BYTES[dst_type]} bytes per 32)"
    else:
        width = ne0
        what = f"{ne0} values per row"
    if d4[3] != width:
        fail("dst", f"{what}, as src has ne0={ne0}", f"{d4[3]} (shape {dsh})")
    if d4[:2] != s4[:2]:
        fail("dst", f"leading dims (d3, d2) = {s4[:2]} matching src", f"{d4[:2]} (shape {dsh})")
    if i3[2] != s4[2]:
        fail("idx", f"n_src={s4[2]} indices per (i3, i2), as src has", f"{i3[2]} (shape {ish})")
    if i3[0] == 0 or i3[1] == 0:
        if s4[0] * s4[1] * s4[2] != 0:
            fail("idx", "non-zero broadcast dims (i3, i2)", f"shape {ish}")
    else:
        if s4[1] % i3[1]:
            fail("idx", f"i2 dividing d2={s4[1]} (broadcast)", f"i2={i3[1]} (shape {ish})")
        if s4[0] % i3[0]:
            fail("idx", f"i3 dividing d3={s4[0]} (broadcast)", f"i3={i3[0]} (shape {ish})")
    return d4, s4, i3, width


def memory_extent(arr):
    """(address space, first byte, one past the last byte, read-only) of an array's memory, or None
    for an empty array or an object that shows no buffer. NumPy arrays (and the simulator's
    device arrays, NumPy underneath) are "host"; ``__cuda_array_interface__`` arrays are "device"
    (one unified virtual address space across devices). Negative strides count downwards."""
    if isinstance(arr, np.ndarray) or hasattr(arr, "_ary"):
        a = arr if isinstance(arr, np.ndarray) else arr._ary
        ai = a.__array_interface__
        ptr, ro = ai["data"]
        ro = ro or not a.flags.writeable
        shape, strides, itemsize, space = a.shape, a.strides, a.itemsize, "host"
    else:
        cai = getattr(arr, "__cuda_array_interface__", None)
        if cai is None:
            return None
        ptr, ro = cai["data"]
        shape = tuple(cai["shape"])
        itemsize = np.dtype(cai["typestr"]).itemsize
        strides = cai.get("strides") or c_strides(shape, itemsize)
        space = "device"
    if 0 in shape or ptr is None:
        return None
    lo = hi = int(ptr)
    for n, st in zip(shape, strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return space, lo, hi + itemsize, bool(ro)


def check_writable(arr, name: str) -> None:
    """ValueError naming ``name`` when its memory is read-only (before anything is read or run)."""
    e = memory_extent(arr)
    if e is not None and e[3]:
        fail(name, "a writable array (it is written in place)", f"a read-only {describe(arr)}")


def check_apart(dst, **others) -> None:
    """ValueError naming the first array of ``others`` whose memory overlaps dst's (SPEC §3: src
    overlapping dst is refused; idx too): compared by address range, so two views that interleave
    without sharing a byte are refused as well."""
    d = memory_extent(dst)
    if d is None:
        return
    for name, a in others.items():
        e = memory_extent(a)
        if e is not None and e[0] == d[0] and e[1] < d[2] and d[1] < e[2]:
            common = min(d[2], e[2]) - max(d[1], e[1])
            fail(name, "memory apart from dst's (set_rows does not read what it overwrites)",
                 f"an {describe(a)} whose address range overlaps dst's by {common} bytes")


def first_bad_index(idx3: np.ndarray, n_rows: int):
    """(flat position, value) of the first out-of-range index in C order, or None."""
    bad = (idx3 < 0) | (idx3 >= n_rows)
    if not bad.any():
        return None
    pos = int(np.flatnonzero(bad.ravel())[0])
    return pos, int(idx3.ravel()[pos])


def check_finite(src: np.ndarray, dst_type: str) -> None:
    """ValueError naming the first non-finite value of ``src`` (C order, in src's own shape):
    the quantizers refuse such input (ggml's would write garbage)."""
    bad = ~np.isfinite(src)
    if bad.any():
        pos = tuple(int(p) for p in np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), src.shape))
        fail("src", f"finite values for a {dst_type} destination", f"{src[pos]} at position {pos}")


def index_error(pos: int, value: int, idx_shape, n_rows: int) -> IndexError:
    """The IndexError every backend raises for a bad index (position in idx's own shape)."""
    if len(idx_shape) == 0:
        where = "()"
    else:
        p = np.unravel_index(pos, tuple(idx_shape)) if int(np.prod(idx_shape)) > 0 else (pos,)
        p = tuple(int(x) for x in p)
        where = str(p[0]) if len(p) == 1 else str(p)
    return IndexError(f"idx: expected values in [0, n_rows={n_rows}), got {value} at position {where}")


def set_rows(dst, src, idx, *, dst_type=None, stream=None, check_bounds=True):
    """Write rows of ``src`` into ``dst`` at ``idx`` (ggml GGML_OP_SET_ROWS), in place.

    Parameters
    ----------
    dst : numpy.ndarray
        ``(d3, d2, n_rows, W)`` (fewer leading axes allowed). float32 / float16 for f32 / f16,
        uint16 bits (or ml_dtypes bfloat16) for bf16, uint8 blocks for quantized types.
    src : numpy.ndarray
        ``(d3, d2, n_src, ne0)`` float32 or float16.
    idx : numpy.ndarray
        ``(i3, i2, n_src)`` int32 or int64, broadcast as ``idx[b3 % i3, b2 % i2, r]``.
    dst_type : str, optional
        ``f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl``; inferred from float dtypes.
    stream : ignored
        Accepted for signature parity with the device launcher.
    check_bounds : bool
        Accepted for parity; the reference always checks (it never writes out of bounds).

    Returns
    -------
    numpy.ndarray
        ``dst``.

    Raises
    ------
    IndexError
        An index outside ``[0, n_rows)``, naming its position in idx and its value; dst unchanged.
    ValueError, TypeError
        Shape, broadcast, dtype or non-finite-input problems; dst unchanged.

    Example
    -------
    >>> dst = np.zeros((4, 32), np.float32)
    >>> set_rows(dst, np.ones((1, 32), np.float32), np.array([2]))[2, 0]
    1.0

    Note
    ----
    Host-only and synchronous. Duplicate destination rows: the highest source row wins.
    """
    del stream, check_bounds
    if not isinstance(dst, np.ndarray):
        fail("dst", "a NumPy array on the cpu backend", type(dst).__name__, TypeError)
    src = np.asarray(src)
    idx = np.asarray(idx)
    t = resolve_dst_type(dst, dst_type)
    d4, s4, i3, _ = plan_shapes(dst, src, idx, t)
    check_writable(dst, "dst")
    check_apart(dst, src=src, idx=idx)
    if src.size == 0:  # zero-size: nothing is read or written
        return dst
    idx3 = idx.reshape(i3)
    n_rows = d4[2]
    bad = first_bad_index(idx3, n_rows)
    if bad is not None:
        raise index_error(bad[0], bad[1], idx.shape, n_rows)
    if t in BLOCK_BYTES:
        check_finite(src, t)  # after the indices, before writing; named in src's own shape
    src4 = src.reshape(s4)
    conv = convert_rows(src4, t)
    dview = dst[(None,) * (4 - dst.ndim)]  # a view even for strided dst (reshape could copy)
    if dview.dtype != conv.dtype:
        dview = dview.view(conv.dtype)
    d3, d2, n_src = s4[0], s4[1], s4[2]
    for b3 in range(d3):
        for b2 in range(d2):
            rows = idx3[b3 % i3[0], b2 % i3[1]].astype(np.int64)
            # highest source row wins a duplicated destination: keep the last occurrence
            _, last_rev = np.unique(rows[::-1], return_index=True)
            keep = n_src - 1 - last_rev
            dview[b3, b2, rows[keep]] = conv[b3, b2, keep]
    return dst
