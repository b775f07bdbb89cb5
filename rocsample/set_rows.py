"""``set_rows`` (SPEC §3): ggml's GGML_OP_SET_ROWS on every backend, plus a ring-buffer helper.

The launcher validates shapes and dtypes on the host, then runs the kernels of
``rocsample.kernels.set_rows`` on one stream: one fused launch (validate and write in the same
kernel) when idx holds at most ``_FUSE_MAX_IDX`` indices, else three (reset, check, write); an
eager checked call to a quantized dst from a device src takes four (a finite-src check before the
write) whatever its size. Bad
indices never reach memory: no row of a call with a bad index is written. How that error reaches
the caller depends on the mode:

- eager, ``check_bounds=True`` (default) and the stream is not capturing: the per-call error slot
  is copied to the host, which synchronizes the stream, and ``IndexError`` is raised;
- captured (or ``check_bounds=False``): nothing is synchronized; the first error is kept in a
  per-(device, stream) device record that :func:`check_errors` turns into the same ``IndexError``.
  On ``cpu`` an eager ``check_bounds=False`` call raises at once; only captured calls are recorded.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _validate
from . import backends as _backends
from . import graphs as _graphs
from .backends import get_backend as _get_backend
from .backends import interop as _interop
from .backends.numba_arrays import c_strides
from .binder import Binder, fastcall, gaps
from .binder import stream_lock as _stream_lock
from .kernels import set_rows as _kern
from .kernels.quant import FLOAT_CODES, QTYPE_CODES
from .reference import set_rows as _ref
from .reference.quant import BLOCK_BYTES

__all__ = ["set_rows", "ring_write", "check_errors", "prewarm"]

_FLOAT_BLOCK = 256  # threads per row in the float kernel (capped at the row, rounded to a warp)
_VEC_BLOCK = 256  # threads per row in the paired (two values per word) float kernel
_FUSE_MAX_IDX = 4096  # at most this many indices in idx: one launch (every block reads all of idx)
_QUANT_BLOCK = 128  # threads (= 32-value blocks) per row chunk; <= kernels.set_rows._QROWS_SHARED
_MAX_GRID = 1 << 20  # row-loop kernels stride over rows past this many thread blocks
_SLOT_BYTES = 32

_lock = threading.Lock()  # guards _sticky and _sites
_sticky: dict = {}  # (backend id, device, stream handle) -> device int64[4] / host record
_sites: dict = {}  # (backend id, device, stream handle) -> {(idx shape, n_rows): site id}


def _backend():
    return _get_backend()


def _key(be, st):
    return (id(be), st.device, st.handle)


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def _capturing(be, st) -> bool:
    from .backends.base import CaptureStatus

    return be.runtime.capture_status(st) is not CaptureStatus.NONE


def _site(be, st, idx_shape, n_rows) -> int:
    with _lock:
        table = _sites.setdefault(_key(be, st), {})
        return table.setdefault((tuple(idx_shape), int(n_rows)), len(table))


def _site_info(be, st, site):
    with _lock:
        for k, v in _sites.get(_key(be, st), {}).items():
            if v == site:
                return k
    return None


def _sticky_record(be, st):
    """The device error record of (device, stream); allocated outside capture only."""
    k = _key(be, st)
    with _lock:
        rec = _sticky.get(k)
    if rec is not None:
        return rec
    if _capturing(be, st):
        from .errors import CaptureError

        raise CaptureError(
            "set_rows: this stream has no error record yet and capture forbids allocating one; "
            "call rocsample.set_rows.prewarm(stream, ...) or run set_rows once on it before capture"
        )
    rec = be.empty((4,), np.int64, st)
    be.copy_to_device(rec, np.zeros(4, np.int64), st)
    with _lock:
        return _sticky.setdefault(k, rec)


def _scratch_pool(be):
    from . import scratch

    return scratch.get_pool(be)


def _scratch(st, nbytes, purpose):
    from . import scratch

    return scratch.request(st, nbytes, purpose=purpose)


def _expand(cuda, arr, nd: int):
    """``arr`` with leading length-1 axes up to ``nd`` dims, always a view (never a copy)."""
    k = nd - len(arr.shape)
    if k <= 0:
        return arr
    if hasattr(arr, "_ary"):  # simulator array: numpy underneath
        return type(arr)(arr._ary[(None,) * k])
    cai = dict(arr.__cuda_array_interface__)
    shape = tuple(cai["shape"])
    strides = cai.get("strides")
    if strides is None:
        itemsize = np.dtype(cai["typestr"]).itemsize
        strides, acc = [], itemsize
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        strides = tuple(reversed(strides))
    lead = int(np.prod(shape)) * np.dtype(cai["typestr"]).itemsize or 1
    cai["shape"] = (1,) * k + shape
    cai["strides"] = (lead,) * k + tuple(strides)
    return cuda.from_cuda_array_interface(cai, owner=arr, sync=False)


def _check_devices(be, st, arrays):
    """Every device array of a call on one device, the stream's (a kernel cannot address another
    device's memory); NumPy arrays are skipped (they are copied to the device). Before any launch."""
    first = None
    for name, a in arrays:
        if isinstance(a, np.ndarray):
            continue
        dev = be.array_device(a)
        if first is None:
            first = (name, dev)
        elif dev != first[1]:
            _validate.fail(name, f"an array on device {first[1]} (where {first[0]} lives)", f"one on device {dev}")
    if first is not None and first[1] != st.device:
        _validate.fail("stream", f"a stream on device {first[1]} (where {first[0]} lives)",
                       f"a stream on device {st.device}")


