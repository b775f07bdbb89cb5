"""NumPy oracle for SPEC §2 sampling: the definitions, written the slow, obvious way.

Every row is sorted by its key (logit descending, token index ascending), the filters are
applied as prefixes of that order in float64 masses, and the token is the Gumbel-max over the
survivors using ``rocsample.reference.philox``. The device kernels must agree with this for
every row except those :func:`sample_with_margin` flags as sitting on a rounding boundary.

Conventions shared with the device (documented here once):

* Parameters are converted as the device receives them: ``temperature``, ``top_p`` and
  ``min_p`` to float32, ``top_k`` to int64, ``seed`` and ``position`` to uint64 (negative
  Python ints wrap modulo 2**64).
* Non-finite logits (NaN, +inf, -inf) are never sampled and carry no mass. A row with no
  finite logit yields token -1, logprob NaN and status :data:`STATUS_NO_FINITE`.
* ``inv_t = float32(1) / float32(T)``; the scaled logit is ``s_i = float32(l_i * inv_t)`` and
  the Gumbel score ``g_i = float32(s_i + G_i)``; ties in ``g`` go to the lower index.
* min_p threshold (float64): llama ``l_i >= l_max + log(min_p)``; vllm on the scaled logits
  ``s_i >= s_max + log(min_p)``; ``thr = float64(x_max) + log(float64(min_p))``, the same two
  float64 operations on the device.
* top-p masses are fixed-point integers, the same on the device:
  ``q_i = floor(exp(float64(x_i) - float64(x_max)) * 2**MASS_BITS + 0.5)`` (x the float32 key:
  the raw logit for llama, the scaled logit for vllm); the kept mass is the exact int64 sum ``Z``
  and the prefix is the smallest one whose cumulative mass reaches
  ``target = ceil(float64(top_p) * float64(Z))`` (:func:`topp_target`). Only ``exp`` may differ
  between machines (within an ulp or two), so a ``q_i`` may differ by one unit, and only when
  ``exp(..) * 2**MASS_BITS`` lies within a few ulps of a half-integer.
* bfloat16 logits: pass a ``numpy.uint16`` array of bfloat16 bit patterns with
  ``dtype="bfloat16"``, or an ``ml_dtypes.bfloat16`` array (detected by dtype name), or a
  CPU torch tensor of dtype ``torch.bfloat16``. float16 is widened by NumPy exactly.
"""

from __future__ import annotations

import math

import numpy as np

from rocsample._validate import describe
from rocsample.reference import philox

__all__ = ["sample", "sample_with_margin", "argmax", "widen", "mass_units", "topp_target",
           "minp_threshold", "STATUS_OK", "STATUS_NO_FINITE", "GUMBEL_MARGIN", "MASS_BITS",
           "EXP_ULPS", "MINP_ULPS"]

STATUS_OK = 0
#: The row had no finite logit; its token is -1.
STATUS_NO_FINITE = 1

#: Relative gap between the best and second-best Gumbel score under which a row is a near-tie.
#: Device ``logf`` may differ from NumPy's float32 log by an ulp, which moves ``g`` by a few
#: ulps of ``|g|``; 2**-20 (8 ulps) covers that.
GUMBEL_MARGIN = 2.0 ** -20
#: Fixed-point scale of the top-p masses (``rocsample.kernels.sampling.MASS_BITS``).
MASS_BITS = 40
#: float64 ``exp`` on the device (CUDA/HIP: <= 1 ulp) and NumPy's (<= 1 ulp) may differ by
#: 2 ulps; a mass ``exp(..) * 2**MASS_BITS`` within this many ulps of a half-integer may round
#: to a neighbouring integer on the device (one unit), so it is "at risk" (twice the bound).
EXP_ULPS = 4
#: min-p: ``log(min_p)`` may differ by an ulp or two between machines and the sum rounds once,
#: so a logit within ``MINP_ULPS * (ulp(thr) + ulp(log(min_p)))`` of the threshold is at risk.
#: ``min_p == 1`` (``log == 0``: the threshold is ``x_max`` exactly) is never at risk.
MINP_ULPS = 4
_MASS_SCALE = 2.0 ** MASS_BITS


