"""Hypothesis strategies for the fuzz tests, and the validity rules they are judged by.

Every drawn argument carries its own verdict: a :class:`Arg` knows the value the call gets, the
value the reference gets (``ref``), and whether a backend must refuse it (``bad_device`` on a GPU
or sim backend, ``bad_host`` on ``cpu``; they differ only where SPEC §1 / SEMANTICS.md give the
two kinds of backend different rules, e.g. the dtype of a device parameter array). The rules
here are written from SPEC §2-§3 and docs/SEMANTICS.md, not read back from the code.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

F32 = np.float32


@dataclasses.dataclass
class Arg:
    """One drawn argument: what the call gets, what the reference gets, and the verdicts."""

    name: str
    value: Any  # a scalar, a NumPy array, or a NumPy array to be placed ("device" forms)
    form: str  # "scalar", "host", "device", "none"
    ref: Any = None  # the value for the reference (None when bad)
    bad_device: bool = False
    bad_host: bool = False

    def bad(self, is_device: bool) -> bool:
        return self.bad_device if is_device else self.bad_host

    def __repr__(self) -> str:
        v = self.value
        if isinstance(v, np.ndarray):
            v = f"{v.dtype}{list(v.shape)}={np.array2string(v.ravel()[:6], precision=4)}"
        flags = ("!dev" if self.bad_device else "") + ("!host" if self.bad_host else "")
        return f"{self.name}={self.form}:{v}{' ' + flags if flags else ''}"


# ---- the validity rules (SPEC §2, SEMANTICS "Parameters are float32 on the device") ------------
def _f32(x: float) -> np.float32:
    with np.errstate(over="ignore", under="ignore"):
        return np.float32(x)


def temperature_ok(t: float) -> bool:
    if not math.isfinite(t) or t < 0:
        return False
    if t == 0:
        return True
    t32 = _f32(t)
    with np.errstate(over="ignore", divide="ignore"):
        return bool(np.isfinite(t32) and np.isfinite(F32(1) / t32))


def top_k_ok(k) -> bool:
    if isinstance(k, (int, np.integer)):
        return int(k) >= 0
    k = float(k)
    return not math.isnan(k) and 0 <= k < math.inf and k == math.floor(k)


def top_p_ok(p: float) -> bool:
    return not math.isnan(p) and 0 < p <= 1 and _f32(p) > 0


def min_p_ok(p: float) -> bool:
    return not math.isnan(p) and 0 <= p <= 1


RULES = {"temperature": temperature_ok, "top_k": top_k_ok, "top_p": top_p_ok, "min_p": min_p_ok}
DEVICE_DTYPE = {"temperature": np.float32, "top_k": np.int64, "top_p": np.float32, "min_p": np.float32}

_INTERESTING = {
    "temperature": [0.0, -0.0, 1.0, 0.7, 2.5, 0.05, 1e-30, 3e-39, 2.9e-39, 1e-45, 3.3e38, 3.5e38,
                    1e39, -1e-30, math.inf, math.nan, 1e-300],
    "top_k": [0, 1, 2, 3, 5, 40, 256, 257, 300, 2**31, 2**62, 2**63 + 5, -1, 2.0, 2.5, 1e300,
              math.inf, -math.inf, math.nan],
    "top_p": [1.0, 0.5, 0.9, 0.95, 0.3, 1e-45, 1e-46, 0.0, 1.0000001, -0.5, math.nan, math.inf],
    "min_p": [0.0, 0.05, 0.5, 1.0, 1e-46, 1.0001, -0.1, math.nan, math.inf],
}
_VALID_RANGE = {"temperature": (0.0, 4.0), "top_k": None, "top_p": (0.01, 1.0), "min_p": (0.0, 0.6)}


def _scalar_value(draw, name: str, vocab: int, valid: bool = True):
    """A parameter value the rule accepts (``valid``) or refuses."""
    rule = RULES[name]
    pool = [v for v in _INTERESTING[name] if rule(v) == valid]
    if not valid:
        return draw(st.sampled_from(pool))
    if name == "top_k":
        return draw(st.one_of(st.sampled_from(pool), st.integers(0, vocab + 3)))
    lo, hi = _VALID_RANGE[name]
    # floats(lo, hi) reaches denormals (2.2e-311 as a temperature has no float32 inverse)
    return draw(st.one_of(st.sampled_from(pool), st.floats(lo, hi).filter(rule)))


def _ref_of(name: str, arr: np.ndarray) -> np.ndarray:
    """The reference's value of a valid parameter array (top_k past 2**62 is the same no-op)."""
    if name == "top_k":
        if arr.dtype.kind in "iu":
            return np.minimum(arr.astype(np.int64), 2**62)
        return np.minimum(arr.astype(np.float64), 2.0**62).astype(np.int64)
    return arr.astype(np.float64)


