"""Token sampling on the GPU (SPEC §2): ``sample``, ``argmax`` and the ``Sampler`` plan.

Two launch plans, chosen per call from the parameters (both give the same tokens):

* **fast** (``rocsample.kernels.sampling_fast``): two kernels, phase 1 and phase 2, when every
  parameter is a host value and every row is greedy, temperature-only, or has
  ``0 < top_k <= 256`` (with any top_p, min_p and order). Top-k rows keep per-tile maxima in
  phase 1; phase 2 takes a threshold from a histogram of those maxima that at least k tokens
  pass, gathers the tokens above it (a few percent of the row), ranks them and applies the
  filters and the draw there.
* **general** (``rocsample.kernels.sampling``): everything else (top_p or min_p without a small
  top_k, device parameter arrays, top_k > 256): radix selects over the whole row.

Reads of the logits per call (``n_rows * n_vocab`` elements each), by what the rows ask for:

==========================================  =====================================================
mode                                        reads of the logits
==========================================  =====================================================
greedy (temperature 0), ``argmax``          1 (fast: phase 1 + phase 2)
temperature only                            1 (fast)
top_k <= 256 (+ top_p, min_p, either order) 1 + the gathered tiles, about ``k / tiles`` of the row
                                            (fast); 5 more single-block passes over a row whose
                                            candidates or qualifying tiles overflow (sorted or
                                            heavily tied rows)
min_p (with or without temperature)         2 (general: stats, draw)
top_k > 256                                 5 (general: stats, 3 radix passes, draw) + 1 if the
                                            k-th key is tied and the ties are cut
top_p alone                                 5 (general) + 1 on a cut tie
top_k > 256 + top_p (+ min_p), either order 8 (general, +1 per cut tie)
==========================================  =====================================================

A pass that no row needs is not launched when the parameters are host values; with device
parameter arrays every pass is launched and rows that need nothing leave at once. The radix
passes only histogram the tokens still in play but still stream the row (no compaction yet).

Exactness and determinism: winners are chosen by exact comparisons (index tie-breaks) and the
top-p masses are fixed-point integer sums, so tokens never depend on the split count, the
block size, the stream or atomic order. See ``rocsample.kernels.sampling`` for the scheme.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from rocsample import _validate as V
from rocsample import graphs as _graphs
from rocsample.errors import SamplingError
from rocsample.kernels import sampling as K
from rocsample.kernels import sampling_fast as KF

__all__ = ["sample", "argmax", "Sampler"]

_BLOCK = 256
_MAX_SPLITS = 1024
#: Each split should stream at least this many elements (amortises its partial and launch).
_MIN_PER_SPLIT = 1024
_BLOCKS_PER_CU = 8
_ALIGN = 256
#: Host-parameter device copies a plan keeps (see Sampler._host_param).
_PARAM_CACHE = 32
_ORDERS = ("llama", "vllm")
_LOGIT_DTYPES = ("float32", "float16", "bfloat16")
#: The kernels' namespace per logits dtype (rocsample.kernels.sampling.build): float16 and
#: bfloat16 logits reach the kernels as uint16 bit patterns, widened there exactly.
_KERNEL_VARIANT = {"float32": "float", "float16": "f16", "bfloat16": "bf16"}


def _backend():
    from rocsample.backends import get_backend

    return get_backend()


def _dtype_name(obj, dtype=None) -> str:
    name = V.dtype_of(obj)
    if dtype == "bfloat16" and name == "uint16":
        return "bfloat16"
    return name


def _choose_splits(n_rows: int, n_vocab: int, cus: int, block: int) -> int:
    """Enough (split x row) blocks to fill the device, none streaming too little."""
    want = max(1, -(-_BLOCKS_PER_CU * cus // max(n_rows, 1)))
    most = max(1, n_vocab // max(_MIN_PER_SPLIT, block))
    return int(max(1, min(want, most, _MAX_SPLITS)))


_FAST_ENTRIES = 8
_DEVICE_TYPES: set = set()
_SCALARS = (bool, int, float, str, type(None))


def _fast_key(values, flags):
    """A key under which a call can reuse bound launches, or None.

    Scalars key by value; device arrays by identity (their shape, dtype and address cannot
    change under the same object). Host arrays never key: their values can change in place.
    """
    parts = []
    for v in values:
        tv = type(v)
        if tv in _DEVICE_TYPES:
            parts.append(("dev", id(v)))
        elif isinstance(v, _SCALARS):
            parts.append((tv, v))
        elif isinstance(v, np.generic):
            parts.append((tv, v.item()))
        elif isinstance(v, np.ndarray) or not hasattr(v, "__cuda_array_interface__"):
            return None
        else:
            _DEVICE_TYPES.add(tv)  # building the interface dict each call costs microseconds
            parts.append(("dev", id(v)))
    return (tuple(parts), flags)


def _u64_rows(be, name, value, n_rows, stream):
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


def _host_params(be, n, temperature, top_k, top_p, min_p, stream):
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


class Sampler:
    """A sampling plan bound to (n_rows, n_vocab, dtype, stream): scratch reserved up front.

    Parameters
    ----------
    n_rows, n_vocab : int
        Logits shape.
    dtype : {"float32", "float16", "bfloat16"}
        Logits dtype (bfloat16: ml_dtypes/torch bfloat16, or uint16 bit patterns).
    stream : optional
        Backend stream, raw handle, object with ``.cuda_stream``, or None (default stream).
    order : {"llama", "vllm"}
        Filter order (SPEC §2).
    filters : bool
        Reserve the radix-select histograms (needed for top_k / top_p); ``False`` keeps the
        plan small for greedy / temperature / min_p use and raises if a call needs them.

    Notes
    -----
    Scratch comes from ``rocsample.scratch`` for this (device, stream) and is requested in the
    constructor (``prewarm``), so calls inside a CUDA/HIP graph capture allocate nothing as long
    as every parameter is a device array or a host value this plan has already used outside
    capture (its device copy is cached; a new host value needs a copy, which capture forbids).
    Outputs of a call (tokens, logprobs, status) are device buffers owned by the plan and
    overwritten by the next call unless ``out=`` is given for the tokens. Calls never synchronize unless ``check=True`` (the default of ``sample``).

    Examples
    --------
    >>> plan = Sampler(8, 32000, "float32")                      # doctest: +SKIP
    >>> tok = plan(logits, temperature=0.8, top_p=0.95, seed=seeds, position=pos)  # doctest: +SKIP
    """

    def __init__(self, n_rows: int, n_vocab: int, dtype: str = "float32", *, stream=None,
                 order: str = "llama", filters: bool = True, _splits: int | None = None,
                 _block: int | None = None, _cap: int | None = None,
                 _path: str | None = None) -> None:
        self.n_rows = V.check_int("n_rows", n_rows, 1)
        self.n_vocab = V.check_int("n_vocab", n_vocab, 1, 2**31 - 1)
        if dtype not in _LOGIT_DTYPES:
            V.fail("dtype", " or ".join(_LOGIT_DTYPES), V.describe(dtype), TypeError)
        if order not in _ORDERS:
            V.fail("order", "'llama' or 'vllm'", V.describe(order))
        self.dtype = dtype
        self.order = order
        self.filters = bool(filters)
        self.backend = be = _backend()
        self._stream_arg = stream
        self._outputs = None
        if not be.is_device:
            self.stream = be.stream(stream)
            self.prewarm()
            return
        self.stream = st = be.stream(stream)
        warp = int(be.warp_size(st.device))
        block = _BLOCK if _block is None else V.check_int("_block", _block, 1, K.MAX_BLOCK)
        if block % warp or block > K.MAX_BLOCK:
            V.fail("_block", f"a multiple of the wavefront size {warp} up to {K.MAX_BLOCK}", block)
        self.block = block
        # Per-row phase-2 blocks: the same size as phase 1 (a warp multiple, any wave size).
        self.final_block = block
        if _splits is None:
            splits = _choose_splits(self.n_rows, self.n_vocab, int(be.compute_units(st.device)),
                                    block)
        else:
            splits = V.check_int("_splits", _splits, 1, min(_MAX_SPLITS, self.n_vocab))
        self.splits = splits
        self.chunk = -(-self.n_vocab // splits)
        # Fast path (rocsample.kernels.sampling_fast): power-of-two blocks; tiles per split so
        # that a row has at most GMAX tile maxima.
        self._path = _path
        if _path not in (None, "fast", "general"):
            V.fail("_path", "None, 'fast' or 'general'", V.describe(_path))
        self._fast_ok = block & (block - 1) == 0 and _path != "general"
        # (and, above 4 * KCAP tiles, at least TILE_MIN tokens per tile: smaller tiles only
        # cost the finalize block more histogram work for no shorter gather)
        tpt = block
        while tpt > 1 and (splits * tpt > KF.GMAX
                           or (self.chunk < KF.TILE_MIN * tpt and splits * tpt > 4 * KF.KCAP)):
            tpt //= 2
        self.tpt = tpt
        self.cap = KF.CAND_MAX if _cap is None else V.check_int("_cap", _cap, 1, KF.CAND_MAX)
        self.fast_final_block = (block if _block is not None or be.name == "sim"
                                 else KF.MAX_BLOCK)
        r, s = self.n_rows, splits
        layout = [("pf", np.float32, (r, s, K.N_PF)), ("pi", np.int64, (r, s, K.N_PI)),
                  ("si", np.int64, (r, K.N_SI)), ("sf", np.float64, (r, K.N_SF)),
                  ("tm", np.float32, (r, s * tpt))]
        if self.filters:
            layout += [("hist_n", np.int64, (r, K.NBINS)), ("hist_q", np.int64, (r, K.NBINS))]
        off = 0
        self._layout = []
        for name, dt, shape in layout:
            nbytes = int(np.prod(shape)) * np.dtype(dt).itemsize
            self._layout.append((name, dt, shape, off, nbytes))
            off += -(-nbytes // _ALIGN) * _ALIGN
        self.scratch_bytes = off
        self._purpose = "sample"
        self._ns = be.kernels(K.build)
        self._radix = K.RADIX_PASSES_SMALL if be.name == "sim" else K.RADIX_PASSES
        self._nbins = 1 << max(w for _, w in self._radix)
        self._kern = getattr(self._ns, _KERNEL_VARIANT[dtype])
        self._param_cache: dict = {}
        self._outputs = None
        self._view_cache = None
        self._fast: dict = {}
        self._seen: dict = {}
        self.prewarm()

    def prewarm(self) -> None:
        """Reserve this plan's scratch on its stream and its output buffers (no-op on ``cpu``).

        The constructor calls it; call it again after ``rocsample.scratch`` trimmed the stream,
        or before capturing on a stream whose scratch went to an earlier graph.
        """
        be = self.backend
        if not be.is_device:
            if self._outputs is None:
                n = self.n_rows
                self._outputs = (np.empty(n, np.int32), np.empty(n, np.float32), np.empty(n, np.int32))
            return
        from rocsample import scratch

        scratch.prewarm(self.stream, {self._purpose: self.scratch_bytes})
        if self._outputs is None:
            n = self.n_rows
            self._outputs = (be.empty((n,), np.int32, self.stream),
                             be.empty((n,), np.float32, self.stream),
                             be.empty((n,), np.int32, self.stream))

    # ---------------------------------------------------------------------------------------
    def _host_param(self, name, host):
        """Device copy of a host parameter, reused while the same values come back.

        Repeated calls with the same host values (the usual scalars) then cost no copy, and a
        warmed plan can be captured with them. The cached arrays are never written.
        """
        key = (name, host.dtype.str, host.tobytes())
        arr = self._param_cache.get(key)
        if arr is None:
            if len(self._param_cache) >= _PARAM_CACHE:
                self._param_cache.clear()
            arr = self._param_cache[key] = self.backend.as_array(host, name, self.stream)
        return arr

    def _views(self):
        from rocsample import scratch

        buf = scratch.request(self.stream, self.scratch_bytes, purpose=self._purpose)
        if self._view_cache is not None and self._view_cache[0] is buf:
            return self._view_cache[1], buf
        views = {}
        for name, dt, shape, off, nbytes in self._layout:
            views[name] = buf[off:off + nbytes].view(dt).reshape(shape)
        self._view_cache = (buf, views)
        return views, buf

    def _check_logits(self, logits, dtype):
        be = self.backend
        if not (isinstance(logits, np.ndarray) or be.is_device_array(logits)
                or type(logits).__module__.startswith("torch")):
            V.fail("logits", "a NumPy array or a device array", V.describe(logits), TypeError)
        name, shape = _logits_kind(logits, dtype)
        if name != self.dtype:
            V.fail("logits", f"dtype {self.dtype} (this plan's)", name, TypeError)
        if shape != (self.n_rows, self.n_vocab):
            V.fail("logits", f"shape {(self.n_rows, self.n_vocab)} (this plan's)", shape)

    def __call__(self, logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed,
                 position, return_logprobs: bool = False, advance_position: bool = False,
                 check: bool = True, out=None, dtype: str | None = None):
        """Sample one token per row; see :func:`sample` for the parameters."""
        be = self.backend
        keep = (logits, temperature, top_k, top_p, min_p, seed, position, out)
        fast_key = _fast_key(keep, (return_logprobs, advance_position, dtype)) if be.is_device else None
        if fast_key is not None:
            hit = self._fast.get(fast_key)
            if hit is not None:
                from rocsample import scratch

                buf = scratch.request(self.stream, self.scratch_bytes, purpose=self._purpose)
                if buf is hit[0]:
                    for launch in hit[1]:
                        launch()
                    _graphs.hold(self.stream, hit)  # under a capture: the graph keeps them
                    tokens, logprobs, status = hit[2]
                    return self._finish(tokens if out is None else out, logprobs, status,
                                        return_logprobs, check)
                del self._fast[fast_key]  # the stream's scratch moved (growth, trim, a graph took it)
        n, nv = self.n_rows, self.n_vocab
        self._check_logits(logits, dtype)
        st = self.stream
        if not be.is_device:
            return self._call_cpu(logits, temperature, top_k, top_p, min_p, seed, position,
                                  return_logprobs, advance_position, check, out, dtype)
        (temp_h, temp_d), (k_h, k_d), (p_h, p_d), (mp_h, mp_d) = _host_params(
            be, n, temperature, top_k, top_p, min_p, st)
        seed_v, seed_dev = _u64_rows(be, "seed", seed, n, st)
        pos_v, pos_dev = _u64_rows(be, "position", position, n, st)
        if advance_position and not pos_dev:
            V.fail("position", "a device array when advance_position=True",
                   "a host value (it could not be advanced in place)")
        if isinstance(logits, np.ndarray) and not logits.flags.c_contiguous:
            logits = np.ascontiguousarray(logits)  # it is copied to the device anyway
        x = be.as_array(logits, "logits", st)
        if self.dtype == "float16":
            x = x.view(np.uint16)  # numba-hip has no float16 type: the f16 kernels widen the bits
        strides = getattr(x, "strides", None)
        itemsize = 4 if self.dtype == "float32" else 2
        if strides is not None and nv > 1 and int(strides[1]) != itemsize:
            V.fail("logits", "rows with unit element stride (a row stride is fine)",
                   f"strides {tuple(strides)}")
        if be.array_device(x) != st.device:
            V.fail("stream", f"a stream on device {be.array_device(x)} (where logits live)",
                   f"a stream on device {st.device}")
        for name, arr in (("temperature", temp_d), ("top_k", k_d), ("top_p", p_d),
                          ("min_p", mp_d), ("seed", seed_v if seed_dev else None),
                          ("position", pos_v if pos_dev else None)):
            if arr is not None:
                self._check_array_device(name, arr)
        need_k, need_p = self._check_filters(nv, k_h, k_d, p_h, p_d)
        need_mp = mp_d is not None or bool((mp_h > 0).any())
        if need_p and nv > K.MAX_VOCAB_TOP_P:
            V.fail("logits", f"n_vocab <= {K.MAX_VOCAB_TOP_P} with top_p < 1 (fixed-point mass)",
                   nv)
        dev = {}
        for name, h, d in (("temperature", temp_h, temp_d), ("top_k", k_h, k_d),
                           ("top_p", p_h, p_d), ("min_p", mp_h, mp_d)):
            dev[name] = d if d is not None else self._host_param(name, h)
        seed_a = seed_v if seed_dev else self._host_param("seed", seed_v)
        pos_a = pos_v if pos_dev else self._host_param("position", pos_v)
        if out is not None:
            tokens = be.as_array(out, "out", st, copy_host=False)
            if tuple(tokens.shape) != (n,) or str(tokens.dtype) != "int32":
                V.fail("out", f"an int32 device array of shape ({n},)", V.describe(out), TypeError)
            self._check_array_device("out", tokens)
        else:
            tokens = self._outputs[0]
        logprobs, status = self._outputs[1], self._outputs[2]
        w, buf = self._views()
        kn = self._kern
        S, B, FB = self.splits, self.block, self.final_block
        vllm = 1 if self.order == "vllm" else 0
        want_lp = 1 if return_logprobs else 0
        rows_grid = max(1, -(-n // B))
        L = []  # (kernel, grid, block, args): the whole call, in stream order
        route = self._route(nv, temp_h, k_h, p_h, mp_h)
        if route is not None:
            draw, any_topk = route
            L.append((kn.fast.partials(draw, want_lp), (S, n), B,
                      (x, nv, self.chunk, dev["temperature"], dev["top_k"], seed_a, pos_a,
                       self.tpt, w["pf"], w["pi"], w["tm"])))
            L.append((kn.fast._sample_finalize_fast_kernel, n, self.fast_final_block,
                      (x, nv, S, self.chunk, self.tpt, self.cap, dev["temperature"],
                       dev["top_k"], dev["top_p"], dev["min_p"], vllm, seed_a, pos_a, want_lp,
                       1 if any_topk else 0, w["pf"], w["pi"], w["tm"], tokens, logprobs,
                       status)))
        else:
            self._general(L, kn, x, nv, n, S, B, FB, rows_grid, vllm, want_lp, dev, seed_a,
                          pos_a, w, tokens, logprobs, status, need_k, need_p, need_mp)
        if advance_position:
            L.append((self._ns._advance_position_kernel, rows_grid, B, (pos_a, n)))
        for kernel, grid, block, args in L:
            be.launch(kernel, grid, block, st, *args)
        # under a capture, the graph keeps what its kernels address (cached parameter copies,
        # outputs) however this plan's caches change later
        _graphs.hold(st, L)
        result = tokens if out is None else out  # the caller's own object, not our view of it
        if fast_key is not None and be.name != "sim":
            # bound on the second call with the same arguments: binding costs a millisecond,
            # and a key seen once (a host position that changes every step) never pays it
            if self._seen.pop(fast_key, False):
                self._remember(fast_key, buf, L, (tokens, logprobs, status), keep)
            else:
                if len(self._seen) >= 4 * _FAST_ENTRIES:
                    self._seen.clear()
                self._seen[fast_key] = True
        return self._finish(result, logprobs, status, return_logprobs, check)

    def _check_array_device(self, name, arr):
        """A device array argument must live on the stream's device (no cross-device reads)."""
        d = self.backend.array_device(arr)
        if d != self.stream.device:
            V.fail(name, f"an array on device {self.stream.device} (the stream's)",
                   f"an array on device {d}")

    def _check_filters(self, nv, k_h, k_d, p_h, p_d):
        """(need_k, need_p); a plan built with ``filters=False`` refuses rows that need them."""
        need_k = k_d is not None or bool(((k_h > 0) & (k_h < nv)).any())
        need_p = p_d is not None or bool((p_h < 1).any())
        if (need_k or need_p) and not self.filters:
            V.fail("top_k/top_p", "no top-k/top-p on a plan built with filters=False",
                   "an active filter")
        return need_k, need_p

    def _route(self, nv, temp_h, k_h, p_h, mp_h):
        """(draw, any_topk) when the two-kernel fast path serves every row, else None.

        Needs host parameters (the kernels are chosen from them) and each row greedy,
        temperature-only, or with ``0 < top_k <= KCAP`` (any top_p / min_p / order).
        """
        if not self._fast_ok or temp_h is None or k_h is None or p_h is None or mp_h is None:
            if self._path == "fast":
                V.fail("_path", "host parameters for the fast path", "a device parameter array")
            return None
        greedy = temp_h == 0
        kon = (k_h > 0) & (k_h < nv)
        topk = ~greedy & kon & (k_h <= KF.KCAP)
        race = ~greedy & ~kon & (p_h >= 1) & (mp_h <= 0)
        if not bool((greedy | topk | race).all()):
            if self._path == "fast":
                V.fail("_path", "rows the fast path serves", "a top_p/min_p row without top_k")
            return None
        return bool(race.any()), bool(topk.any())

    def _general(self, L, kn, x, nv, n, S, B, FB, rows_grid, vllm, want_lp, dev, seed_a, pos_a,
                 w, tokens, logprobs, status, need_k, need_p, need_mp):
        """The general path's launches (stats, radix selects, draw) appended to ``L``."""
        L.append((kn._sample_partials_kernel, (S, n), B,
                  (x, nv, self.chunk, dev["temperature"], dev["top_k"], dev["top_p"],
                   dev["min_p"], seed_a, pos_a, want_lp, w["pf"], w["pi"])))
        need_sel = need_k or need_p
        hn = w["hist_n"] if need_sel else w["si"]
        hq = w["hist_q"] if need_sel else w["si"]
        L.append((kn._sample_finalize_kernel, n, FB,
                  (x, nv, S, dev["temperature"], dev["top_k"], dev["top_p"], dev["min_p"], vllm,
                   w["pf"], w["pi"], tokens, logprobs, status, w["si"], w["sf"],
                   self._nbins if need_sel else 0, hn, hq)))
        if need_sel:
            phases = ([False] if need_k else []) + ([True] if need_p else [])
            for is_p in phases:
                if is_p:
                    L.append((kn._select_begin_kernel, rows_grid, B, (dev["top_p"], nv, w["si"])))
                for pi_, (shift, width) in enumerate(self._radix):
                    first = pi_ == 0
                    last = pi_ == len(self._radix) - 1
                    L.append((kn._select_hist_kernel, (S, n), B,
                              (x, nv, self.chunk, shift, width, first, w["si"], w["sf"], hn, hq)))
                    L.append((kn._select_step_kernel, n, FB,
                              (nv, width, first, last, dev["top_p"], w["si"], w["sf"], hn, hq)))
                L.append((kn._tie_cut_kernel, n, FB, (x, nv, w["si"], w["sf"])))
        if need_k or need_p or need_mp:
            L.append((kn._draw_partials_kernel, (S, n), B,
                      (x, nv, self.chunk, seed_a, pos_a, w["si"], w["sf"], w["pf"], w["pi"])))
            L.append((kn._draw_finalize_kernel, n, FB,
                      (x, nv, S, w["si"], w["sf"], w["pf"], w["pi"], tokens, logprobs, status)))

    def capture(self, logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed, position,
                return_logprobs: bool = False, advance_position: bool = True, out=None):
        """Capture one call of this plan as a replayable graph (a decode step).

        ``logits``, ``seed`` and ``position`` must be device arrays: they are the graph's fixed
        inputs, refilled between replays by stream-ordered copies
        (:func:`rocsample.graphs.copy_to_device`). With ``advance_position=True`` every replay
        increments the device positions after its draw. Scalar filter parameters are baked in.

        Returns
        -------
        rocsample.graphs.Graph
            With ``outputs = (tokens, logprobs, status)``, device arrays the replays write.

        Raises
        ------
        TypeError
            If logits, seed or position is not a device array.
        ScratchNotWarmed, CaptureError
            As :func:`rocsample.graphs.capture`.

        Examples
        --------
        >>> g = plan.capture(x_dev, seed=seeds_dev, position=pos_dev, top_p=0.9)  # doctest: +SKIP
        >>> for _ in range(steps):                                                # doctest: +SKIP
        ...     graphs.copy_to_device(x_dev, next_logits, stream); g.replay()
        """
        from rocsample import graphs

        be = self.backend
        for name, v in (("logits", logits), ("seed", seed), ("position", position)):
            if not be.is_device_array(v) if be.is_device else not isinstance(v, np.ndarray):
                V.fail(name, "a device array (a graph input refilled between replays)",
                       V.describe(v), TypeError)
        kw = dict(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, seed=seed,
                  position=position, return_logprobs=return_logprobs, out=out, check=False)
        self.prewarm()
        self(logits, advance_position=False, **kw)  # compiles and puts host parameters on device
        self.prewarm()
        with graphs.capture(self.stream) as g:
            res = self(logits, advance_position=advance_position, **kw)
        g.outputs = (res[0], self._outputs[1], res[-1])
        return g

    def _remember(self, key, buf, launches, outputs, keep) -> None:
        """Keep this call's launches, bound, for the next call with the same arguments."""
        if len(self._fast) >= _FAST_ENTRIES:
            self._fast.clear()
        be, st = self.backend, self.stream
        bound = [be.bind(k, g, b, st, *a) for k, g, b, a in launches]
        # `keep` holds every object whose identity is in the key, so no id is reused meanwhile
        self._fast[key] = (buf, bound, outputs, keep)

    def _finish(self, tokens, logprobs, status, return_logprobs, check):
        if check:
            st_h = np.asarray(self.backend.to_host(status, self.stream))
            bad = np.flatnonzero(st_h != K.STATUS_OK)
            if bad.size:
                rows = [int(r) for r in bad]
                shown = ", ".join(map(str, rows[:16])) + (" ..." if len(rows) > 16 else "")
                raise SamplingError(
                    f"logits: expected at least one finite logit per row, got none in "
                    f"{len(rows)} row(s): {shown}", rows=rows, status=st_h)
            return (tokens, logprobs) if return_logprobs else tokens
        return (tokens, logprobs, status) if return_logprobs else (tokens, status)

    def _call_cpu(self, logits, temperature, top_k, top_p, min_p, seed, position,
                  return_logprobs, advance_position, check, out, dtype):
        from rocsample.reference import sampling as R

        n = self.n_rows
        be = self.backend
        if be.is_device_array(logits):
            V.fail("logits", "a NumPy array (the cpu backend has no device memory)",
                   V.describe(logits), TypeError)
        # the same checks as the device path (device arrays refused, naming the argument)
        (temperature, _), (top_k, _), (top_p, _), (min_p, _) = _host_params(
            be, n, temperature, top_k, top_p, min_p, self.stream)
        self._check_filters(self.n_vocab, top_k, None, top_p, None)
        _u64_rows(be, "seed", seed, n, self.stream)  # validate now, read at run time
        _u64_rows(be, "position", position, n, self.stream)
        if advance_position and not isinstance(position, np.ndarray):
            V.fail("position", "a NumPy array when advance_position=True on the cpu backend",
                   V.describe(position))
        if out is not None:
            if be.is_device_array(out):
                V.fail("out", "a NumPy array (the cpu backend has no device memory)",
                       V.describe(out), TypeError)
            out = np.asarray(out)
            if out.shape != (n,) or out.dtype != np.int32:
                V.fail("out", f"an int32 array of shape ({n},)", V.describe(out), TypeError)
        if self._outputs is None:
            self._outputs = (np.empty(n, np.int32), np.empty(n, np.float32), np.empty(n, np.int32))
        tokens = out if out is not None else self._outputs[0]
        logprobs, status = self._outputs[1], self._outputs[2]

        def work():
            # seeds and positions are read when the work runs, so graph replays see the values
            # copied in between (the emulated capture records this closure)
            seed_v, _ = _u64_rows(self.backend, "seed", seed, n, self.stream)
            pos_v, _ = _u64_rows(self.backend, "position", position, n, self.stream)
            tok, lp, stat, _ = R.sample_with_margin(
                logits, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                seed=seed_v, position=pos_v, order=self.order, dtype=dtype)
            tokens[...] = tok
            logprobs[...] = lp
            status[...] = stat
            if advance_position:
                position[...] += 1

        self.backend.enqueue(self.stream, work)
        return self._finish(tokens, logprobs, status, return_logprobs, check)