def widen(logits, dtype=None) -> np.ndarray:
    """Return the logits as a float32 2-D-compatible array, widened exactly.

    Parameters
    ----------
    logits : array_like
        float32, float16, bfloat16 (see module notes), or uint16 bit patterns with
        ``dtype="bfloat16"``.
    dtype : {None, "float32", "float16", "bfloat16"}
        Only needed to mark a uint16 array as bfloat16 bits.
    """
    mod = type(logits).__module__
    if mod.startswith("torch"):
        import torch  # noqa: PLC0415 - optional peer, only when given a tensor

        t = logits.detach().cpu()
        if t.dtype == torch.bfloat16:
            logits, dtype = t.view(torch.int16).numpy().view(np.uint16), "bfloat16"
        else:
            logits = t.numpy()
    a = np.asarray(logits)
    name = str(a.dtype)
    if name == "bfloat16" or (dtype == "bfloat16" and a.dtype == np.uint16):
        bits = a.view(np.uint16) if name == "bfloat16" else a
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype == "bfloat16":
        raise TypeError(f"logits: expected uint16 bit patterns with dtype='bfloat16', got {a.dtype}")
    if a.dtype in (np.float32, np.float16):
        return a.astype(np.float32)
    raise TypeError(f"logits: expected float32, float16 or bfloat16, got {a.dtype}")


def _rows_param(value, n_rows, dtype):
    a = np.asarray(value)
    if a.ndim == 0:
        a = np.full(n_rows, a)
    if a.shape != (n_rows,):
        raise ValueError(f"expected a scalar or an array of length n_rows={n_rows}, got shape {a.shape}")
    if np.dtype(dtype) == np.uint64 and a.dtype.kind == "i":
        return a.astype(np.int64).view(np.uint64)
    if np.dtype(dtype) == np.uint64 and a.dtype == object:
        return np.array([int(v) % 2**64 for v in a], dtype=np.uint64)
    return a.astype(dtype)


def mass_units(x, x_max):
    """Fixed-point top-p masses and their rounding risk.

    Parameters
    ----------
    x : numpy.ndarray of float32 or float64 (float32 values)
        Keys (raw logits for llama, scaled logits for vllm), all <= ``x_max``.
        Scaled keys may be infinite; a key equal to ``x_max`` has mass ``2**MASS_BITS``.
    x_max : float
        The row's maximum key (a float32 value).

    Returns
    -------
    q : numpy.ndarray of int64
        ``floor(exp(float64(x) - float64(x_max)) * 2**MASS_BITS + 0.5)``.
    at_risk : numpy.ndarray of bool
        Where another machine's ``exp`` (within :data:`EXP_ULPS` / 2 ulps) could round ``q``
        to the neighbouring integer.
    """
    x64 = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):   # inf - inf where the maximum is infinite (vllm)
        y = np.exp(x64 - float(x_max)) * _MASS_SCALE
    # A key equal to the maximum has the full unit, also when both are infinite: in vllm order a
    # scaled maximum can overflow (l = 3e38 at T = 0.5, or every scaled logit -inf).
    y = np.where(x64 == float(x_max), _MASS_SCALE, y)
    fl = np.floor(y)
    # y < 2**MASS_BITS << 2**52, so y + 0.5 is exact: round half up, no double rounding.
    q = np.floor(y + 0.5).astype(np.int64)
    at_risk = np.abs(y - (fl + 0.5)) <= EXP_ULPS * np.spacing(y)
    return q, at_risk


def topp_target(p, z):
    """``ceil(float64(p) * float64(z))`` (at most z): the cumulative mass the prefix must reach.

    Both conversions and the product are single IEEE roundings, so the device gets the same
    integer from the same int64 ``z``.
    """
    t = int(math.ceil(float(np.float32(p)) * float(int(z))))
    return min(t, int(z))


def minp_threshold(x_max, min_p):
    """``float64(x_max) + log(float64(min_p))``: the device's two float64 operations."""
    return float(x_max) + math.log(float(np.float32(min_p)))


def _minp_near(x64, thr, log_mp):
    """Any key within rounding of the min-p threshold (never when ``log(min_p) == 0``)."""
    if log_mp == 0.0 or not math.isfinite(thr):
        return False   # an infinite threshold (vllm, overflowed maximum) is compared exactly
    tol = MINP_ULPS * (math.ulp(thr) + math.ulp(log_mp))
    return bool((np.abs(x64 - thr) <= tol).any())