DEFAULTS = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}


def default_arg(name: str, rows: int) -> Arg:
    d = DEFAULTS[name]
    return Arg(name, d, "scalar", ref=_ref_of(name, np.full(rows, d, np.float64)))


@st.composite
def filter_param(draw, name: str, rows: int, vocab: int, allow_device: bool = True,
                 bad: bool = False) -> Arg:
    """temperature / top_k / top_p / min_p: a scalar, a per-row host array, or a device array;
    ``bad``: one that must be refused (a wrong type, length, device dtype or value)."""
    rule = RULES[name]
    form = draw(st.sampled_from(["scalar", "scalar", "host", "device"] if allow_device
                                else ["scalar", "scalar", "host"]))
    how = draw(st.sampled_from({"scalar": ["value", "value", "value", "type"],
                                "host": ["value", "value", "shape"],
                                "device": ["shape", "dtype"]}[form])) if bad else None
    if form == "scalar":
        if how == "type":
            return Arg(name, draw(st.sampled_from([True, "0.5", None])), "scalar",
                       bad_device=True, bad_host=True)
        kind = draw(st.sampled_from(["py", "py", "py", "np32", "np64"]))
        v = _scalar_value(draw, name, vocab, valid=how is None)
        if kind == "np32":
            v = _f32(float(v))
        elif kind == "np64":
            v = np.float64(float(v))
        ok = rule(v if isinstance(v, int) else float(v))
        ref = None
        if ok:
            ref = _ref_of(name, np.full(rows, v, np.int64 if isinstance(v, int) and name == "top_k"
                                        and abs(v) < 2**62 else np.float64))
        return Arg(name, v, "scalar", ref=ref, bad_device=not ok, bad_host=not ok)
    # per-row arrays
    shape_bad = how == "shape"
    n = max(0, rows + draw(st.sampled_from([-1, 1]))) if shape_bad else rows
    vals = [_scalar_value(draw, name, vocab) for _ in range(n)]
    if how == "value" and n:
        vals[draw(st.integers(0, n - 1))] = _scalar_value(draw, name, vocab, valid=False)
    if form == "device":
        dt = DEVICE_DTYPE[name]
        wrong = how == "dtype"
        if wrong:
            dt = np.float64 if dt is np.float32 else np.int32
        with np.errstate(over="ignore", invalid="ignore"):
            arr = np.minimum(np.array([float(v) for v in vals], np.float64), 2.0**30 if dt is np.int32
                             else 2.0**62 if name == "top_k" else np.inf).astype(dt)
        ok_dev = not shape_bad and not wrong
        # the cpu twin gets the same NumPy array as a host array: its values are valid (values in
        # device arrays are never checked, SEMANTICS), its dtype is not judged there
        ok_host = not shape_bad
        ref = _ref_of(name, arr) if ok_dev or ok_host else None
        return Arg(name, arr, "device", ref=ref, bad_device=not ok_dev, bad_host=not ok_host)
    dt = draw(st.sampled_from([np.float64, np.float32] + ([np.int64] if name == "top_k" else [])))
    if dt is np.int64:
        arr = np.array([v if isinstance(v, int) and -(2**63) <= v < 2**63 else
                        (-1 if how == "value" else 1) for v in vals], np.int64)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            arr = np.array([float(v) for v in vals], np.float64).astype(dt)
    ok = not shape_bad and all(rule(x) for x in arr.tolist())
    ref = _ref_of(name, arr) if ok else None
    return Arg(name, arr, "host", ref=ref, bad_device=not ok, bad_host=not ok)


