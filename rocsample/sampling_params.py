"""Host-side checks of the sampling parameters (SPEC §2 ranges), shared by every backend.

Each parameter is a scalar or a per-row array, on the host or the device. Host values are
validated here (as float32 where the kernels use float32) and returned as length-n_rows arrays;
device arrays are checked for length, dtype and nothing else (reading their values would
synchronize). ``value_key`` is how a host value enters the binder's key.
"""

from __future__ import annotations

import math

import numpy as np

from rocsample import _validate as V

__all__ = ["host_params", "u64_rows", "value_key"]

_SCALARS = (bool, int, float, str, type(None))
#: host parameter arrays up to this many elements key by value (larger ones are never bound)
_KEY_ELEMENTS = 4096


def value_key(v):
    """A hashable stand-in for a host parameter value, or None (not keyable: never bound).

    Scalars key by type and value; NumPy arrays by dtype, shape and bytes (their values decide
    the route, and they can change in place, so never by identity).
    """
    tv = type(v)
    if tv in _SCALARS:
        return (tv, v)
    if isinstance(v, np.generic):
        return (tv, v.item())
    if tv is np.ndarray and v.size <= _KEY_ELEMENTS:
        return ("np", v.dtype.str, v.shape, v.tobytes())
    return None


def u64_rows(be, name, value, n_rows, stream):
    """Seeds/positions: scalar or per-row, host (any int, wrapped mod 2**64) or device."""
    if be.is_device_array(value):
        arr = be.as_array(value, name, stream)
        if tuple(arr.shape) != (n_rows,):
            V.fail(name, f"a scalar or an array of length n_rows={n_rows}",
                   f"an array of shape {tuple(arr.shape)}")
        if str(arr.dtype) not in ("int64", "uint64"):
            V.fail(name, "an int64 or uint64 device array", str(arr.dtype), TypeError)
        return arr.view(np.uint64) if str(arr.dtype) == "int64" else arr, True
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]  # a 0-d array is a scalar, as for the other parameters
    if isinstance(value, (bool, np.bool_)) or value is None:
        V.fail(name, "an integer or an array of integers", V.describe(value), TypeError)
    if isinstance(value, (int, np.integer)):
        host = np.full(n_rows, int(value) % 2**64, dtype=np.uint64)
    else:
        a = np.asarray(value)
        if (a.dtype.kind not in "iu" and a.dtype != object) or (a.dtype == object and not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                for v in a.ravel())):
            V.fail(name, "an integer or an array of integers", V.describe(value), TypeError)
        if a.shape != (n_rows,):
            V.fail(name, f"a scalar or an array of length n_rows={n_rows}",
                   f"an array of shape {a.shape}")
        host = (a.astype(np.int64).view(np.uint64) if a.dtype.kind == "i"
                else np.array([int(v) % 2**64 for v in a], np.uint64) if a.dtype == object
                else a.astype(np.uint64))
    return host, False


def _param(be, name, value, n_rows, dtype, stream, **rng):
    """A per-row parameter as (host array or None, device array or None)."""
    if be.is_device_array(value):
        if not be.is_device:
            V.fail(name, "a host value on the cpu backend", V.describe(value), TypeError)
        V.check_rows_param(name, value, n_rows, dtype, **rng)
        arr = be.as_array(value, name, stream)
        if np.dtype(str(arr.dtype)) != np.dtype(dtype):
            V.fail(name, f"a {np.dtype(dtype).name} device array", str(arr.dtype), TypeError)
        return None, arr
    host = V.check_rows_param(name, value, n_rows, dtype, **rng)
    return host, None


#: top_k values from here up are all no-ops (>= any n_vocab); clamping to it keeps the int64
#: cast exact (NumPy's float -> int64 cast past 2**63 is undefined).
_TOP_K_CLAMP = 2**62


def _clamp_top_k(be, value):
    """Host top_k with +inf refused and values past int64 clamped (a no-op either way)."""
    if be.is_device_array(value) or isinstance(value, (bool, np.bool_, str, bytes)) \
            or value is None:
        return value  # device arrays and wrong types: _param's checks answer them
    if isinstance(value, (int, np.integer)):
        return min(int(value), _TOP_K_CLAMP)
    a = np.asarray(value)
    if a.dtype.kind not in "iuf":
        return value
    if a.dtype.kind in "iu":  # (kept integers: an error then shows the value as given)
        return np.minimum(a, a.dtype.type(min(_TOP_K_CLAMP, np.iinfo(a.dtype).max))).astype(np.int64)
    a = a.astype(np.float64)
    inf = np.isposinf(a)
    if inf.any():
        where = "" if a.ndim == 0 else f" (row {int(np.flatnonzero(inf.ravel())[0])})"
        V.fail("top_k", "an integer in [0, inf)", f"inf{where}")
    return np.minimum(a, float(_TOP_K_CLAMP))  # NaN stays NaN for the range check


def _check_float32(name, host, value, bad_of, expected):
    """Refuse host values that passed the float64 range check but leave it as float32.

    ``bad_of(original float64, float32)`` marks the bad rows; the kernels and the reference use
    float32 (SPEC §2: ``inv_t = float32(1) / float32(T)``).
    """
    if host is None:
        return
    orig = np.broadcast_to(np.asarray(value, dtype=np.float64), host.shape)
    with np.errstate(over="ignore", divide="ignore"):
        bad = bad_of(orig, orig.astype(np.float32))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = "" if np.ndim(value) == 0 else f" (row {i})"
        V.fail(name, expected, f"{float(orig[i])!r}{where}")


def host_params(be, n, temperature, top_k, top_p, min_p, stream):
    """(host, device) pairs of the four filter parameters, validated (SPEC §2 ranges)."""
    with np.errstate(over="ignore"):  # a float32 overflow is refused just below, not warned
        temp = _param(be, "temperature", temperature, n, np.float32, stream, lo=0.0,
                      hi=math.inf, hi_open=True)
    _check_float32("temperature", temp[0], temperature,
                   lambda t, t32: (t != 0) & ~(np.isfinite(t32) & np.isfinite(np.float32(1) / t32)),
                   "0 or a value whose float32 value and inverse are finite "
                   "(about 2.9e-39 < T < 3.4e38)")
    k = _param(be, "top_k", _clamp_top_k(be, top_k), n, np.int64, stream, lo=0)
    p = _param(be, "top_p", top_p, n, np.float32, stream, lo=0.0, hi=1.0, lo_open=True)
    _check_float32("top_p", p[0], top_p, lambda t, t32: t32 <= 0,
                   "a value in (0, 1] that stays positive in float32 (>= 1e-45)")
    mp = _param(be, "min_p", min_p, n, np.float32, stream, lo=0.0, hi=1.0)
    return temp, k, p, mp