def _topp_prefix(q_sorted: np.ndarray, risk_sorted: np.ndarray, K: int, p: float):
    """Smallest prefix of the first K integer masses whose cumulative mass reaches the target.

    Returns (length, on_boundary). A device whose ``q_i`` differ by one unit on the at-risk
    tokens has each cumulative mass within the at-risk count before it, and its target between
    ``topp_target(p, Z - r)`` and ``topp_target(p, Z + r)`` (monotone in Z), r the at-risk count
    of all K; the row is on the boundary only if that can move the crossing.
    """
    cum = np.cumsum(q_sorted[:K])
    rc = np.cumsum(risk_sorted[:K], dtype=np.int64)
    z = int(cum[-1])
    rz = int(rc[-1])
    target = topp_target(p, z)
    P = int(np.searchsorted(cum, target, side="left")) + 1
    P = min(max(P, 1), K)
    if rz == 0:
        return P, False
    hi_t = topp_target(p, z + rz)
    lo_t = topp_target(p, z - rz)
    # Could the device stop later (its mass through P short of its target)? Not past K.
    near = P < K and int(cum[P - 1]) - int(rc[P - 1]) < hi_t
    # Could it stop earlier (its mass through P - 1 already at its target)?
    if P >= 2:
        near |= int(cum[P - 2]) + int(rc[P - 2]) >= lo_t
    return P, bool(near)


def _order(key: np.ndarray) -> np.ndarray:
    """Positions of the finite float32 ``key`` sorted by key descending, position ascending.

    Same as ``np.lexsort((arange, -key))`` but one unstable int64 sort of unique composite
    keys (about 8x faster at 151936 tokens): the high 32 bits are the order-preserving bits of
    the key, complemented for descending order (-0.0 folded into +0.0 so they tie, as on the
    device), the low 32 bits the position.
    """
    b = (key + np.float32(0)).view(np.uint32).astype(np.uint64)   # -0.0 + 0.0 == +0.0
    sign = np.uint64(0x80000000)
    ok = np.where(b >= sign, np.uint64(0xFFFFFFFF) - b, b + sign)
    comp = ((np.uint64(0xFFFFFFFF) - ok) << np.uint64(32)) | np.arange(key.shape[0], dtype=np.uint64)
    return (np.sort(comp) & np.uint64(0xFFFFFFFF)).astype(np.intp)


def _row(lg, T, k, p, mp, seed, pos, order):
    """Token, logprob, status, on_boundary for one float32 row."""
    finite = np.isfinite(lg)
    if not finite.any():
        return -1, math.nan, STATUS_NO_FINITE, False
    idx = np.flatnonzero(finite)
    lf = lg[idx]
    m = lf.max()
    l64 = lf.astype(np.float64)
    lse = float(m) + math.log(np.exp(l64 - float(m)).sum())
    if T == 0:
        tok = int(idx[np.argmax(lf)])  # np.argmax returns the first (lowest index) maximum
        return tok, float(lg[tok]) - lse, STATUS_OK, False
    inv_t = np.float32(1) / np.float32(T)
    with np.errstate(over="ignore"):   # a scaled logit may overflow to +-inf: still a candidate
        s = (lf * inv_t).astype(np.float32)
    key = lf if order == "llama" else s
    perm = _order(key)
    nv = idx.shape[0]
    near = False
    log_mp = math.log(mp) if mp > 0 else -math.inf
    if order == "llama":
        K = min(k, nv) if k > 0 else nv
        L = K
        if p < 1:
            q, risk = mass_units(lf[perm[:K]], m)
            L, near_p = _topp_prefix(q, risk, K, p)
            near |= near_p
        if mp > 0:
            thr = minp_threshold(m, mp)
            M = int((l64 >= thr).sum())
            near |= _minp_near(l64, thr, log_mp)
            L = min(L, M)
    else:
        smax = float(s.max())
        s64 = s.astype(np.float64)
        M = nv
        if mp > 0:
            thr = minp_threshold(smax, mp)
            M = int((s64 >= thr).sum())
            near |= _minp_near(s64, thr, log_mp)
        K = min(k, M) if k > 0 else M
        L = K
        if p < 1:
            q, risk = mass_units(s[perm[:K]], smax)
            L, near_p = _topp_prefix(q, risk, K, p)
            near |= near_p
    surv = perm[:L]
    g = (s[surv] + philox.token_gumbel(seed, pos, idx[surv])).astype(np.float32)
    best = g.max()
    tok = int(idx[surv][g == best].min())
    if L > 1:
        second = np.partition(g, -2)[-2]
        # A tie in g is decided by index on both sides, so only a near (not exact) tie is fragile;
        # an exact tie still counts, since one ulp of logf could break it either way.
        if float(best) - float(second) <= GUMBEL_MARGIN * max(1.0, abs(float(best))):
            near = True
    return tok, float(lg[tok]) - lse, STATUS_OK, near


