"""One place for argument checks, so every error reads the same way.

Form: ``"<name>: expected <what>, got <what came>"``. Never ``assert`` (stripped by ``python -O``).
"""

from __future__ import annotations

import math

import numpy as np


def fail(name: str, expected: str, got, exc: type[Exception] = ValueError):
    """Raise ``exc`` with the project's message form."""
    raise exc(f"{name}: expected {expected}, got {got}")


_MAX_REPR = 80


def describe(x) -> str:
    """A short description of a value for error messages: never the whole of a large input."""
    if isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__") or (
            hasattr(x, "shape") and hasattr(x, "dtype")):
        shape = tuple(getattr(x, "shape", ()))
        dtype = getattr(x, "dtype", "?")
        return f"array of shape {shape} and dtype {dtype}"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, (list, tuple)) and len(x) > 8:
        return f"a {type(x).__name__} of {len(x)} items, the first {describe(x[0])}"
    r = repr(x)
    if len(r) > _MAX_REPR:
        r = f"{r[:_MAX_REPR - 20]}... ({type(x).__name__}, {len(r)} characters in full)"
    return r


_TORCH_DTYPES = {"torch.bfloat16": "bfloat16"}


def dtype_of(obj) -> str:
    """Dtype name of a host or device array (NumPy, numba, torch, CuPy); bfloat16 reads 'bfloat16'."""
    dt = getattr(obj, "dtype", None)
    s = str(dt)
    if s in _TORCH_DTYPES:
        return _TORCH_DTYPES[s]
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None and not isinstance(obj, np.ndarray):
        ts = cai["typestr"]
        if ts.endswith("V2") or s == "bfloat16":
            return "bfloat16"
    if s.startswith("torch."):
        return s[len("torch."):]
    return str(np.dtype(dt)) if dt is not None else "?"


def check_ndim(name: str, arr, ndim: int | tuple[int, ...]) -> None:
    dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    got = len(arr.shape)
    if got not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        fail(name, f"a {want} array", f"a {got}-D array of shape {tuple(arr.shape)}")


def check_int(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        fail(name, "an integer", describe(value), TypeError)
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "(-inf" if lo is None else f"[{lo}"
        hi_s = "inf)" if hi is None else f"{hi}]"
        fail(name, f"an integer in {lo_s}, {hi_s}", v)
    return v


def in_range(x: np.ndarray, lo: float, hi: float, lo_open: bool, hi_open: bool) -> np.ndarray:
    """Elementwise membership of ``x`` in the interval; NaN is never in range."""
    ok_lo = (x > lo) if lo_open else (x >= lo)
    ok_hi = (x < hi) if hi_open else (x <= hi)
    return ok_lo & ok_hi


def interval_text(lo: float, hi: float, lo_open: bool, hi_open: bool) -> str:
    """The interval as text; an infinite end is always open (no value there is accepted)."""
    lo_open = lo_open or lo == -math.inf
    hi_open = hi_open or hi == math.inf

    def f(v):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:g}"

    return f"{'(' if lo_open else '['}{f(lo)}, {f(hi)}{')' if hi_open else ']'}"


def _given(value, i: int, arr: np.ndarray):
    """Row ``i`` of a host parameter as the caller gave it: an integer as an integer (``-3``,
    not the float64 working copy's ``-3.0``), anything else as that float64."""
    v = value if np.ndim(value) == 0 else np.asarray(value).ravel()[i]
    if isinstance(v, np.ndarray):
        v = v[()]
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    return float(arr[i])


def check_rows_param(
    name: str,
    value,
    n_rows: int,
    dtype,
    lo: float = -math.inf,
    hi: float = math.inf,
    lo_open: bool = False,
    hi_open: bool = False,
) -> np.ndarray | None:
    """Check a host scalar or per-row host array; return it as a length-n_rows array of ``dtype``.

    Device arrays (``__cuda_array_interface__``) are checked for length only (the caller checks
    their dtype) and ``None`` is returned: their values cannot be read without a sync.
    """
    dtype = np.dtype(dtype)
    if hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray):
        shape = tuple(value.__cuda_array_interface__["shape"])
        if shape != (n_rows,):
            fail(name, f"a scalar or an array of length n_rows={n_rows}", f"an array of shape {shape}")
        return None
    if np.isscalar(value) or (isinstance(value, np.ndarray) and value.ndim == 0):
        if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)):
            fail(name, f"a number in {interval_text(lo, hi, lo_open, hi_open)}", describe(value), TypeError)
        arr = np.full(n_rows, value, dtype=np.float64)
    else:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf":
            fail(name, "a number or an array of numbers", describe(value), TypeError)
        if arr.shape != (n_rows,):
            fail(name, f"a scalar or an array of length n_rows={n_rows}", f"an array of shape {arr.shape}")
        arr = arr.astype(np.float64)
    bad = ~in_range(arr, lo, hi, lo_open, hi_open)
    if dtype.kind in "iu":
        bad |= np.isfinite(arr) & (arr != np.floor(arr))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = "" if np.isscalar(value) or np.ndim(value) == 0 else f" (row {i})"
        kind = "an integer" if dtype.kind in "iu" else "a value"
        fail(name, f"{kind} in {interval_text(lo, hi, lo_open, hi_open)}",
             f"{describe(_given(value, i, arr))}{where}")
    return arr.astype(dtype)
