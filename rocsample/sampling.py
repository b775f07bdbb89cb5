"""Token sampling on the GPU (SPEC §2): ``sample``, ``argmax`` and the ``Sampler`` plan.

One launch plan serves every row (``rocsample.kernels.sampling_fast`` and ``sampling_hist``);
each row's mode decides where its token is made (on the host from host parameters, in the
kernels from device parameter arrays, the same rule; :func:`rocsample.sampling_router.modes`):

* greedy and unfiltered (temperature only) rows: phase 1, one launch, one read;
* ``0 < top_k <= 256`` chains (any top_p, min_p, order): phase 1's tile maxima, then the tile
  finalize (a threshold at least k tokens pass, the tokens above it ranked and filtered);
* min_p alone (any temperature): the histogram pass draws over the tokens passing min_p;
* every other filtered row (top_p, top_k > 256, any mix, either order): the histogram pass
  (counts and integer masses by bins below the row maximum; with top_k, the tokens down to the
  tile bound gathered and, when they fit, the row finished from them) and, when the row needs
  it, the select pass (the bins that hold the cut: drawn below, gathered at the boundary).

Reads of the logits per call (``n_rows * n_vocab`` elements each), by what the rows ask for:

==========================================  =====================================================
mode                                        reads of the logits
==========================================  =====================================================
greedy (temperature 0), ``argmax``          1 (one launch)
temperature only                            1 (one launch)
top_k <= 256 (+ top_p, min_p, either order) 1 + the gathered tiles, about ``k / tiles`` of the row;
                                            5 more single-block passes over a row whose candidates
                                            or qualifying tiles overflow (sorted or tied rows)
min_p (with or without temperature)         2
top_k > 256 (+ top_p, min_p, either order)  2 when the tokens down to the tile bound fit the
                                            candidate list (1024), else 3
top_p alone (+ min_p)                       3
==========================================  =====================================================

Rows whose boundary bins overflow the candidate list (constant or heavily tied rows) are
finished by one block's radix selects over the row (about 20 single-block passes). A kernel
that no row needs is not launched when the parameters are host values; with device parameter
arrays every kernel is launched and rows that are not theirs leave at once.

Exactness and determinism: winners are chosen by exact comparisons (index tie-breaks) and the
top-p masses are fixed-point integer sums, so tokens never depend on the split count, the
block size, the stream or atomic order.

Host side, in four pieces: this module (the public calls, argument checks, outputs in the
caller's framework), :mod:`rocsample.sampling_plan` (shapes, splits, scratch layout),
:mod:`rocsample.sampling_router` (which kernels a call needs and their argument lists) and
:mod:`rocsample.binder` (bound launches keyed by argument layouts and host values, re-pointed
at each call's arrays). Parameter checks are in :mod:`rocsample.sampling_params`.
"""

from __future__ import annotations

import sys
import threading
import weakref

import numpy as np

from rocsample import _validate as V
from rocsample import graphs as _graphs
from rocsample import sampling_router as _router
from rocsample.backends import get_backend
from rocsample.backends import interop as _io
from rocsample.binder import Binder, fastcall, stream_lock
from rocsample.errors import SamplingError
from rocsample.kernels import sampling as K
from rocsample.sampling_params import host_params, u64_rows, value_key
from rocsample.sampling_plan import PURPOSE, SamplingPlan

__all__ = ["sample", "argmax", "Sampler"]

#: Host-parameter device copies a Sampler keeps (see Sampler._host_param).
_PARAM_CACHE = 32
_U64 = 2**64
_ORDERS = ("llama", "vllm")
_LOGIT_DTYPES = ("float32", "float16", "bfloat16")
_HOST = ("host",)  # the key of a host seed/position/logits: its device copy is re-pointed
#: the types of (temperature, top_k, top_p, min_p) that key by value at once (Python scalars)
_SCALAR4 = frozenset((a, b, c, d) for a in (float, int) for b in (float, int)
                     for c in (float, int) for d in (float, int))
_ADOPT = _io.ADOPTERS.get  # (hot path: interop.adopt_key without its own call)
_TORCH_ADOPT = _io._torch_adopt  # torch tensors' adopter (Sampler._torch_repeat)
_adopter = _io.adopter

_backend = get_backend

# The repeated call with torch tensors in C (rocsample/_fastcall.c; Sampler.__call__), or None
# (then _torch_repeat serves it): binder.fastcall
_FAST = fastcall("repeat")


def _dtype_name(obj, dtype=None) -> str:
    name = V.dtype_of(obj)
    if dtype == "bfloat16" and name == "uint16":
        return "bfloat16"
    return name


def _pool(be):
    from rocsample import scratch

    return scratch.get_pool(be)