def sample_with_margin(logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=0,
                       position=0, order="llama", dtype=None):
    """Reference sampling that also reports which rows sit on a rounding boundary.

    Parameters
    ----------
    logits : array_like, shape (n_rows, n_vocab)
        float32, float16 or bfloat16 (see module notes).
    temperature, top_k, top_p, min_p, seed, position : scalar or array of length n_rows
        As in SPEC §2.
    order : {"llama", "vllm"}
    dtype : {None, "bfloat16"}
        Marks a uint16 array as bfloat16 bit patterns.

    Returns
    -------
    tokens : numpy.ndarray of int32
    logprobs : numpy.ndarray of float32
        log-softmax of the raw row (T = 1) at the token; NaN where the token is -1.
    status : numpy.ndarray of int32
        0 ok, :data:`STATUS_NO_FINITE` where no logit is finite.
    on_boundary : numpy.ndarray of bool
        Rows whose reference result is within rounding of a boundary: a Gumbel near-tie
        (:data:`GUMBEL_MARGIN`), a top-p crossing that one-unit differences on the at-risk
        masses could move (see :func:`mass_units`), or a key within a few ulps of a min-p
        threshold with ``log(min_p) != 0``; the device may legitimately differ there. Top-k
        is exact (ties go to the lower index everywhere) and is never flagged.

    Examples
    --------
    >>> tok, lp, st, near = sample_with_margin(np.zeros((1, 4), np.float32), seed=1, position=0)
    >>> int(st[0]), bool(0 <= tok[0] < 4)
    (0, True)
    """
    if order not in ("llama", "vllm"):
        raise ValueError(f"order: expected 'llama' or 'vllm', got {describe(order)}")
    lg = widen(logits, dtype)
    if lg.ndim != 2:
        raise ValueError(f"logits: expected a 2-D array, got a {lg.ndim}-D array of shape {lg.shape}")
    n_rows = lg.shape[0]
    T = _rows_param(temperature, n_rows, np.float32)
    K = _rows_param(top_k, n_rows, np.int64)
    P = _rows_param(top_p, n_rows, np.float32)
    MP = _rows_param(min_p, n_rows, np.float32)
    S = _rows_param(seed, n_rows, np.uint64)
    POS = _rows_param(position, n_rows, np.uint64)
    tokens = np.empty(n_rows, np.int32)
    logprobs = np.empty(n_rows, np.float32)
    status = np.empty(n_rows, np.int32)
    near = np.empty(n_rows, bool)
    for r in range(n_rows):
        t, lp, st, nb = _row(lg[r], float(T[r]), int(K[r]), float(P[r]), float(MP[r]),
                             S[r], POS[r], order)
        tokens[r], logprobs[r], status[r], near[r] = t, lp, st, nb
    return tokens, logprobs, status, near


def sample(logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=0, position=0,
           order="llama", return_logprobs=False, return_status=False, dtype=None):
    """Reference ``rocsample.sample``: tokens (and logprobs / status on request).

    Returns
    -------
    tokens, or (tokens, logprobs), or (tokens, [logprobs,] status) with ``return_status``.
    """
    tok, lp, st, _ = sample_with_margin(logits, temperature=temperature, top_k=top_k,
                                        top_p=top_p, min_p=min_p, seed=seed,
                                        position=position, order=order, dtype=dtype)
    out = (tok,)
    if return_logprobs:
        out += (lp,)
    if return_status:
        out += (st,)
    return out[0] if len(out) == 1 else out


def argmax(logits, *, return_logprobs=False, return_status=False, dtype=None):
    """Reference greedy: the lowest index among the maximal finite logits (-1 if none)."""
    return sample(logits, temperature=0.0, return_logprobs=return_logprobs,
                  return_status=return_status, dtype=dtype)