def _require_arrays(**arrays):
    """dst, src and idx are arrays (NumPy, device or any object with dtype and shape) on every
    backend: a list or scalar is refused by name, not converted on one backend only."""
    for name, a in arrays.items():
        if not (hasattr(a, "dtype") and hasattr(a, "shape")):
            kind = {"idx": "an int32 or int64 array", "src": "a float32 or float16 array"}.get(
                name, "an array")
            _validate.fail(name, kind, f"{type(a).__name__} {_validate.describe(a)}", TypeError)


def set_rows(dst, src, idx, *, dst_type=None, stream=None, check_bounds=True):
    """Write rows of ``src`` into ``dst`` at the rows named by ``idx`` (ggml GGML_OP_SET_ROWS).

    ``dst[b3, b2, idx[b3 % i3, b2 % i2, r], :] = convert(src[b3, b2, r, :])``.

    Parameters
    ----------
    dst : array
        ``(d3, d2, n_rows, W)``, fewer leading axes allowed; written in place. float32 (``f32``),
        float16 (``f16``), uint16 bits or bfloat16 (``bf16``), or uint8 rows of ggml blocks for
        ``q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl`` (``W = ne0 / 32 * bytes per block``; those rows
        must be contiguous). Host (NumPy) or device (``__cuda_array_interface__``); a NumPy dst on
        a GPU backend is copied over and back, synchronously.
    src : array
        ``(d3, d2, n_src, ne0)`` float32 or float16; any strides (views) are fine; its memory
        must not overlap dst's.
    idx : array
        ``(i3, i2, n_src)`` int32 or int64 with ``d3 % i3 == 0`` and ``d2 % i2 == 0``; any strides.
    dst_type : str, optional
        The destination type; None infers f32 / f16 / bf16 from dst's dtype.
    stream : optional
        Backend stream, raw handle, torch or CuPy stream, or a ``__cuda_stream__`` object; None
        is torch's (CuPy's) current stream when an array is a torch tensor (CuPy array), else
        the backend's default stream.
    check_bounds : bool
        True: an eager call synchronizes the stream and raises on a bad index. False: never
        synchronizes; bad indices are skipped (the call writes nothing) and reported by
        :func:`check_errors` (on ``cpu`` an eager call raises at once either way).

    Returns
    -------
    array
        ``dst``.

    Raises
    ------
    IndexError
        An index outside ``[0, n_rows)``, naming its position in ``idx`` and its value; dst is
        left byte-for-byte unchanged.
    ValueError, TypeError
        Shape / broadcast mismatches, ne0 not a multiple of 32 for a quantized dst, wrong dtypes,
        a dst too small, non-contiguous quantized rows, a read-only dst, src or idx whose
        memory overlaps dst's, non-finite src for a quantized dst (host src always; device src
        in eager checked calls), device arrays on two devices or a stream of another device —
        all before any launch.

    Example
    -------
    >>> import numpy as np, rocsample
    >>> kv = np.zeros((4096, 128), np.float16)
    >>> rocsample.set_rows(kv, np.ones((1, 128), np.float32), np.array([7]))  # doctest: +SKIP

    Note
    ----
    Stream-ordered, on ``stream``: ONE launch when idx holds at most 4096 indices (each thread
    block checks all of idx itself, then writes); more indices take three (reset, check, write),
    and an eager checked call to a quantized dst from a device src takes four (plus a finite-src
    check) whatever its size. Capturable once the stream is warmed (:func:`prewarm`, or one eager
    call on it): under capture nothing synchronizes and a bad index makes the replayed write a
    no-op and sets the stream's error record (:func:`check_errors`). Duplicate destination rows:
    the highest source row wins. A repeated ``check_bounds=False`` call with device arrays of
    the same layouts (shape, strides, dtype, device) on the same stream reuses launches bound on
    its second call, re-pointed at this call's arrays (fresh tensors every step included): the
    layout checks are not made again, the overlap of src or idx with dst is (by address), and
    the stream's capture status is asked once.
    """
    fast = _binder.fast
    if fast and _FAST is not None:  # a repeated unchecked call with torch tensors, in C
        got = _FAST(fast, _backends, dst, src, idx, dst_type, stream, check_bounds)
        if got is not None:
            return got
    be = _get_backend()
    key = None
    if not check_bounds and be.is_device and (be.name != "sim" or _FAST_ON_SIM):
        # an unchecked call with device arrays of a layout seen before (a decode loop, fresh
        # tensors or not) reuses its launches, bound once, re-pointed at these arrays: what the
        # key names (layouts, read-only flags, devices, the stream, dst_type) is not checked
        # again; whether dst's bytes meet src's or idx's (addresses, not layouts) is
        get, learn = _ADOPT, _interop.adopter  # (interop.adopt_key without its own call)
        a_dst, kd = (get(type(dst)) or learn(type(dst)))(be, dst)
        a_src, ks = (get(type(src)) or learn(type(src)))(be, src)
        a_idx, ki = (get(type(idx)) or learn(type(idx)))(be, idx)
        if kd is not None and ks is not None and ki is not None:
            st = (_interop.keyed_stream(be, (kd, ks, ki)) if stream is None
                  else _interop.call_stream(be, stream))
            key = (id(be), st.handle, st.device, kd[0], ks[0], ki[0], dst_type)
            hit = _binder.lookup(key)
            g = None if hit is None else hit.extra  # (set once the binding thread has it)
            if g is not None:
                pd = kd[1]
                ps = ks[1]
                pi = ki[1]
                (ls, hs), (li, hi) = g  # src or idx meets dst: lo < pd - p < hi
                if not (ls < pd - ps < hs or li < pd - pi < hi):
                    ptrs = (pd, ps, pi)
                    with hit.lock or _stream_lock(be, st):
                        if hit.ready():  # the stream is not capturing, its scratch unmoved
                            hit.run(ptrs)
                            if stream is None and _FAST is not None:
                                _fast_entry(be, key, kd, ks, ki, dst, src, idx, st, hit, g)
                            return dst
                        if _run_requested(be, st, hit, ptrs):
                            return dst
                        _binder.drop(key)  # the scratch moved (growth, trim, a graph took it)
    _require_arrays(dst=dst, src=src, idx=idx)  # (the caller's objects, before any adoption)
    # DLPack producers and torch CPU tensors (NumPy views) alike on every backend; the dst
    # given is what is returned
    given = dst
    if key is None:
        dst, src, idx = _interop.adopt(dst), _interop.adopt(src), _interop.adopt(idx)
    else:
        dst, src, idx = a_dst, a_src, a_idx
    if not be.is_device:
        _set_rows_cpu(be, dst, src, idx, dst_type, stream)
        return given
    if key is None:
        st = _interop.call_stream(be, stream, dst, src, idx)
    # one call at a time per stream: calls share its scratch (slot, winner) and bound launches
    with _stream_lock(be, st):
        _set_rows_device(be, st, key, dst, src, idx, dst_type, check_bounds)
    return given


