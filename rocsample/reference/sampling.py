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
  ``s_i >= s_max + log(min_p)``.
* bfloat16 logits: pass a ``numpy.uint16`` array of bfloat16 bit patterns with
  ``dtype="bfloat16"``, or an ``ml_dtypes.bfloat16`` array (detected by dtype name), or a
  CPU torch tensor of dtype ``torch.bfloat16``. float16 is widened by NumPy exactly.
"""

from __future__ import annotations

import math

import numpy as np

from rocsample.reference import philox

__all__ = ["sample", "sample_with_margin", "argmax", "widen", "STATUS_OK", "STATUS_NO_FINITE",
           "GUMBEL_MARGIN", "TOP_P_MARGIN"]

STATUS_OK = 0
#: The row had no finite logit; its token is -1.
STATUS_NO_FINITE = 1

#: Relative gap between the best and second-best Gumbel score under which a row is a near-tie.
#: Device ``logf`` may differ from NumPy's float32 log by an ulp, which moves ``g`` by a few
#: ulps of ``|g|``; 2**-20 (8 ulps) covers that.
GUMBEL_MARGIN = 2.0 ** -20
#: Top-p: cumulative mass within this fraction of the kept mass from the threshold.
TOP_P_MARGIN = 1e-5
#: min-p: a logit within this relative distance of the threshold (float32 rounding, twice).
MIN_P_MARGIN = 2.0 ** -22


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


def _topp_prefix(q_sorted: np.ndarray, K: int, p: float):
    """Smallest prefix of the first K masses whose cumulative mass reaches p * Z_K.

    Returns (length, on_boundary).
    """
    cum = np.cumsum(q_sorted[:K])
    z = cum[-1]
    target = float(p) * z
    P = int(np.searchsorted(cum, target, side="left")) + 1
    P = min(max(P, 1), K)
    tol = TOP_P_MARGIN * z
    near = abs(cum[P - 1] - target) <= tol or (P >= 2 and abs(cum[P - 2] - target) <= tol)
    return P, bool(near)


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
    s = (lf * inv_t).astype(np.float32)
    key = lf if order == "llama" else s
    # Sort by key descending, index ascending: lexsort's last key is primary and it is stable.
    perm = np.lexsort((idx, -key.astype(np.float64)))
    nv = idx.shape[0]
    near = False
    log_mp = math.log(mp) if mp > 0 else -math.inf
    if order == "llama":
        K = min(k, nv) if k > 0 else nv
        L = K
        if p < 1:
            q = np.exp(l64[perm] - float(m))
            L, near_p = _topp_prefix(q, K, p)
            near |= near_p
        if mp > 0:
            thr = float(m) + log_mp
            M = int((l64 >= thr).sum())
            near |= bool((np.abs(l64 - thr) <= MIN_P_MARGIN * max(1.0, abs(thr))).any())
            L = min(L, M)
    else:
        smax = float(s.max())
        s64 = s.astype(np.float64)
        M = nv
        if mp > 0:
            thr = smax + log_mp
            M = int((s64 >= thr).sum())
            near |= bool((np.abs(s64 - thr) <= MIN_P_MARGIN * max(1.0, abs(thr))).any())
        K = min(k, M) if k > 0 else M
        L = K
        if p < 1:
            q = np.exp(s64[perm] - smax)
            L, near_p = _topp_prefix(q, K, p)
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
        Rows whose reference result is within rounding of a boundary (Gumbel near-tie,
        top-p mass within 1e-5 of the threshold, a logit within float32 rounding of the
        min-p threshold); the device may legitimately differ there.

    Examples
    --------
    >>> tok, lp, st, near = sample_with_margin(np.zeros((1, 4), np.float32), seed=1, position=0)
    >>> int(st[0]), bool(0 <= tok[0] < 4)
    (0, True)
    """
    if order not in ("llama", "vllm"):
        raise ValueError(f"order: expected 'llama' or 'vllm', got {order!r}")
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