def _logits_kind(logits, dtype) -> tuple[str, tuple[int, ...]]:
    """The dtype name and shape of a 2-D float logits array, or the error naming ``logits``."""
    if dtype is not None and dtype not in _LOGIT_DTYPES:
        V.fail("dtype", "None, " + " or ".join(map(repr, _LOGIT_DTYPES)), V.describe(dtype), TypeError)
    if not hasattr(logits, "shape"):
        V.fail("logits", "an array", V.describe(logits), TypeError)
    V.check_ndim("logits", logits, 2)
    name = _dtype_name(logits, dtype)
    if name not in _LOGIT_DTYPES:
        V.fail("logits", "float32, float16 or bfloat16 (or uint16 with dtype='bfloat16')", name,
               TypeError)
    if dtype is not None and name != dtype:
        V.fail("logits", f"{dtype} logits (dtype={dtype!r}"
               + (", or uint16 bit patterns)" if dtype == "bfloat16" else ")"), name, TypeError)
    return name, tuple(int(d) for d in logits.shape)


def _plan_for(logits, dtype, stream, order, splits=None, block=None, cap=None,
              path=None) -> Sampler:
    name, (n_rows, n_vocab) = _logits_kind(logits, dtype)
    if n_vocab < 1:
        V.fail("logits", "at least one column (n_vocab >= 1)", f"shape {(n_rows, n_vocab)}")
    if n_rows < 1:
        V.fail("logits", "at least one row", f"shape {(n_rows, n_vocab)}")
    be = _backend()
    st = be.stream(stream)
    # one-off calls reuse a plan per shape and stream: its scratch, kernels and bound launches
    key = (id(be), n_rows, n_vocab, name, st.device, st.handle, order, splits, block, cap, path)
    with _PLANS_LOCK:
        plan = _PLANS.get(key)
    if plan is None:
        plan = Sampler(n_rows, n_vocab, name, stream=st, order=order, _splits=splits,
                       _block=block, _cap=cap, _path=path)
        with _PLANS_LOCK:
            if len(_PLANS) >= _PLAN_ENTRIES:
                _PLANS.clear()
            _PLANS[key] = plan
    return plan