def _fast_entry(be, key, kd, ks, ki, dst, src, idx, st, hit, g) -> None:
    """Note a key the repeated path just served for rocsample._fastcall.set_rows_repeat, which
    then serves its calls in C: torch tensors of one type, torch's current stream (``stream``
    None), unchecked. The entry, in the order of the C source's ``R_*``: (key, the tensors'
    type, dst's, src's and idx's (shape, strides, dtype, device, address mod 16), dst_type,
    (torch, its current-raw-stream function), its answer for dst's device (0 for the legacy
    default stream), the BoundCall, the overlap gaps (lo_src, hi_src, lo_idx, hi_idx), the backend). Kept by the
    binder (:meth:`Binder.note_fast`), which empties the list whenever a bound call leaves
    its table."""
    t = type(dst)
    if type(src) is not t or type(idx) is not t:
        return
    if _interop.TORCH != kd[0][0] or _interop.TORCH != ks[0][0] or _interop.TORCH != ki[0][0]:
        return

    def make():
        raw = _interop.torch_raw()
        if raw is None:
            return None  # (Python asks torch for its current stream each call)
        (ls, hs), (li, hi) = g
        return (key, t, kd[0][1:], ks[0][1:], ki[0][1:], key[6], raw, int(raw[1](kd[0][4])),
                hit, (ls, hs, li, hi), be)

    _binder.note_fast(key, make)


def _run_requested(be, st, hit, ptrs) -> bool:
    """A bound call after the pool's requests (the stream may be capturing: the requests pin
    its scratch, and numba's frees are held under a foreign capture); False if the scratch
    moved. Under the stream's lock."""
    if hit.scratch:
        if not all(_scratch(st, n, purpose) is buf for purpose, n, buf in hit.scratch):
            return False
    else:  # no scratch to ask for: what a request does under a foreign capture
        _scratch_pool(be).note_call(st)
    hit.run(ptrs, False)  # launch by launch: the stream may be capturing
    _graphs.hold(st, hit)
    return True