@st.composite
def counter_param(draw, name: str, rows: int, allow_device: bool = True, bad: bool = False) -> Arg:
    """seed / position: any integer (mod 2**64), a per-row integer array, or a device array;
    ``bad``: one that must be refused (a float, None, a bool, a wrong length or dtype)."""
    form = draw(st.sampled_from(["scalar", "scalar", "host", "device"] if allow_device
                                else ["scalar", "scalar", "host"]))
    how = draw(st.sampled_from({"scalar": ["type"], "host": ["shape", "dtype"],
                                "device": ["shape", "dtype"]}[form])) if bad else None
    ints = st.one_of(st.integers(0, 2**20), st.integers(-(2**70), 2**70),
                     st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -1]))
    if form == "scalar":
        if how == "type":
            v = draw(st.sampled_from([1.5, None, True, "3"]))
            return Arg(name, v, "scalar", bad_device=True, bad_host=True)
        v = draw(ints)
        if draw(st.integers(0, 3)) == 0:
            v = np.int64(v % 2**63)
        return Arg(name, v, "scalar", ref=np.full(rows, int(v) % 2**64, np.uint64))
    shape_bad = how == "shape"
    n = rows + 1 if shape_bad else rows
    vals = [draw(ints) for _ in range(n)]
    if form == "device":
        dt = np.int32 if how == "dtype" else draw(st.sampled_from([np.int64, np.int64, np.uint64]))
    else:
        dt = np.float64 if how == "dtype" else draw(st.sampled_from([np.int64, np.uint64, np.int32]))
    if dt is np.int32:
        arr = np.array([v % 2**31 for v in vals], np.int32)
    elif dt is np.float64:
        arr = np.array([float(v % 1000) for v in vals], np.float64)
    else:
        arr = np.array([v % 2**64 for v in vals], np.uint64).view(np.int64 if dt is np.int64 else np.uint64)
    if form == "device":
        ok_dev = not shape_bad and dt in (np.int64, np.uint64)
        ok_host = not shape_bad
    else:
        ok_dev = ok_host = not shape_bad and dt is not np.float64
    ref = None
    if ok_dev or ok_host:
        ref = arr.astype(np.int64).view(np.uint64) if arr.dtype.kind == "i" else arr.astype(np.uint64)
    return Arg(name, arr, form, ref=ref, bad_device=not ok_dev, bad_host=not ok_host)


# ---- logits ------------------------------------------------------------------------------------
ROW_PATTERNS = ["normal", "normal", "normal", "wide", "ties", "constant", "sorted", "one_nan",
                "all_nan", "all_neginf", "posinf", "huge", "tiny", "mixed_nonfinite"]


@st.composite
def logits_rows(draw, rows: int, vocab: int) -> np.ndarray:
    """float32 logits, each row drawn from a pattern (ties, NaN/inf, huge magnitudes, ...)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    out = np.empty((rows, vocab), np.float32)
    for r in range(rows):
        pat = draw(st.sampled_from(ROW_PATTERNS))
        x = rng.standard_normal(vocab).astype(np.float32)
        if pat == "wide":
            x *= F32(30)
        elif pat == "ties":
            x = np.round(x * 2).astype(np.float32) / F32(2)
        elif pat == "constant":
            x[:] = F32(rng.standard_normal())
        elif pat == "sorted":
            x = np.sort(x)[:: draw(st.sampled_from([1, -1]))].copy()
        elif pat == "one_nan":
            x[rng.integers(vocab)] = np.nan
        elif pat == "all_nan":
            x[:] = np.nan
        elif pat == "all_neginf":
            x[:] = -np.inf
            if vocab > 1 and draw(st.booleans()):
                x[rng.integers(vocab)] = np.nan
        elif pat == "posinf":
            x[rng.integers(vocab)] = np.inf
        elif pat == "huge":
            x = (np.sign(x) * F32(3e38)).astype(np.float32)
            x[rng.integers(vocab)] = F32(1.0)
        elif pat == "tiny":
            x = (x * F32(1e-38)).astype(np.float32)
        elif pat == "mixed_nonfinite":
            m = rng.integers(0, 4, vocab)
            x[m == 1] = np.nan
            x[m == 2] = np.inf
            x[m == 3] = -np.inf
        out[r] = x
    return out


def to_dtype(x32: np.ndarray, dtype: str) -> np.ndarray:
    """float32 logits in ``dtype``: float16 (NumPy's rounding), bfloat16 as uint16 bit patterns."""
    if dtype == "float32":
        return x32
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return x32.astype(np.float16)
    bits = x32.view(np.uint32)
    return (bits >> np.uint32(16)).astype(np.uint16)  # truncation: every pattern is a bfloat16


def widen(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (x.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return x.astype(np.float32)