_PLANS: dict = {}
_PLANS_LOCK = threading.Lock()
_PLAN_ENTRIES = 16


def sample(logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed, position,
           order: str = "llama", return_logprobs: bool = False, advance_position: bool = False,
           check: bool = True, out=None, stream=None, dtype: str | None = None, _splits=None,
           _block=None, _cap=None, _path=None):
    """Sample one token per row with SPEC §2's filters and Gumbel-max draw.

    Parameters
    ----------
    logits : array, shape (n_rows, n_vocab)
        float32, float16 or bfloat16; NumPy (copied to the device) or a device array
        (``__cuda_array_interface__``, numba). Rows may be strided; elements must be contiguous.
    temperature : float or array (n_rows,)
        >= 0; 0 means greedy. Used as float32: a nonzero value must have a finite float32 value
        and inverse (about 2.9e-39 < T < 3.4e38). Device arrays must be float32.
    top_k : int or array (n_rows,)
        >= 0, finite; 0 or >= n_vocab is off. Device arrays must be int64.
    top_p : float or array (n_rows,)
        In (0, 1], and positive as float32; 1 is off. Device arrays float32.
    min_p : float or array (n_rows,)
        In [0, 1]; 0 is off. Device arrays float32.
    seed, position : int or array (n_rows,)
        Philox key and counter (mod 2**64). Device arrays int64 or uint64.
    order : {"llama", "vllm"}
        Filter order.
    return_logprobs : bool
        Also return log-softmax(raw row at T = 1) at the token (float32).
    advance_position : bool
        Increment the device ``position`` array after the draw (needs a device array; a NumPy
        array on ``cpu``).
    check : bool
        True (default): synchronize and raise :class:`SamplingError` naming rows with no finite
        logit. False: never synchronize; return the status array as well.
    out : int32 device array (n_rows,), optional
        Where to write tokens.
    stream : optional
        Backend stream, raw handle, ``.cuda_stream`` object, or None.
    dtype : {None, "float32", "float16", "bfloat16"}
        Must name the logits' dtype when given; "bfloat16" also marks a uint16 array as
        bfloat16 bit patterns.

    Returns
    -------
    tokens : int32 array (n_rows,)
        Device array on device backends, NumPy on ``cpu``; -1 where no logit is finite.
    logprobs : float32 array (n_rows,), if ``return_logprobs``
    status : int32 array (n_rows,), if ``check=False``
        0 ok, 1 no finite logit.

    Raises
    ------
    ValueError, TypeError
        Before any launch, naming the argument (e.g. "top_p: expected a value in (0, 1], got 1.5").
        Device arrays must live on the stream's device; their values are not checked (that
        would need a synchronization).
    SamplingError
        With ``check=True``, if some rows had no finite logit.

    Notes
    -----
    Stream-ordered on ``stream``; synchronizes only for ``check=True``. Host parameters are
    copied to the device (not allowed during capture); for graph capture use
    :meth:`Sampler.capture` (scalar filter parameters baked in), or call a :class:`Sampler`
    inside the capture with ``check=False`` and device arrays or host values it already used.

    Examples
    --------
    >>> import numpy as np, rocsample.sampling as rs
    >>> logits = np.log(np.array([[0.1, 0.7, 0.2]], np.float32))
    >>> int(np.asarray(rs.sample(logits, temperature=0.0, seed=0, position=0))[0])
    1
    """
    if order not in _ORDERS:
        V.fail("order", "'llama' or 'vllm'", V.describe(order))
    plan = _plan_for(logits, dtype, stream, order, _splits, _block, _cap, _path)
    be = plan.backend
    res = plan(logits, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
               seed=seed, position=position, return_logprobs=return_logprobs,
               advance_position=advance_position, check=check, out=out, dtype=dtype)
    # one-off results are the caller's, never the cached plan's buffers: copied (stream-ordered)
    if not isinstance(res, tuple):
        return res if out is not None else _fresh_copy(be, res, plan.stream)
    head = res[0] if out is not None else _fresh_copy(be, res[0], plan.stream)
    return (head,) + tuple(_fresh_copy(be, a, plan.stream) for a in res[1:])


def _fresh_copy(be, a, st):
    if not be.is_device:
        return np.array(a, copy=True)
    c = be.empty(a.shape, a.dtype, st)
    be.enqueue(st, lambda: c.copy_to_device(a, stream=st.numba))
    return c


def argmax(logits, *, return_logprobs: bool = False, check: bool = True, out=None, stream=None,
           dtype: str | None = None, _splits=None, _block=None, _path=None):
    """Greedy token per row: the lowest index among the maximal finite logits (one read).

    Parameters and returns as :func:`sample` with ``temperature=0``.

    Examples
    --------
    >>> import numpy as np, rocsample.sampling as rs
    >>> int(np.asarray(rs.argmax(np.array([[1.0, 3.0, 3.0]], np.float32)))[0])
    1
    """
    return sample(logits, temperature=0.0, seed=0, position=0, return_logprobs=return_logprobs,
                  check=check, out=out, stream=stream, dtype=dtype, _splits=_splits,
                  _block=_block, _path=_path)