def _set_rows_device(be, st, key, dst, src, idx, dst_type, check_bounds):
    t = _ref.resolve_dst_type(dst, dst_type)
    d4, s4, i3, _ = _ref.plan_shapes(dst, src, idx, t)
    _ref.check_writable(dst, "dst")
    _ref.check_apart(dst, src=src, idx=idx)
    if s4[0] * s4[1] * s4[2] * s4[3] == 0:
        return dst
    if t in BLOCK_BYTES and isinstance(src, np.ndarray):
        try:
            _ref.check_finite(src, t)
        except ValueError:
            # a bad index is reported before a non-finite value, as on cpu (the reference's
            # order), checked or not; only on this error path are the indices read on the host
            # (a device idx synchronizes the stream: the call raises either way)
            if not _capturing(be, st):
                host_idx = idx if isinstance(idx, np.ndarray) else be.to_host(idx, st)
                bad = _ref.first_bad_index(np.asarray(host_idx).reshape(i3), d4[2])
                if bad is not None:
                    raise _ref.index_error(bad[0], bad[1], tuple(idx.shape), d4[2]) from None
            raise
    if isinstance(dst, np.ndarray):
        if _capturing(be, st):
            be.check_not_capturing(st, "dst: a NumPy destination")
        host = np.ascontiguousarray(dst)
        d_dst = be.as_array(host, "dst", st)
        _launch(be, st, d_dst, src, idx, t, d4, s4, i3, check_bounds, dst.shape)
        dst[...] = be.to_host(d_dst, st).reshape(dst.shape)
        return dst
    d_dst = be.as_array(dst, "dst", st)
    launches, bufs = _launch(be, st, d_dst, src, idx, t, d4, s4, i3, check_bounds, dst.shape)
    if key is not None and launches:
        # bound on the second call with this key (binding costs about a millisecond); the
        # slots are the caller's arrays, re-pointed on every later call and never kept
        slots = [d_dst, be.as_array(src, "src", st), be.as_array(idx, "idx", st)]
        call = _binder.offer(key, be, st, launches, slots, scratch=bufs)
        if call is not None and call.extra is None:
            call.extra = gaps(call, 0, (1, 2))
        if call is not None and call.lock is None:
            pool = _scratch_pool(be)
            leases = tuple(pool.lease(st, purpose, buf) for purpose, _, buf in bufs)
            if None not in leases:
                call.guard(_stream_lock(be, st), be.runtime.capture_probe(st), pool, leases)
    return dst


#: the simulator has no launch overhead to save, but its bound launches re-point like a GPU's:
#: CI runs that path there too
_FAST_ON_SIM = True
# The repeated unchecked call with torch tensors in C (rocsample/_fastcall.c; set_rows), or
# None (then the Python repeated path above serves it): binder.fastcall
_FAST = fastcall("set_rows_repeat")
#: a decode step writes every layer's KV cache through one key (the layers' views share their
#: layout): one driver graph per (dst, src, idx) addresses, 64 of them (32 layers x K and V), so
#: a step's writes re-point nothing (on the H200's host a re-pointed node costs 4-7 us a call
#: more, and launching another layer's graph 0.1 us: tools/gpu/exec_probe.py)
_binder = Binder(entries=16, execs=64)
_ADOPT = _interop.ADOPTERS.get


def _layout(arr):
    """(address, shape, byte strides, itemsize) of a numba or simulator device array."""
    if hasattr(arr, "_ary"):  # simulator array: numpy underneath
        a = arr._ary
        return int(a.__array_interface__["data"][0]), a.shape, a.strides, a.itemsize
    cai = arr.__cuda_array_interface__
    shape = tuple(cai["shape"])
    itemsize = np.dtype(cai["typestr"]).itemsize
    strides = cai.get("strides") or c_strides(shape, itemsize)
    return int(cai["data"][0]), shape, tuple(strides), itemsize