class Sampler:
    """A sampling plan bound to (n_rows, n_vocab, dtype, stream): scratch reserved up front.

    Parameters
    ----------
    n_rows, n_vocab : int
        Logits shape.
    dtype : {"float32", "float16", "bfloat16"}
        Logits dtype (bfloat16: ml_dtypes/torch bfloat16, or uint16 bit patterns).
    stream : optional
        Backend stream, raw handle, torch or CuPy stream, ``__cuda_stream__`` object, or None:
        calls with torch (CuPy) logits then run on torch's (CuPy's) current stream of their
        device, other calls on the backend's default stream.
    order : {"llama", "vllm"}
        Filter order (SPEC §2).
    filters : bool
        Reserve the per-row histograms and candidate lists (needed for top_k / top_p);
        ``False`` keeps the plan small for greedy / temperature / min_p use and raises if a call
        needs them.

    Notes
    -----
    Scratch comes from ``rocsample.scratch`` for this (device, stream) and is requested in the
    constructor (``prewarm``), so calls inside a CUDA/HIP graph capture allocate nothing as long
    as every parameter is a device array or a host value this plan has already used outside
    capture (its device copy is cached; a new host value needs a copy, which capture forbids).
    A followed stream (``stream=None`` with torch or CuPy logits) other than the backend default
    is warmed by its first call, or by ``prewarm(stream)`` before a capture on it.
    Outputs of a call (tokens, logprobs, status) are device buffers owned by the plan, returned
    in the logits' framework (torch tensors for torch logits, CuPy arrays for CuPy, numba device
    arrays otherwise) and overwritten by the next call unless ``out=`` is given for the tokens.
    Calls never synchronize unless ``check=True`` (the default of ``sample``).
    A repeated call costs a key lookup, one capture-status query of its stream and the
    launches: calls with arrays of the same layout (shape, strides, dtype, device), the same
    host parameter values and the same stream reuse launches bound on the second such call,
    re-pointed at the new arrays: a fresh tensor object costs what the same one does, and on
    cuda the launches of each set of addresses seen lately (up to eight) are kept as a driver
    graph of their own, so a decode loop's logits, which come back to one or two addresses,
    re-point nothing (a new address every call re-points the nodes: a few microseconds more);
    nothing the key names is checked again. Under a capture the same launches go through the
    scratch pool's capture bookkeeping (docs/DESIGN.md, "The repeated call").

    Examples
    --------
    >>> plan = Sampler(8, 32000, "float32")                      # doctest: +SKIP
    >>> tok = plan(logits, temperature=0.8, top_p=0.95, seed=seeds, position=pos)  # doctest: +SKIP
    """

    def __init__(self, n_rows: int, n_vocab: int, dtype: str = "float32", *, stream=None,
                 order: str = "llama", filters: bool = True, _splits: int | None = None,
                 _block: int | None = None, _cap: int | None = None) -> None:
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
        self._follow = stream is None  # torch / CuPy logits: their framework's current stream
        self._outputs = None
        self._wrapped: dict = {}  # framework -> the outputs viewed in it
        # (stream handle, device, logprobs or not) -> views for the next one-off calls' torch
        # outputs (_pooled_outputs)
        self._opool: dict = {}
        self._param_cache: dict = {}
        self._u64_scalars: dict = {}  # (name, stream handle, int) -> (device copy, address)
        self.stream = be.stream(stream)
        if stream is not None and (type(stream).__module__ or "").startswith("torch"):
            _io.note_torch_stream(self.stream.device, self.stream.handle)
        self._fast: list = []  # the C repeated call's entries (the binder's list, see _fast_entry)
        if not be.is_device:
            self.plan = None
            self.prewarm()
            return
        self.plan = SamplingPlan(be, self.stream.device, self.n_rows, self.n_vocab, dtype,
                                 filters=self.filters, splits=_splits, block=_block, cap=_cap,
                                 large=_router.large_room(self.n_rows))
        self._ns = be.kernels(K.build)
        self._binder = Binder()
        self._fast = self._binder.fast
        self._streams: dict = {}  # (handle, device) -> Stream of a followed framework stream
        self.prewarm()

    # the plan's figures, as before the split (tools read them)
    splits = property(lambda self: self.plan.splits)
    tpt = property(lambda self: self.plan.tpt)
    block = property(lambda self: self.plan.block)
    chunk = property(lambda self: self.plan.chunk)
    scratch_bytes = property(lambda self: self.plan.scratch_bytes)

    def prewarm(self, stream=None) -> None:
        """Reserve this plan's scratch on its stream (or on ``stream``) and its output buffers.

        The constructor calls it; call it again after ``rocsample.scratch`` trimmed the stream,
        before capturing on a stream whose scratch went to an earlier graph, or with the stream
        a foreign capture will use (``torch.cuda.graph(g, stream=s)``) when the plan follows the
        framework's current stream (host parameter values then still need one call on that
        stream outside the capture: their device copies are per stream). A no-op on ``cpu``
        but for the outputs.
        """
        be = self.backend
        n = self.n_rows
        if not be.is_device:
            if self._outputs is None:
                # device allocations on a GPU, which a capture forbids: refused alike
                be.check_can_allocate(self.stream, "allocating an output array")
                self._outputs = (np.empty(n, np.int32), np.empty(n, np.float32), np.empty(n, np.int32))
            return
        st = self.stream if stream is None else be.stream(stream)
        _pool(be).prewarm(st, {PURPOSE: self.plan.scratch_bytes})
        if self._outputs is None:
            self._outputs = (be.empty((n,), np.int32, self.stream),
                             be.empty((n,), np.float32, self.stream),
                             be.empty((n,), np.int32, self.stream))
            self._out_ptrs = tuple(be.array_span(a)[0] for a in self._outputs)
            # per-row counts of finished splits of the three split-grid kernels (phase 1, the
            # histogram and select passes: each one's last block per row goes on and brings
            # the count back to 0): the plan's own, so nothing else writes them. A plan whose
            # drawing routes take fewer splits (SamplingPlan.splits_draw) has a second set for
            # them: a count read modulo one split count only comes back to 0 after racing
            # launches (SEMANTICS.md, "One plan, one queue") if no launch counts it modulo another
            # (and a last pair for the row-strided histogram and select passes of the nucleus
            # pass's routes, at their own split count)
            sets = 1 if self.plan.splits_draw == self.plan.splits else 2
            # (then one row whose first count is the conditional lane's requests,
            # Operands.cflag, phase 1's argmax kernel's counts and the nucleus pass's, each at
            # its own split count)
            self._row_done = be.as_array(np.zeros((3 * sets + 5, n), np.int32), "row_done",
                                         self.stream)
            # phase 1's argmax kernel's per-row 64-bit slot (0 between launches)
            self._gslot = be.as_array(np.zeros((n,), np.uint64), "argmax_slot", self.stream)
            # the zeros land before any launch on any stream: a plan that follows the caller's
            # stream launches on streams other than its own, which its own stream's copy does not
            # order (the first call then counted from whatever the allocation held)
            be.runtime.synchronize(self.stream)
            plain = tuple(self._row_done[i] for i in range(3))
            self._counts = (plain, tuple(self._row_done[3 * sets - 3 + i] for i in range(3)),
                            tuple(self._row_done[3 * sets + i] for i in range(2)),
                            self._row_done[3 * sets + 3], self._row_done[3 * sets + 4])
            self._cflag = self._row_done[3 * sets + 2, :1]

    # ---------------------------------------------------------------------------------------
    def _host_param(self, name, host, st):
        """Device copy of a host parameter on stream ``st``, reused while the same values come
        back on that stream (the copy is ordered before its uses there).

        Repeated calls with the same host values (the usual scalars) then cost no copy, and a
        warmed plan can be captured with them. The cached arrays are never written.
        """
        key = (name, st.handle, host.dtype.str, host.tobytes())
        arr = self._param_cache.get(key)
        if arr is None:
            # refused before the cache drops anything: a dropped copy is a free, which an open
            # capture forbids as much as the new copy's allocation
            self.backend.check_can_allocate(st, f"{name}: copying a new host value")
            if len(self._param_cache) >= _PARAM_CACHE:
                self._param_cache.clear()
                self._u64_scalars.clear()
            arr = self._param_cache[key] = self.backend.as_array(host, name, st)
        return arr

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

    def _stream_for(self, fw, kx):
        """The stream of a call: the plan's, or (``stream=None``) the current stream of the
        logits' framework on their device."""
        if not self._follow or fw is None:
            return self.stream
        dev = kx[0][4]
        h = _io.current_stream(fw, dev)
        st = self._streams.get((h, dev))
        if st is None:
            if fw == _io.TORCH:
                _io.note_torch_stream(dev, h)
            if h == 0 and dev != self.stream.device:
                V.fail("stream", f"a stream of device {dev} (where logits live; its default "
                       "stream is not the current device's: pass stream= or make it current)",
                       f"None on device {self.stream.device}")
            st = self.backend.stream(h) if h != 0 else self.stream
            if len(self._streams) >= 16:
                self._streams.clear()
            self._streams[(h, dev)] = st
        return st

    def __call__(self, logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed,
                 position, return_logprobs: bool = False, advance_position: bool = False,
                 check: bool = True, out=None, dtype: str | None = None):
        """Sample one token per row; see :func:`sample` for the parameters."""
        if self._fast and _FAST is not None:  # a plain repeated call with torch tensors, in C
            got = _FAST(self._fast, logits, temperature, top_k, top_p, min_p, seed, position,
                        return_logprobs, advance_position, check, out, dtype, False)
            if got is not None:
                return got
        if _ADOPT(type(logits)) is _TORCH_ADOPT:
            got = self._torch_repeat(logits, temperature, top_k, top_p, min_p, seed, position,
                                     return_logprobs, advance_position, check, out, dtype)
            if got is not None:
                return got
        if not self.backend.is_device:
            logits = _io.adopt(logits)
            self._check_logits(logits, dtype)
            return self._call_cpu(logits, temperature, top_k, top_p, min_p, seed, position,
                                  return_logprobs, advance_position, check, out, dtype, False)
        return self._call(logits, temperature, top_k, top_p, min_p, seed, position,
                          return_logprobs, advance_position, check, out, dtype, False, None)

    def _torch_repeat(self, x, temperature, top_k, top_p, min_p, seed, position,
                      return_logprobs, advance_position, check, out, dtype, fresh=False):
        """A decode loop's repeated call, in one function: torch CUDA logits, seed and position
        (and ``out``), Python scalar filters, a plain repeated call (the stream not capturing,
        its scratch unmoved: ``BoundCall.ready``). The key is the one :meth:`_call` makes for
        these arguments, built inline; None (then :meth:`_call` does everything) for any other
        call, a key not bound yet, or a call that is not plain. ``fresh``: a one-off call's
        (:func:`sample` through ``_TORCH_PLANS``): outputs are new tensors of this call."""
        types = (type(temperature), type(top_k), type(top_p), type(min_p))
        tx = type(x)
        if types not in _SCALAR4 or self.plan is None:
            return None
        d = x.get_device()
        if d < 0:
            return None  # CPU tensors: _call reads them as NumPy views
        T = _io.TORCH
        # seed and position: torch CUDA tensors by layout, or Python ints (their device copies,
        # found by value under the lock as _run does); the two are written out, not a helper:
        # this function exists to save the Python calls of _call's path
        if type(seed) is tx:
            ds = seed.get_device()
            if ds < 0:
                return None
            ps = seed.data_ptr()
            ks = (T, seed.shape, seed.stride(), seed.dtype, ds, ps & 15)
        elif type(seed) is int:
            ks, ps = _HOST, None
        else:
            return None
        if type(position) is tx:
            dq = position.get_device()
            if dq < 0:
                return None
            pq = position.data_ptr()
            kq = (T, position.shape, position.stride(), position.dtype, dq, pq & 15)
        elif type(position) is int and not advance_position:
            kq, pq = _HOST, None
        else:
            return None
        if self._follow:  # torch's current stream of the logits' device, if this plan met it
            st = self._streams.get((_io.current_stream(_io.TORCH, d), d))
            if st is None:
                return None
        else:
            st = self.stream
        p = x.data_ptr()
        ko = po = None
        if out is not None:
            if _ADOPT(type(out)) is not _TORCH_ADOPT:
                return None
            do = out.get_device()
            if do < 0:
                return None
            po = out.data_ptr()
            ko = (T, out.shape, out.stride(), out.dtype, do, po & 15)
        key = (st.handle, st.device, (T, x.shape, x.stride(), x.dtype, d, p & 15),
               (types, temperature, top_k, top_p, min_p), ks, kq, ko,
               return_logprobs, advance_position, dtype, fresh, T)
        hit = self._binder.lookup(key)
        if hit is None:
            return None
        if not fresh:  # (a one-off call's outputs are made under the lock below)
            o = self._wrapped.get(T)
            if o is None:
                return None
        with hit.lock:
            if not hit.ready():
                return None  # (capturing, or the pool has work: _call's request path)
            if ps is None:
                ps = self._host_u64("seed", seed, st)[1]
            if pq is None:
                pq = self._host_u64("position", position, st)[1]
            if fresh:
                o = self._outputs_for(T, True, return_logprobs, st, True)
            tokens, logprobs, status, optrs = o
            hit.run([p, None, None, None, None, ps, pq, optrs[0] if po is None else po,
                     optrs[1], optrs[2]])
        if out is not None:
            tokens = out
        elif _FAST is not None:
            self._fast_entry(key, tx, hit, o, st, seed, position)  # (later calls: in C)
        if check:
            return self._finish(tokens, logprobs, status, return_logprobs, check, st)
        return (tokens, logprobs, status) if return_logprobs else (tokens, status)

    def _fast_entry(self, key, tx, hit, o, st, seed, position) -> None:
        """Note a key that :meth:`_torch_repeat` just served for rocsample._fastcall.repeat,
        which then serves its plain repeated calls in C (no ``out``; the calls it takes are
        exactly those). The entry, a tuple in the order of the C source's ``E_*``: (key, the
        tensors' type, the logits' (shape, strides, dtype, device, address mod 16), seed's and
        position's likewise or, for a Python int, (value, its device copy's address, the copy),
        the four filters, (return_logprobs, advance_position, dtype, fresh), (torch, its
        current-raw-stream function) or None for a plan bound to its stream, that function's
        answer for the logits' device (else the plan's stream handle), the BoundCall,
        the result tuple (None for a one-off call's), the finisher ``finish(outputs made or
        None, check)``, the outputs' addresses or, for a one-off call, a callable making its
        outputs). Kept by the binder (:meth:`Binder.note_fast`), which empties the list
        whenever a bound call leaves its table. ``o``: this call's outputs (the plan's, unless
        ``fresh``)."""

        def make():
            raw, h = None, st.handle
            if self._follow:
                raw = _io.torch_raw()
                if raw is None:
                    return None  # (Python asks torch for its current stream each call)
                # (its raw handle: 0 for the legacy default stream, which the key names by the
                # plan's own stream)
                h = int(raw[1](key[2][4]))

            def spec(k, name, v):  # a tensor's layout, or an int with its device copy
                if k is not _HOST:
                    return k[1:]
                a, p = self._host_u64(name, v, st)
                return (v, p, a)

            rl, fresh = key[7], key[10]
            ref = weakref.ref(self)  # (the entry lives in this plan's binder: no cycle)
            if fresh:
                result = plan_o = None

                def optrs(T=key[11]):  # a one-off call's outputs, made for each call
                    return ref()._outputs_for(T, True, rl, st, True)
            else:
                tokens, logprobs, status, optrs = o
                plan_o = (tokens, logprobs, status)
                result = plan_o if rl else (tokens, status)
                optrs = tuple(optrs)

            def finish(made, check):
                t, lp, s = plan_o if made is None else made[:3]
                if check:
                    return ref()._finish(t, lp, s, rl, check, st)
                return (t, lp, s) if rl else (t, s)

            return (key, tx, key[2][1:], spec(key[4], "seed", seed),
                    spec(key[5], "position", position), key[3][1:],
                    (rl, key[8], key[9], fresh), raw, h, hit, result, finish, optrs)

        self._binder.note_fast(key, make)

    def _call(self, logits, temperature, top_k, top_p, min_p, seed, position, return_logprobs,
              advance_position, check, out, dtype, fresh, stream, kx=False):
        """One call on a device backend. ``fresh``: outputs are new arrays of this call (one-off
        calls), else the plan's. ``stream``: a Stream forced for this call (capture, one-off
        calls), or None. ``kx``: the logits' device_key when the caller read it already."""
        be = self.backend
        if kx is False:
            logits, kx = (_ADOPT(type(logits)) or _adopter(type(logits)))(be, logits)
        # ---- the key: what the launches depend on besides device addresses ----------------
        # slots: logits, temperature, top_k, top_p, min_p, seed, position, tokens, logprobs, status
        keyable = True
        host_x = None
        if kx is not None:
            px, p0 = kx
            fw = px[0] if px[0] in _io.FRAMEWORKS else None
        else:
            fw = p0 = None
            if type(logits) is np.ndarray:
                px = ("np", logits.shape, logits.dtype.str)
                host_x = logits
            else:
                px, keyable = None, False
        if stream is not None:
            st = stream
        elif self._follow and fw is not None:  # the framework's current stream of their device
            dev = px[4]
            st = self._streams.get((_io.current_stream(fw, dev), dev)) or self._stream_for(fw, kx)
        else:
            st = self.stream
        ptrs = [p0, None, None, None, None, None, None, None, None, None]
        # filter parameters: host values key by value (they decide the route), device arrays
        # by layout (their addresses are slots); Python floats and ints (the usual call) by
        # their types and values at once
        types = (type(temperature), type(top_k), type(top_p), type(min_p))
        if types in _SCALAR4:
            kf = (types, temperature, top_k, top_p, min_p)
        else:  # (slots 1-4: a device array's address; a host value keys by value)
            vals = [temperature, top_k, top_p, min_p]
            keys = [value_key(v) for v in vals]
            for j in range(4):
                if keys[j] is None:
                    vals[j] = _io.adopt(vals[j])
                    keys[j], keyable = self._slot(be, vals[j], ptrs, 1 + j, keyable)
            temperature, top_k, top_p, min_p = vals
            kf = tuple(keys)
        # seeds and positions: device arrays by layout; host values go through a device copy
        # (a slot too, whatever the value: a position that changes every call keeps its launches)
        seed, d = (_ADOPT(type(seed)) or _adopter(type(seed)))(be, seed)
        if d is None:
            ks = _HOST
        else:
            ks, ptrs[5] = d
        position, d = (_ADOPT(type(position)) or _adopter(type(position)))(be, position)
        if d is None:
            kq = _HOST
        else:
            kq, ptrs[6] = d
        ko = None
        if out is not None:
            ko, keyable = self._slot(be, _io.adopt(out), ptrs, 7, keyable)
        if advance_position and kq is _HOST:
            keyable = False  # a NumPy position is bumped on the host: the full path, every call
        key = hit = None
        if keyable:
            key = (st.handle, st.device, px, kf, ks, kq, ko, return_logprobs, advance_position,
                   dtype, fresh, fw)
            hit = self._binder.lookup(key)
        with (hit is not None and hit.lock) or stream_lock(be, st):
            if hit is not None:
                if hit.ready():  # a repeated call: the stream is not capturing, scratch unmoved
                    return self._run(hit, ptrs, st, fw, fresh, host_x, ks, kq, seed, position,
                                     out, return_logprobs, check, False)
                buf = _pool(be).request(st, self.plan.scratch_bytes, PURPOSE)
                if buf is hit.scratch:
                    return self._run(hit, ptrs, st, fw, fresh, host_x, ks, kq, seed, position,
                                     out, return_logprobs, check, True)
                self._binder.drop(key)  # the scratch moved (growth, trim, a graph took it)
            return self._unbound(key, fw, st, logits, temperature, top_k, top_p, min_p, seed,
                                 position, return_logprobs, advance_position, check, out, dtype,
                                 fresh)

    def _run(self, hit, ptrs, st, fw, fresh, host_x, ks, kq, seed, position, out,
             return_logprobs, check, captured):
        """A bound call with this call's addresses (under the stream's lock). ``captured``: the
        pool's request was made (the stream may be capturing): the graph being captured keeps
        what the launches address."""
        hold = []
        if host_x is not None or ks is _HOST or kq is _HOST:
            be = self.backend
            if host_x is not None:
                x = be.as_array(np.ascontiguousarray(host_x), "logits", st)
                ptrs[0] = be.array_span(x)[0]
                hold.append(x)
            if ks is _HOST:
                a, ptrs[5] = self._host_u64("seed", seed, st)
                hold.append(a)
            if kq is _HOST:
                a, ptrs[6] = self._host_u64("position", position, st)
                hold.append(a)
        o = None if fresh else self._wrapped.get(fw)  # (the plan's outputs, viewed in fw)
        if o is None:
            o = self._outputs_for(fw, fresh, return_logprobs, st)
        tokens, logprobs, status, optrs = o
        if out is None:
            ptrs[7] = optrs[0]
        else:
            tokens = out
        ptrs[8] = optrs[1]
        ptrs[9] = optrs[2]
        hit.run(ptrs, not captured)  # (one graph launch unless the stream is capturing)
        if captured:
            _graphs.hold(st, hit, hold, self._outputs)
        if check:
            return self._finish(tokens, logprobs, status, return_logprobs, check, st)
        return (tokens, logprobs, status) if return_logprobs else (tokens, status)

    def _host_u64(self, name, value, st):
        """(device copy, its address) of a host seed or position: ``_host_param`` of its rows,
        looked up by the value itself for a Python int (no per-call row array)."""
        scalar = type(value) is int
        if scalar:
            k = (name, st.handle, value % _U64)  # one entry per _param_cache entry
            got = self._u64_scalars.get(k)
            if got is not None:
                return got
        be = self.backend
        a = self._host_param(name, u64_rows(be, name, value, self.n_rows, st)[0], st)
        got = (a, be.array_span(a)[0])
        if scalar:
            self._u64_scalars[k] = got  # (emptied with _param_cache)
        return got

    @staticmethod
    def _slot(be, v, ptrs, i, keyable):
        """(key part, keyable) of a device-array argument in slot ``i`` (its address to ptrs)."""
        d = _io.device_key(be, v)
        if d is None:
            return None, False  # neither a host value nor a device array: the checks answer it
        ptrs[i] = d[1]
        return d[0], keyable

    def _outputs_for(self, fw, fresh, want_lp, st, pooled=False):
        """(tokens, logprobs, status, their addresses) of a call: the plan's buffers (viewed in
        ``fw``), or for ``fresh`` new arrays of the caller's framework. ``pooled`` (torch, a
        repeated one-off call whose stream is not capturing): the next of the views
        :meth:`_pooled_outputs` made for ``_POOL_CALLS`` calls at once."""
        be = self.backend
        n = self.n_rows
        if not fresh:
            o = self._wrapped.get(fw)
            if o is None:
                if self._outputs[0] is None:
                    self.prewarm()
                o = tuple(_io.wrap(fw, a, self.stream.device) for a in self._outputs)
                o = o + (self._out_ptrs,)
                self._wrapped[fw] = o
            return o
        if fw == _io.TORCH:  # one call's rows of a (k, n) block, views made by one unbind
            if pooled:
                try:
                    rows, ptr = self._opool[(st.handle, st.device, want_lp)].pop()
                except (KeyError, IndexError):
                    rows, ptr = self._pooled_outputs(want_lp, st)
            else:
                cur = _guard_alloc(be, st, fw, "outputs: a one-off call's new output arrays")
                rows, ptr = self._torch_rows(want_lp, st, cur, 1)[0]
            tokens, status = rows[0], rows[1]
            logprobs = rows[2] if want_lp else self._outputs[1]
        elif fw in _io.FRAMEWORKS:
            cur = _guard_alloc(be, st, fw, "outputs: a one-off call's new output arrays")
            buf = _io.empty(fw, (3 * n if want_lp else 2 * n,), np.int32, st.device, st.handle,
                            cur)
            tokens, status = buf[:n], buf[n:2 * n]
            ptr = buf.data.ptr
            logprobs = buf[2 * n:].view(np.float32) if want_lp else self._outputs[1]
        else:
            buf = be.empty((3 * n if want_lp else 2 * n,), np.int32, st)
            ptr = be.array_span(buf)[0]
            tokens = be._allocated(buf[:n], st.device)  # (the simulator tags views' device)
            status = be._allocated(buf[n:2 * n], st.device)
            logprobs = (be._allocated(buf[2 * n:].view(np.float32), st.device) if want_lp
                        else self._outputs[1])
        lp_ptr = ptr + 8 * n if want_lp else self._out_ptrs[1]
        return tokens, logprobs, status, (ptr, lp_ptr, ptr + 4 * n)

    def _torch_rows(self, want_lp, st, cur, calls):
        """``calls`` calls' new torch outputs from one ``torch.empty`` and one ``unbind``: per
        call, (its rows: tokens, status and, with ``want_lp``, logprobs as float32; their
        address). ``cur``: torch's current stream handle (:func:`_guard_alloc`'s answer)."""
        n, k = self.n_rows, 3 if want_lp else 2
        buf = _io.empty(_io.TORCH, (calls * k, n), np.int32, st.device, st.handle, cur)
        rows = buf.unbind(0)
        if want_lp:
            f32 = sys.modules["torch"].float32
            rows = [r.view(f32) if j % 3 == 2 else r for j, r in enumerate(rows)]
        base = buf.data_ptr()
        return [(rows[j * k:(j + 1) * k], base + 4 * n * k * j) for j in range(calls)]

    def _pooled_outputs(self, want_lp, st):
        """One call's new torch outputs as (rows, address) (:meth:`_torch_rows`), and
        ``_POOL_CALLS - 1`` more calls' kept for the next calls on this stream: one
        ``torch.empty`` and one ``unbind`` serve them all (9-15 us of the H200's host time a
        one-off call otherwise, PERF_NOTES "Twelfth session"). Each call's rows are its own (no
        two calls share a byte); the block is freed by torch's allocator once every call's rows
        are gone. Only for calls whose stream is not capturing (the caller asked
        ``BoundCall.ready``): a captured call's outputs must come from the capture's own pool."""
        cur = _guard_alloc(self.backend, st, _io.TORCH, "outputs: a one-off call's new output arrays")
        calls = self._torch_rows(want_lp, st, cur, _POOL_CALLS)
        calls.reverse()  # (popped from the end: the block's first rows first)
        got = calls.pop()
        if len(self._opool) >= 8:
            self._opool.clear()
        self._opool[(st.handle, st.device, want_lp)] = calls
        return got

    def _unbound(self, key, fw, st, logits, temperature, top_k, top_p, min_p, seed, position,
                 return_logprobs, advance_position, check, out, dtype, fresh):
        """The full call: every check, the route, the launches; bound for the next such call."""
        be = self.backend
        n, nv = self.n_rows, self.n_vocab
        self._check_logits(logits, dtype)
        (temp_h, temp_d), (k_h, k_d), (p_h, p_d), (mp_h, mp_d) = host_params(
            be, n, temperature, top_k, top_p, min_p, st)
        seed_v, seed_dev = u64_rows(be, "seed", seed, n, st)
        pos_v, pos_dev = u64_rows(be, "position", position, n, st)
        host_pos = None
        if advance_position and not pos_dev:
            host_pos = _advanceable(position)
        out_given, out = out, (None if out is None else _io.adopt(out))
        host_out = _host_out(out, n) if isinstance(out, np.ndarray) else None
        if host_pos is not None:
            # read on the host now and bumped after the launches: a replay would not bump it
            be.check_not_capturing(st, "position: advancing a NumPy position")
        if host_out is not None:
            be.check_not_capturing(st, "out: a NumPy array (copied back synchronously)")
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
        # every load of a logit (four at a time in the argmax kernel) needs the element's
        # alignment: a misaligned one is an illegal-address fault, which ends the context
        span = be.array_span(x)
        if span is not None and (span[0] % itemsize or (
                strides is not None and int(strides[0]) % itemsize)):
            V.fail("logits", f"an address and a row stride that are multiples of its "
                   f"{itemsize}-byte elements",
                   f"address mod {itemsize} = {span[0] % itemsize}, strides {tuple(strides)}")
        if be.array_device(x) != st.device:
            V.fail("stream", f"a stream on device {be.array_device(x)} (where logits live)",
                   f"a stream on device {st.device}")
        for name, arr in (("temperature", temp_d), ("top_k", k_d), ("top_p", p_d),
                          ("min_p", mp_d), ("seed", seed_v if seed_dev else None),
                          ("position", pos_v if pos_dev else None)):
            if arr is not None:
                self._check_array_device(name, arr, st)
        route = _router.route(self.plan, _router.Host(temp_h, k_h, p_h, mp_h), self.order)
        dev = {}
        for name, h, d in (("temperature", temp_h, temp_d), ("top_k", k_h, k_d),
                           ("top_p", p_h, p_d), ("min_p", mp_h, mp_d)):
            dev[name] = d if d is not None else self._host_param(name, h, st)
        seed_a = seed_v if seed_dev else self._host_param("seed", seed_v, st)
        pos_a = pos_v if pos_dev else self._host_param("position", pos_v, st)
        tok_dev = None
        if out is not None and host_out is None:
            tok_dev = be.as_array(out, "out", st, copy_host=False)
            if tuple(tok_dev.shape) != (n,) or str(tok_dev.dtype) != "int32":
                V.fail("out", f"an int32 array of shape ({n},)", V.describe(out), TypeError)
            self._check_array_device("out", tok_dev, st)
        buf = _pool(be).request(st, self.plan.scratch_bytes, PURPOSE)
        w = self.plan.views(buf)
        outputs = self._outputs_for(fw, fresh, return_logprobs, st)
        tokens, logprobs, status = (be.as_array(a, "outputs", st, copy_host=False)
                                    if a is not self._outputs[i] else a
                                    for i, a in enumerate(outputs[:3]))
        if tok_dev is not None:
            tokens = tok_dev
        # the device advances a device position only: a host one is bumped on the host below,
        # and its device copy is a cached parameter that later calls with the same values reuse
        ops = _router.Operands(x, dev["temperature"], dev["top_k"], dev["top_p"], dev["min_p"],
                               seed_a, pos_a, tokens, logprobs, status, w, bool(return_logprobs),
                               bool(advance_position) and pos_dev, self._counts, self._cflag,
                               self._gslot)
        L = _router.launches(self.plan, self._ns, route, ops)
        for kernel, grid, block, args in L:
            be.launch(kernel, grid, block, st, *args)
        # under a capture, the graph keeps what its kernels address (cached parameter copies,
        # outputs) however this plan's caches change later
        _graphs.hold(st, L)
        if key is not None:
            # the plan's own outputs are no slots: the same buffers every call (kept alive and
            # never re-pointed); a one-off call's new outputs and a given ``out`` are
            slots = [x, temp_d, k_d, p_d, mp_d, seed_a, pos_a,
                     tokens if fresh or tok_dev is not None else None,
                     logprobs if fresh and return_logprobs else None,
                     status if fresh else None]
            after = _router.after(route, ops.advance_position)
            body = _router.conditional(self.plan, route)
            cond = None if body is None else (
                body, (self._ns._lane_gate_kernel, 1, 32, (np.uint64(0), self._cflag)))
            if after is not None and hasattr(be, "fork_streams"):
                be.fork_streams(st)  # (made now, outside any capture: the binding call may not be)
            if cond is not None and hasattr(be, "body_stream"):
                be.body_stream(st)  # (likewise)
            call = self._binder.offer(key, be, st, L, slots, scratch=buf, after=after, cond=cond)
            if call is not None and call.lock is None:
                pool = _pool(be)
                lease = pool.lease(st, PURPOSE, buf)
                if lease is not None:
                    call.guard(stream_lock(be, st), be.runtime.capture_probe(st), pool, (lease,))
        if host_pos is not None:
            host_pos += host_pos.dtype.type(1)  # mod 2**64 (an int64 wraps as its uint64 bits)
        if host_out is not None:
            host_out[...] = be.to_host(tokens, st)  # synchronizes st
        return self._finish(out_given if out_given is not None else outputs[0], outputs[1],
                            outputs[2], return_logprobs, check, st)

    def _check_array_device(self, name, arr, st=None):
        """A device array argument must live on the stream's device (no cross-device reads)."""
        st = self.stream if st is None else st
        d = self.backend.array_device(arr)
        if d != st.device:
            V.fail(name, f"an array on device {st.device} (the stream's)",
                   f"an array on device {d}")

    def capture(self, logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed, position,
                return_logprobs: bool = False, advance_position: bool = True, out=None,
                dtype: str | None = None):
        """Capture one call of this plan as a replayable graph (a decode step).

        ``logits``, ``seed`` and ``position`` must be device arrays: they are the graph's fixed
        inputs, refilled between replays by stream-ordered copies
        (:func:`rocsample.graphs.copy_to_device`). With ``advance_position=True`` every replay
        increments the device positions after its draw. Scalar filter parameters are baked in.
        The capture runs on the plan's stream (torch or CuPy logits included). ``dtype`` is as
        for :func:`sample` (``"bfloat16"`` marks uint16 logits as bfloat16 bit patterns).

        Returns
        -------
        rocsample.graphs.Graph
            With ``outputs = (tokens, logprobs, status)``, device arrays the replays write (in
            the logits' framework).

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
        args = (logits, temperature, top_k, top_p, min_p, seed, position, return_logprobs)
        self.prewarm()
        if be.is_device:
            # compiles and puts host parameters on device
            self._call(*args, False, False, out, dtype, False, self.stream)
        else:
            self(logits, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                 seed=seed, position=position, return_logprobs=return_logprobs,
                 advance_position=False, check=False, out=out, dtype=dtype)
        self.prewarm()
        with graphs.capture(self.stream) as g:
            if be.is_device:
                res = self._call(*args, advance_position, False, out, dtype, False, self.stream)
            else:
                res = self(logits, temperature=temperature, top_k=top_k, top_p=top_p,
                           min_p=min_p, seed=seed, position=position,
                           return_logprobs=return_logprobs, advance_position=advance_position,
                           check=False, out=out, dtype=dtype)
        lp = self._outputs[1] if not be.is_device else \
            self._outputs_for(_io.framework_of(_io.adopt(logits)), False, False, self.stream)[1]
        g.outputs = (res[0], lp, res[-1])
        return g

    def _finish(self, tokens, logprobs, status, return_logprobs, check, st=None):
        if check:
            st_h = _status_to_host(self.backend, status, self.stream if st is None else st)
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
                  return_logprobs, advance_position, check, out, dtype, fresh):
        from rocsample.reference import sampling as R

        n = self.n_rows
        be = self.backend
        if be.is_device_array(logits):
            V.fail("logits", "a NumPy array (the cpu backend has no device memory)",
                   V.describe(logits), TypeError)
        # torch CPU tensors read as NumPy, as on device backends (interop.adopt)
        temperature, top_k, top_p, min_p, seed, position = (
            _io.adopt(v) for v in (temperature, top_k, top_p, min_p, seed, position))
        # the same checks as the device path (device arrays refused, naming the argument)
        (temperature, _), (top_k, _), (top_p, _), (min_p, _) = host_params(
            be, n, temperature, top_k, top_p, min_p, self.stream)
        _router.check_filters(self.filters, self.n_vocab, top_k, top_p)
        u64_rows(be, "seed", seed, n, self.stream)  # validate now, read at run time
        u64_rows(be, "position", position, n, self.stream)
        if advance_position:
            _advanceable(position)
        out_given = out
        if out is not None:
            out = _io.adopt(out)
            if be.is_device_array(out):
                V.fail("out", "a NumPy array (the cpu backend has no device memory)",
                       V.describe(out), TypeError)
            if not isinstance(out, np.ndarray):
                V.fail("out", f"an int32 array of shape ({n},)", V.describe(out), TypeError)
            _host_out(out, n)
        if fresh:  # a one-off call's own outputs: no other call (thread) writes them
            # as on a GPU, where they are device allocations, which a capture forbids
            be.check_can_allocate(self.stream, "outputs: a one-off call's new output arrays")
            outputs = (np.empty(n, np.int32), np.empty(n, np.float32), np.empty(n, np.int32))
        else:
            if self._outputs is None:
                self.prewarm()
            outputs = self._outputs
        tokens = out if out is not None else outputs[0]
        logprobs, status = outputs[1], outputs[2]

        def work():
            # seeds and positions are read when the work runs, so graph replays see the values
            # copied in between (the emulated capture records this closure)
            seed_v, _ = u64_rows(self.backend, "seed", seed, n, self.stream)
            pos_v, _ = u64_rows(self.backend, "position", position, n, self.stream)
            tok, lp, stat, _ = R.sample_with_margin(
                logits, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                seed=seed_v, position=pos_v, order=self.order, dtype=dtype)
            tokens[...] = tok
            logprobs[...] = lp
            status[...] = stat
            if advance_position:
                position[...] += 1

        self.backend.enqueue(self.stream, work)
        return self._finish(out_given if out_given is not None else tokens, logprobs, status,
                            return_logprobs, check)


def _advanceable(position) -> np.ndarray:
    """A host ``position`` that ``advance_position=True`` may bump in place, or the error naming
    it: a writeable int64 / uint64 NumPy array of positions (a narrower dtype would wrap
    inside its own range, not mod 2**64)."""
    if not isinstance(position, np.ndarray) or position.ndim != 1:
        V.fail("position", "a device array, or an int64 or uint64 NumPy array, when "
               "advance_position=True (it is advanced in place)", V.describe(position))
    if position.dtype not in (np.int64, np.uint64):
        V.fail("position", "an int64 or uint64 array when advance_position=True (advanced in "
               "place mod 2**64)", f"dtype {position.dtype}", TypeError)
    if not position.flags.writeable:
        V.fail("position", "a writeable array when advance_position=True", "a read-only array")
    return position


def _host_out(out: np.ndarray, n: int) -> np.ndarray:
    """A NumPy ``out=`` checked: int32, shape (n,), writeable (the error names ``out``)."""
    if out.shape != (n,) or out.dtype != np.int32:
        V.fail("out", f"an int32 array of shape ({n},)", V.describe(out), TypeError)
    if not out.flags.writeable:
        V.fail("out", "a writeable array", "a read-only array")
    return out


def _guard_alloc(be, st, fw, what: str):
    """Refuse an allocation while a capture that forbids it is active (before any driver call);
    returns the framework's current stream handle on the stream's device (None for numba).

    torch's caching allocator serves a capture on torch's current stream from the graph's own
    pool (torch.cuda.graph captures there), so torch outputs on that stream are always allowed.
    """
    cur = _io.current_stream(fw, st.device)
    if fw == _io.TORCH and st.handle == cur:
        return cur
    be.check_can_allocate(st, what)
    return cur


def _status_to_host(be, status, st) -> np.ndarray:
    fw = _io.framework_of(status)
    if fw is None:
        return np.asarray(be.to_host(status, st))
    be.synchronize(st)  # our kernels ran on `st`, which the framework's copy does not wait for
    if fw == _io.TORCH:
        return status.cpu().numpy()
    return status.get()


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


def _plan_for(be, logits, kx, dtype, stream, order, splits=None, block=None, cap=None):
    """(the cached plan, the stream) of a one-off call's (shape, dtype, stream, order).

    ``stream=None`` with torch or CuPy logits is the framework's current stream of the logits'
    device (read per call, cheaply); ``kx`` is the logits' :func:`interop.device_key` answer.
    """
    if kx is not None:
        st = _io.keyed_stream(be, (kx,)) if stream is None else _io.call_stream(be, stream, logits)
        shape_dtype = (kx[0][1], kx[0][3])  # torch.Size / tuple and the framework's dtype
    else:
        st = be.stream(stream)
        shape_dtype = (logits.shape, logits.dtype.str) if isinstance(logits, np.ndarray) else None
    key = (id(be), shape_dtype, dtype, st.device, st.handle, order, splits, block, cap)
    plan = _PLANS.get(key) if shape_dtype is not None else None
    if plan is not None:
        return plan, st
    name, (n_rows, n_vocab) = _logits_kind(logits, dtype)
    if n_vocab < 1:
        V.fail("logits", "at least one column (n_vocab >= 1)", f"shape {(n_rows, n_vocab)}")
    if n_rows < 1:
        V.fail("logits", "at least one row", f"shape {(n_rows, n_vocab)}")
    plan = Sampler(n_rows, n_vocab, name, stream=st, order=order, _splits=splits,
                   _block=block, _cap=cap)
    if shape_dtype is None:
        return plan, st
    with _PLANS_LOCK:
        plan = _PLANS.setdefault(key, plan)
        while len(_PLANS) > _PLAN_ENTRIES:
            _PLANS.pop(next(iter(_PLANS)), None)
    return plan, st


#: one-off calls whose torch outputs one allocation serves (Sampler._pooled_outputs)
_POOL_CALLS = 16

_PLANS: dict = {}
_PLANS_LOCK = threading.Lock()
_PLAN_ENTRIES = 16
#: One-off plans of torch logits on torch's current stream, by (shape, torch dtype, dtype,
#: order, device, current stream): :func:`sample`'s repeated call finds its plan in one lookup
#: and runs through :meth:`Sampler._torch_repeat` (``fresh``). Bounded like ``_PLANS``.
_TORCH_PLANS: dict = {}


def sample(logits, *, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed, position,
           order: str = "llama", return_logprobs: bool = False, advance_position: bool = False,
           check: bool = True, out=None, stream=None, dtype: str | None = None, _splits=None,
           _block=None, _cap=None):
    """Sample one token per row with SPEC §2's filters and Gumbel-max draw.

    Parameters
    ----------
    logits : array, shape (n_rows, n_vocab)
        float32, float16 or bfloat16; NumPy or a torch CPU tensor (copied to the device) or a
        device array used in place: a torch CUDA tensor, a CuPy or numba array, anything with
        ``__cuda_array_interface__`` or ``__dlpack__``. Rows may be strided; elements must be
        contiguous (a NumPy array is copied in order anyway), and a device array's address and
        row stride multiples of its element size (anything else is refused, naming ``logits``).
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
        Increment ``position`` after the draw: a device array on the device (stream-ordered,
        per replay in a graph), or a writeable int64 / uint64 NumPy array of n_rows positions
        on the host, in place, mod 2**64 (every backend; not inside a capture on a GPU).
    check : bool
        True (default): synchronize and raise :class:`SamplingError` naming rows with no finite
        logit. False: never synchronize; return the status array as well.
    out : int32 array (n_rows,), optional
        Where to write tokens, returned as given: a device array (torch, CuPy or numba), or a
        NumPy array (or torch CPU tensor), which a device backend fills before returning (it
        synchronizes the stream; refused inside a capture there).
    stream : optional
        A backend (numba) stream, raw handle, torch or CuPy stream, ``__cuda_stream__`` object,
        or None: torch's current stream of the logits' device for torch logits, CuPy's current
        stream for CuPy logits, the backend's default stream otherwise.
    dtype : {None, "float32", "float16", "bfloat16"}
        Must name the logits' dtype when given; "bfloat16" also marks a uint16 array as
        bfloat16 bit patterns.

    Returns
    -------
    tokens : int32 array (n_rows,)
        In the logits' framework (torch tensors for torch logits, CuPy arrays for CuPy, numba
        device arrays otherwise; NumPy on ``cpu``), this call's own (a repeated call with torch
        logits: rows of a block torch allocated for 16 calls, no byte shared with another
        call's; never inside a capture); -1 where no logit is
        finite.
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
    CaptureError
        Inside a capture: a one-off call with NumPy, numba or CuPy logits (``ScratchNotWarmed``,
        its outputs are new arrays, on every backend); on a device backend also a NumPy ``out``
        or an advancing NumPy ``position``.

    Notes
    -----
    Stream-ordered on ``stream``; synchronizes only for ``check=True``. Host parameters are
    copied to the device once per distinct value (not allowed during capture). Inside a capture
    (``rocsample.graphs.capture``, ``torch.cuda.graph``, CuPy's, a raw one) a call with torch
    logits works once warmed by a call outside it with the same layouts and host values on that
    stream (its outputs come from torch's allocator); numba/CuPy outputs would allocate and are
    refused with ``ScratchNotWarmed``. For graphs prefer :meth:`Sampler.capture`, or a
    :class:`Sampler` called inside the capture with ``check=False``.

    Examples
    --------
    >>> import numpy as np, rocsample.sampling as rs
    >>> logits = np.log(np.array([[0.1, 0.7, 0.2]], np.float32))
    >>> int(np.asarray(rs.sample(logits, temperature=0.0, seed=0, position=0))[0])
    1
    """
    # a repeated one-off call with torch logits on torch's current stream: the plan in one
    # lookup, the bound call through Sampler._torch_repeat
    tk = None
    if (_ADOPT(type(logits)) is _TORCH_ADOPT and stream is None and _splits is None
            and _block is None and _cap is None):
        d = logits.get_device()
        plan = None
        if d >= 0:  # (a CPU tensor is read as NumPy below: no torch stream of it)
            tk = (logits.shape, logits.dtype, dtype, order, d, _io.current_stream(_io.TORCH, d))
            plan = _TORCH_PLANS.get(tk)
        if plan is not None and plan.backend is _backend():
            if plan._fast and _FAST is not None:  # in C (Sampler._fast_entry)
                got = _FAST(plan._fast, logits, temperature, top_k, top_p, min_p, seed,
                            position, return_logprobs, advance_position, check, out, dtype, True)
                if got is not None:
                    return got
            got = plan._torch_repeat(logits, temperature, top_k, top_p, min_p, seed, position,
                                     return_logprobs, advance_position, check, out, dtype, True)
            if got is not None:
                return got
    if order not in _ORDERS:
        V.fail("order", "'llama' or 'vllm'", V.describe(order))
    be = _backend()
    if be.is_device:
        logits, kx = _io.adopt_key(be, logits)
    else:
        logits, kx = _io.adopt(logits), None
    plan, st = _plan_for(be, logits, kx, dtype, stream, order, _splits, _block, _cap)
    if tk is not None and be.is_device:
        if len(_TORCH_PLANS) >= _PLAN_ENTRIES:
            _TORCH_PLANS.clear()
        _TORCH_PLANS[tk] = plan  # (a cached plan of _PLANS: the same object)
    if not be.is_device:
        plan._check_logits(logits, dtype)
        return plan._call_cpu(logits, temperature, top_k, top_p, min_p, seed, position,
                              return_logprobs, advance_position, check, out, dtype, True)
    # one-off results are the caller's: outputs made for this call (no other call or thread
    # shares them), in the logits' framework
    return plan._call(logits, temperature, top_k, top_p, min_p, seed, position,
                      return_logprobs, advance_position, check, out, dtype, True, st, kx)


def argmax(logits, *, return_logprobs: bool = False, check: bool = True, out=None, stream=None,
           dtype: str | None = None, _splits=None, _block=None):
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
                  _block=_block)