def _word_view(cuda, arr4, wbytes):
    """A 4-D array of bits as a flat 1-D array of two-value words, and the word strides of its
    three row axes; None unless ne0 is even, the column axis is contiguous and every row starts
    on a whole word (so a word never straddles two rows or a row edge)."""
    ptr, shape, strides, itemsize = _layout(arr4)
    k = wbytes // itemsize
    if 0 in shape or shape[3] % k or strides[3] != itemsize or ptr % wbytes:
        return None
    ws = []
    for n, sb in zip(shape[:3], strides[:3]):
        if n == 1:
            ws.append(0)  # always index 0: its stride never matters
            continue
        if sb < 0 or sb % wbytes:
            return None
        ws.append(sb // wbytes)
    words = sum((n - 1) * w for n, w in zip(shape[:3], ws)) + shape[3] // k
    wdt = np.dtype(np.uint64 if wbytes == 8 else np.uint32)
    if hasattr(arr4, "_ary"):
        a = arr4._ary
        flat = np.lib.stride_tricks.as_strided(a, shape=(words * k,), strides=(itemsize,)).view(wdt)
        return type(arr4)(flat), ws
    cai = {"shape": (words,), "strides": None, "typestr": wdt.str, "data": (ptr, False), "version": 3}
    return cuda.from_cuda_array_interface(cai, owner=arr4, sync=False), ws


def _vec_plan(cuda, dst4, src4, t, src_f16):
    """Word views of dst and src for the paired float kernels, or None (scalar fallback)."""
    d = _word_view(cuda, dst4, 8 if t == "f32" else 4)
    if d is None:
        return None
    s = _word_view(cuda, src4, 4 if src_f16 else 8)
    if s is None:
        return None
    return d, s


def _byte_words(cuda, arr4):
    """A 4-D uint8 array as flat 1-D arrays of uint32 words and of uint16 halfwords, and the word
    strides of its three row axes; None unless every row starts on a whole word (a row's last two
    bytes may be half a word: the kernels write them through the halfword view)."""
    ptr, shape, strides, _ = _layout(arr4)
    if 0 in shape or ptr % 4 or strides[3] != 1:
        return None
    ws = []
    for n, sb in zip(shape[:3], strides[:3]):
        if n == 1:
            ws.append(0)
            continue
        if sb < 0 or sb % 4:
            return None
        ws.append(sb // 4)
    extent = sum((n - 1) * w * 4 for n, w in zip(shape[:3], ws)) + shape[3]
    words, half = extent // 4, extent // 2
    if hasattr(arr4, "_ary"):
        a = arr4._ary
        b = np.lib.stride_tricks.as_strided(a, shape=(extent,), strides=(1,))
        return type(arr4)(b[:words * 4].view(np.uint32)), type(arr4)(b[:half * 2].view(np.uint16)), ws
    def flat(n, typestr):
        cai = {"shape": (n,), "strides": None, "typestr": typestr, "data": (ptr, False), "version": 3}
        return cuda.from_cuda_array_interface(cai, owner=arr4, sync=False)

    return flat(words, "<u4"), flat(half, "<u2"), ws


def _quant_plan(cuda, dst4, src4, src_f16):
    """Word views of dst (uint32) and src (two values per word) for the word quant kernels, or
    None (the byte kernels: a row of src or dst that does not start on a whole word)."""
    d = _byte_words(cuda, dst4)
    if d is None:
        return None
    s = _word_view(cuda, src4, 4 if src_f16 else 8)
    if s is None:
        return None
    return d, s


def _on_device(be, a, name, st):
    """A device view of ``a``: device arrays as they are (any strides: the kernels take them), a
    NumPy array (any strides, negative too) copied over in C order, as the cpu backend reads it."""
    if isinstance(a, np.ndarray) and not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return be.as_array(a, name, st)


def _launch(be, st, d_dst, src, idx, t, d4, s4, i3, check_bounds, dst_shape):
    cuda = be.cuda
    ns = be.kernels(_kern.build)
    d_src = _on_device(be, src, "src", st)
    d_idx = _on_device(be, idx, "idx", st)
    src_f16 = _validate.dtype_of(d_src) == "float16"
    src4 = _expand(cuda, d_src.view(np.uint16 if src_f16 else np.uint32), 4)
    quant = t in BLOCK_BYTES
    if quant:
        dst4 = _expand(cuda, d_dst.view(np.uint8), 4)
    else:
        dst4 = _expand(cuda, d_dst.view(np.uint32 if t == "f32" else np.uint16), 4)
    _check_devices(be, st, (("dst", d_dst), ("src", d_src), ("idx", d_idx)))
    idx3 = _expand(cuda, d_idx, 3)
    d3, d2, n_src, ne0 = s4
    n_rows = d4[2]
    capturing = _capturing(be, st)
    eager_checked = check_bounds and not capturing
    record = 0 if eager_checked else 1
    sticky = _sticky_record(be, st)
    site = _site(be, st, tuple(idx.shape), n_rows)

    # n_src == 1: a (b3, b2) slice cannot hold a duplicate, so no winner pass is needed
    use_winner = 1 if n_src > 1 else 0
    n_chk = d3 * d2 * n_src
    n_idx = i3[0] * i3[1] * i3[2]
    n_win = d3 * d2 * n_rows if use_winner else 1
    if n_win >= 2**31 or n_src >= 2**31:  # the winner buffer is int32 (same limit on both paths)
        _validate.fail("dst", "fewer than 2**31 rows in all", f"{n_win} rows")
    finite_checked = quant and eager_checked and not isinstance(src, np.ndarray)
    warp = be.warp_size(st.device)
    grid = min(_MAX_GRID, n_chk)
    vec = None if quant else _vec_plan(cuda, dst4, src4, t, src_f16)
    qwords = _quant_plan(cuda, dst4, src4, src_f16) if quant else None
    if quant:
        block = min(_QUANT_BLOCK, _round_up(ne0 // 32, warp))
        code = (QTYPE_CODES[t], BLOCK_BYTES[t])
        if qwords is not None:
            (qd, qd16, (qd3, qd2, qdr)), (qs, (qs3, qs2, qsr)) = qwords
            qargs = (dst4, qd16, qd, qd3, qd2, qdr, qs, qs3, qs2, qsr, d3, d2)
    else:
        block = min(_VEC_BLOCK, _round_up(ne0 // 2, warp)) if vec else min(_FLOAT_BLOCK, _round_up(ne0, warp))
        code = (FLOAT_CODES[t],)
    if vec is not None:
        (dflat, (ds3, ds2, dsr)), (sflat, (ss3, ss2, ssr)) = vec
        words = (dflat, sflat, ds3, ds2, dsr, ss3, ss2, ssr, d3, d2)

    L = []  # (kernel, grid, block, args) in stream order
    bufs: tuple = ()
    if n_idx <= _FUSE_MAX_IDX and not finite_checked:
        # one launch: every block validates all of idx itself (more threads for a long idx)
        block = max(block, min(_QUANT_BLOCK if quant else _FLOAT_BLOCK, _round_up(n_idx, warp)))
        if eager_checked:
            sraw = _scratch(st, _SLOT_BYTES, "set_rows.slot")
            bufs = (("set_rows.slot", _SLOT_BYTES, sraw),)
            err = slot = sraw.view(np.int64)[:4]
        else:
            err = sticky  # the kernel reports into the sticky record directly: no scratch at all
        tail = (idx3, err, use_winner, record, site, src_f16, *code)
        if qwords is not None:
            L.append((ns._set_rows_fused_quant_kernel, grid, block, (*qargs, ne0 // 32, *tail)))
        elif quant:
            L.append((ns._set_rows_fused_quant_bytes_kernel, grid, block, (dst4, src4, *tail)))
        elif vec is not None:
            parts = -(-(ne0 // 2) // (4 * block))  # tiles of 4 words per thread
            L.append((ns._set_rows_fused_vec_kernel, min(_MAX_GRID, n_chk * parts), block,
                      (*words, ne0 // 2, n_rows, parts, *tail)))
        else:
            L.append((ns._set_rows_fused_float_kernel, grid, block, (dst4, src4, *tail)))
    else:
        wraw = _scratch(st, 4 * n_win, "set_rows.winner")
        sraw = _scratch(st, _SLOT_BYTES, "set_rows.slot")
        bufs = (("set_rows.winner", 4 * n_win, wraw), ("set_rows.slot", _SLOT_BYTES, sraw))
        wbuf = wraw.view(np.int32)[:n_win]
        winner = wbuf.reshape((d3, d2, n_rows)) if use_winner else wbuf.reshape((1, 1, 1))
        slot = sraw.view(np.int64)[:4]

        def flat(n):  # (grid, block) for a grid-stride loop over n items
            b = min(256, _round_up(max(n, 1), warp))
            return min(_MAX_GRID, max(1, -(-n // b))), b

        L.append((ns._set_rows_reset_kernel, *flat(n_win), (wbuf, slot)))
        L.append((ns._set_rows_check_kernel, *flat(n_chk), (idx3, winner, slot, n_rows, use_winner, d3, d2)))
        if finite_checked:
            L.append((ns._set_rows_finite_kernel, *flat(n_chk * ne0), (src4, slot, src_f16)))
        tail = (idx3, winner, slot, sticky, use_winner, record, site, src_f16, *code)
        if qwords is not None:
            L.append((ns._set_rows_quant_kernel, grid, block, (*qargs, n_src, ne0 // 32, *tail)))
        elif quant:
            L.append((ns._set_rows_quant_bytes_kernel, grid, block, (dst4, src4, *tail)))
        elif vec is not None:
            L.append((ns._set_rows_vec_kernel, grid, block, (*words, n_src, ne0 // 2, n_rows, *tail)))
        else:
            L.append((ns._set_rows_float_kernel, grid, block, (dst4, src4, *tail)))
    for kernel, g, b, args in L:
        be.launch(kernel, g, b, st, *args)
    if eager_checked:
        # the one host round trip of a checked call: it synchronizes `st`
        s = be.to_host(slot, st)
        if s[0] != _kern.NO_ERROR:
            raise _ref.index_error(int(s[0]), int(s[1]), tuple(idx.shape), n_rows)
        if s[2] != _kern.NO_ERROR:
            pos = tuple(int(p) for p in np.unravel_index(int(s[2]), tuple(src.shape)))
            _validate.fail("src", f"finite values for a {t} destination", f"inf or nan at position {pos}")
    return L, bufs


def _set_rows_cpu(be, dst, src, idx, dst_type, stream):
    st = be.stream(stream)
    if not _capturing(be, st):
        return _ref.set_rows(dst, src, idx, dst_type=dst_type)
    # validate now (bad shapes raise at capture time, as on a GPU); index errors at replay
    t = _ref.resolve_dst_type(dst, dst_type)
    _ref.plan_shapes(dst, src, idx, t)
    k = _key(be, st)

    def run():
        try:
            _ref.set_rows(dst, src, idx, dst_type=t)
        except IndexError as e:
            with _lock:
                _sticky.setdefault(k, e)

    be.enqueue(st, run)
    return dst


_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1


def _check_position(position, n: int, advance: bool) -> int:
    """A host position as a Python int in int64's range; to ``advance`` it by n, the advanced
    value must be in range too. ValueError naming ``position`` otherwise (before anything runs)."""
    p = int(position)
    hi = _I64_MAX - n if advance else _I64_MAX
    if not _I64_MIN <= p <= hi:
        what = (f"an int64 position that can advance by n={n}: in [-2**63, 2**63 - 1 - {n}]" if advance
                else "an int64 position: in [-2**63, 2**63 - 1]")
        _validate.fail("position", what, p)
    return p


def _ring_idx(position: int, n: int, n_rows: int) -> np.ndarray:
    """The ring rows of n new rows written from ``position``: ``(position + i) mod n_rows``
    (Python's %: negatives wrap), exact for every int64 position (reduced before the add)."""
    start = int(position) % n_rows
    return (start + np.arange(n, dtype=np.int64)) % n_rows


def _ring_write_cpu(be, dst, src, position, n, n_rows, dst_type, stream, advance):
    st = be.stream(stream)
    p = position if isinstance(position, np.ndarray) else np.asarray(position)
    if p.dtype != np.int64 or p.shape != (1,):
        _validate.fail("position", "an int or a 1-element int64 array", _validate.describe(position), TypeError)
    if advance:
        _ref.check_writable(p, "position")
    capturing = _capturing(be, st)
    k = _key(be, st)
    if not capturing:
        _check_position(p[0], n, advance)

    def run():
        # the position is read when the work runs (replay), not when it was recorded
        if capturing:
            _check_position(p[0], n, advance)
        idx = _ring_idx(p[0], n, n_rows)
        try:
            _ref.set_rows(dst, src, idx, dst_type=dst_type)
        except IndexError as e:
            if not capturing:
                raise
            with _lock:
                _sticky.setdefault(k, e)
        if advance:
            p[0] += n

    if capturing:
        _ref.plan_shapes(dst, src, np.zeros(n, np.int64), _ref.resolve_dst_type(dst, dst_type))
        be.enqueue(st, run)
    else:
        run()
    return dst


def prewarm(stream=None, *, n_rows_total: int = 1, ring_rows: int = 1) -> None:
    """Make ``stream`` ready for captured set_rows calls.

    Parameters
    ----------
    stream : optional
        The stream that will be captured.
    n_rows_total : int
        The largest ``d3 * d2 * n_rows`` of a captured call with more than one source row and
        more than 4096 indices (the duplicate-winner scratch); 1 when every captured call writes
        a single row or has at most 4096 indices (those take no scratch).
    ring_rows : int
        The most rows one captured :func:`ring_write` with a device position writes.

    Note
    ----
    Allocates; call it outside capture.
    """
    be = _backend()
    if not be.is_device:
        return
    st = be.stream(stream)
    from . import scratch

    _sticky_record(be, st)
    scratch.prewarm(st, {
        "set_rows.winner": 4 * max(1, int(n_rows_total)),
        "set_rows.slot": _SLOT_BYTES,
        "set_rows.ring_idx": 8 * max(1, int(ring_rows)),
    })


def check_errors(stream=None) -> None:
    """Raise the first bad-index error recorded on ``stream`` since the last check, then clear it.

    Parameters
    ----------
    stream : optional
        The stream whose record to read.

    Raises
    ------
    IndexError
        The same message an eager call would have raised (position in idx and value).

    CaptureError
        If ``stream`` is capturing (nothing is read or cleared).

    Note
    ----
    Synchronizes ``stream`` (one 32-byte copy). Calls made with ``check_bounds=True`` outside
    capture raise at once and are not recorded here.
    """
    be = _backend()
    st = be.stream(stream)
    # reading (and clearing) the record is a host round trip: not inside a capture, where it
    # would invalidate the capture on a GPU or be recorded into the graph on the emulated runtime
    be.check_not_capturing(st, "check_errors: reading the stream's error record")
    k = _key(be, st)
    if not be.is_device:
        with _lock:
            e = _sticky.pop(k, None)
        if e is not None:
            raise IndexError(str(e))
        return
    with _lock:
        rec = _sticky.get(k)
    if rec is None:
        return
    h = be.to_host(rec, st)
    if h[0] == 0:
        return
    be.copy_to_device(rec, np.zeros(4, np.int64), st)
    be.synchronize(st)
    info = _site_info(be, st, int(h[3]))
    shape, n_rows = info if info is not None else ((int(h[1]) + 1,), -1)
    raise _ref.index_error(int(h[1]), int(h[2]), shape, n_rows)


def ring_write(dst, src, position, *, dst_type=None, stream=None, check_bounds=True, advance=False):
    """Write ``n = src.shape[-2]`` new rows at ``(position + i) % n_rows`` (a ring buffer).

    Parameters
    ----------
    dst, src, dst_type, stream, check_bounds
        As :func:`set_rows`; idx is made here (1-D, shared by every (d3, d2) slice).
    position : int or device array
        The ring position of the first new row, an int64 value (``[-2**63, 2**63 - 1]``): a host
        integer, a 1-element int64 NumPy array (read on the host; ``advance`` bumps it in place
        after the write), or a 1-element int64 device array (graph replay: update it with
        stream-ordered copies, or let ``advance`` bump it). Rows are ``(position + i) mod n_rows``,
        exact at every position.
    advance : bool
        With an array ``position`` (writable): add n to it after the indices are made (on the
        device for a device position, where it wraps like an int64 counter past 2**63 - 1; a
        NumPy position that would pass 2**63 - 1 is refused).

    Returns
    -------
    array
        ``dst``.

    Raises
    ------
    ValueError, TypeError
        As :func:`set_rows`, before the position is read or advanced; a position outside int64,
        or a read-only one with ``advance``, by name. A negative position is wrapped like
        Python's ``%``.

    Example
    -------
    With a 4096-row ``kv`` this writes rows 4095, 0, 1, ...:

    >>> ring_write(kv, k_new, position=4095)  # doctest: +SKIP

    Note
    ----
    With a device position nothing synchronizes and the call is capturable (after
    :func:`prewarm`); with a host integer the indices are copied from the host.
    """
    _require_arrays(dst=dst, src=src)
    be = _backend()
    given = dst  # returned as given (torch CPU tensors and DLPack producers are adopted)
    dst, src, position = _interop.adopt(dst), _interop.adopt(src), _interop.adopt(position)
    _ring_write(be, dst, src, position, dst_type, stream, check_bounds, advance)
    return given


def _ring_write(be, dst, src, position, dst_type, stream, check_bounds, advance):
    sshape, dshape = tuple(src.shape), tuple(dst.shape)
    n = int(sshape[-2]) if len(sshape) >= 2 else 1
    n_rows = int(dshape[-2]) if len(dshape) >= 2 else 0
    if n_rows <= 0:
        _validate.fail("dst", "at least one row in the ring", f"shape {tuple(dst.shape)}")
    if isinstance(position, (int, np.integer)) and not isinstance(position, bool):
        idx = _ring_idx(_check_position(position, n, False), n, n_rows)
        return set_rows(dst, src, idx, dst_type=dst_type, stream=stream, check_bounds=check_bounds)
    if not be.is_device:
        return _ring_write_cpu(be, dst, src, position, n, n_rows, dst_type, stream, advance)
    st = be.stream(stream)
    if _validate.dtype_of(position) != "int64" or tuple(position.shape) != (1,):
        _validate.fail("position", "an int or a 1-element int64 device array", _validate.describe(position), TypeError)
    if advance:
        _ref.check_writable(position, "position")
    if isinstance(position, np.ndarray):
        # a host position: read now and, with advance, bumped in place after the write (as on cpu)
        be.check_not_capturing(st, "position: reading a NumPy position")
        idx = _ring_idx(_check_position(position[0], n, advance), n, n_rows)
        set_rows(dst, src, idx, dst_type=dst_type, stream=stream, check_bounds=check_bounds)
        if advance:
            position[0] += n
        return dst
    # everything set_rows checks, checked before the index kernel runs (it may advance position)
    t = _ref.resolve_dst_type(dst, dst_type)
    _ref.plan_shapes(dst, src, np.broadcast_to(np.int64(0), (n,)), t)
    _ref.check_writable(dst, "dst")
    _ref.check_apart(dst, src=src)
    _check_devices(be, st, (("dst", dst), ("src", src), ("position", position)))
    ns = be.kernels(_kern.build)
    d_pos = be.as_array(position, "position", st)
    with _stream_lock(be, st):  # the index scratch is the stream's until set_rows read it
        idx = _scratch(st, 8 * max(n, 1), "set_rows.ring_idx").view(np.int64)[:n]
        be.launch(ns._ring_index_kernel, 1, min(256, _round_up(max(n, 1), be.warp_size(st.device))),
                  st, d_pos, idx, n_rows, 1 if advance else 0)
        return set_rows(dst, src, idx, dst_type=dst_type, stream=st, check_bounds=check_bounds)
