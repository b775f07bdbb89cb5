"""The caller's framework (SPEC §1): torch, CuPy, numba, ``__cuda_array_interface__``, DLPack.

Three things per framework, each imported lazily (torch or CuPy only when the input is theirs,
found through ``sys.modules``, never imported here):

* **reading** an argument cheaply: :func:`device_key` answers ``(key, data address)`` for a
  device array from the framework's own attributes — torch ``data_ptr()`` / ``shape`` /
  ``stride()`` / ``dtype`` / ``get_device()``, CuPy ``data.ptr``, numba ``gpu_data`` — and
  builds ``__cuda_array_interface__`` only for other objects (it costs microseconds);
* **the current stream** (:func:`current_stream`): torch's ``current_stream()`` of the tensor's
  device, CuPy's ``get_current_stream()``; everything else has none (the backend default);
* **outputs in kind**: :func:`empty` allocates in the caller's framework (torch's and CuPy's
  stream-aware caching allocators), :func:`wrap` views a backend array zero-copy in it.

:func:`as_cai` turns a torch tensor or a DLPack producer into a ``__cuda_array_interface__``
description numba can view (without torch's own interface, which refuses bfloat16 and tensors
that require grad).
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

#: framework tags (the first element of every key this module makes)
TORCH, CUPY, NUMBA, SIM, CAI, DLPACK = "torch", "cupy", "numba", "sim", "cai", "dlpack"

_UNKNOWN = object()
_readers: dict = {}  # type -> reader(be, value) -> (key, address) | None, or None: no device array


def device_key(be, v):
    """``(key, data address)`` of a device array ``v``, or None when ``v`` is none.

    ``key`` is ``(framework, shape, strides, dtype, device, address % 16)``: what a bound launch
    depends on besides the address (the alignment class too, since a launcher may pick a
    vectorised kernel from it). Hashable.
    """
    r = _readers.get(type(v), _UNKNOWN)
    if r is _UNKNOWN:
        r = _learn(type(v))
    return None if r is None else r(be, v)


#: type -> adopter(be, value) -> (adopt(value), device_key(be, adopt(value))): what hot paths
#: call, ``(ADOPTERS.get(type(v)) or adopter(type(v)))(be, v)`` (one dict read and one call)
ADOPTERS: dict = {}


def adopt_key(be, v):
    """``(adopt(v), device_key(be, adopt(v)))`` with one look-up of ``v``'s type."""
    return (ADOPTERS.get(type(v)) or adopter(type(v)))(be, v)


def adopter(tp):
    """The :data:`ADOPTERS` entry of type ``tp`` (learnt on first use)."""
    f = ADOPTERS.get(tp)
    if f is not None:
        return f
    r = _readers.get(tp, _UNKNOWN)
    if r is _UNKNOWN:
        r = _learn(tp)
    if r is None:
        def f(be, v):
            return v, None
    elif r is _torch_key:
        f = _torch_adopt
    elif r is _dlpack_key:
        f = _dlpack_adopt
    else:
        def f(be, v, _r=r):
            return v, _r(be, v)
    ADOPTERS[tp] = f
    return f


def _torch_adopt(be, t):
    """_torch_key's answer with the tensor (the hot one: no second call)."""
    d = t.get_device()
    if d < 0:
        return torch_host(t), None  # a torch CPU tensor: a NumPy view, as adopt() makes
    p = t.data_ptr()
    return t, ((TORCH, t.shape, t.stride(), t.dtype, d, p & 15), p)


def _dlpack_adopt(be, v):
    held = from_dlpack(v)
    k = device_key(be, held)
    # the producer's type too: the holder is one type for every producer, and the checks a
    # bound call skips read the producer (set_rows' .dtype / .shape)
    return held, (None if k is None else ((*k[0], type(v)), k[1]))


def adopt(v):
    """A DLPack-only producer (``__dlpack__`` without ``__cuda_array_interface__``) as a NumPy
    array (CPU memory) or a CAI holder (device memory), a torch CPU tensor as a NumPy view of
    its memory (:func:`torch_host`); anything else is returned unchanged."""
    r = _readers.get(type(v), _UNKNOWN)
    if r is _UNKNOWN:
        r = _learn(type(v))
    if r is _dlpack_key:
        return from_dlpack(v)
    if r is _torch_key and v.get_device() < 0:
        return torch_host(v)
    return v


def torch_host(t):
    """A torch CPU tensor as a NumPy array sharing its memory (DLPack's CPU rule: host memory
    reads as NumPy, on every backend), so writes (``out=``, an advanced position, a set_rows
    dst) land in the tensor. bfloat16 reads as its uint16 bit patterns (NumPy has no bfloat16);
    a dtype NumPy cannot hold leaves the tensor as it is (the argument checks refuse it)."""
    torch = sys.modules["torch"]
    t = t.detach()  # a tensor that requires grad exports no DLPack capsule
    try:
        if t.dtype == torch.bfloat16:
            return np.from_dlpack(t.view(torch.int16)).view(np.uint16)
        return np.from_dlpack(t)
    except (BufferError, TypeError, RuntimeError, ValueError):
        return t


def framework_of(v) -> str | None:
    """TORCH or CUPY for those frameworks' arrays, else None (numba, NumPy, others)."""
    tp = type(v)
    t = sys.modules.get("torch")
    if t is not None and issubclass(tp, t.Tensor):
        return TORCH
    c = sys.modules.get("cupy")
    if c is not None and issubclass(tp, c.ndarray):
        return CUPY
    return None


def _learn(tp):
    t = sys.modules.get("torch")
    c = sys.modules.get("cupy")
    nb = sys.modules.get("numba.cuda.cudadrv.devicearray")
    sim = sys.modules.get("numba.cuda.simulator.cudadrv.devicearray")
    if issubclass(tp, np.ndarray) or issubclass(tp, np.generic):
        r = None
    elif t is not None and issubclass(tp, t.Tensor):
        r = _torch_key
    elif c is not None and issubclass(tp, c.ndarray):
        r = _cupy_key
    elif sim is not None and issubclass(tp, sim.FakeCUDAArray):
        r = _sim_key
    elif nb is not None and issubclass(tp, getattr(nb, "DeviceNDArrayBase", ())):
        r = _numba_key
    elif hasattr(tp, "__cuda_array_interface__"):
        r = _cai_key
    elif hasattr(tp, "__dlpack__") and hasattr(tp, "__dlpack_device__"):
        r = _dlpack_key
    else:
        r = None
    _readers[tp] = r
    return r


def _device_of(be, v) -> int:
    """The device of a numba / CAI array: asked (a driver query) only with several devices."""
    multi = getattr(be, "_interop_multi", None)
    if multi is None:
        multi = be._interop_multi = be.runtime.device_count() > 1
    return be.array_device(v) if multi else 0


def _torch_key(be, t):
    d = t.get_device()
    if d < 0:
        return None  # a CPU tensor is no device array
    p = t.data_ptr()
    return (TORCH, t.shape, t.stride(), t.dtype, d, p & 15), p


def _cupy_key(be, a):
    p = a.data.ptr
    return (CUPY, a.shape, a.strides, a.dtype, a.device.id, p & 15), p


def _numba_key(be, a):
    g = a.gpu_data
    p = 0 if g is None else int(g.device_pointer)
    return (NUMBA, a.shape, a.strides, a.dtype, _device_of(be, a), p & 15), p


def _sim_key(be, a):
    x = a._ary
    p = x.__array_interface__["data"][0]
    # (read-only memory too: set_rows refuses a read-only dst, and a bound call checks nothing)
    return (SIM, x.shape, x.strides, x.dtype, be.array_device(a), p & 15, x.flags.writeable), p


def _cai_key(be, v):
    c = v.__cuda_array_interface__
    data = c["data"]
    p = int(data[0])
    strides = c.get("strides")
    # the object's type and the read-only flag too: the checks a bound call skips read them
    # (an array without .dtype / .shape, a read-only dst)
    return (CAI, tuple(c["shape"]), None if strides is None else tuple(strides), c["typestr"],
            _device_of(be, v), p & 15, type(v), bool(data[1])), p


def _dlpack_key(be, v):
    arr = from_dlpack(v)
    if isinstance(arr, np.ndarray):
        return None
    c = arr.__cuda_array_interface__
    p = int(c["data"][0])
    return (DLPACK, tuple(c["shape"]), c["strides"], c["typestr"], arr.device, p & 15,
            bool(c["data"][1])), p


# ---- conversion for numba (the unbound path) ------------------------------------------------

_TORCH_TYPESTR = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2", "float64": "<f8",
                  "int64": "<i8", "int32": "<i4", "int16": "<i2", "int8": "|i1", "uint8": "|u1",
                  "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "bool": "|b1"}


def as_cai(v):
    """A ``__cuda_array_interface__`` holder for a CUDA torch tensor or a DLPack producer, or
    None for anything else (numba reads the others' own interface). bfloat16 reads as uint16
    bit patterns (numba has no bfloat16)."""
    t = sys.modules.get("torch")
    if t is not None and isinstance(v, t.Tensor):
        if v.get_device() < 0:
            return None
        name = str(v.dtype)[len("torch."):]
        ts = _TORCH_TYPESTR.get(name)
        if ts is None:
            return None
        item = v.element_size()
        shape = tuple(v.shape)
        strides = tuple(s * item for s in v.stride())
        return _Interface({"shape": shape, "strides": strides, "typestr": ts,
                           "data": (v.data_ptr(), False), "version": 3}, v, v.get_device())
    if hasattr(type(v), "__dlpack__") and not hasattr(v, "__cuda_array_interface__"):
        arr = from_dlpack(v)
        return None if isinstance(arr, np.ndarray) else arr
    return None


class _Interface:
    """A ``__cuda_array_interface__`` and the object that owns its memory (kept alive)."""

    __slots__ = ("__cuda_array_interface__", "owner", "device", "dtype", "shape")

    def __init__(self, cai, owner, device) -> None:
        self.__cuda_array_interface__ = cai
        self.owner = owner
        self.device = device
        self.shape = cai["shape"]
        self.dtype = np.dtype(cai["typestr"])


# ---- DLPack -----------------------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_CPU, _DL_CUDA, _DL_CUDA_MANAGED, _DL_ROCM = 1, 2, 13, 10
_DL_KIND = {0: "i", 1: "u", 2: "f", 4: "u", 6: "b"}  # int, uint, float, bfloat (as bits), bool

_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]


def from_dlpack(v):
    """A DLPack producer as a NumPy array (CPU memory) or a CAI holder (device memory).

    The capsule stays alive with the holder (its deleter runs when the holder goes), so the
    producer's memory outlives every view of it. Raises TypeError for other devices or dtypes.
    """
    dev_type, dev_id = v.__dlpack_device__()
    dev_type = int(dev_type)
    if dev_type == _DL_CPU:
        return np.from_dlpack(v)
    if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED, _DL_ROCM):
        raise TypeError(f"expected a DLPack array in CPU or GPU memory, got device type {dev_type}")
    cap = v.__dlpack__()
    return _Interface(parse_dlpack(cap), cap, int(dev_id))


def parse_dlpack(cap) -> dict:
    """The ``__cuda_array_interface__`` description of an (unconsumed) DLPack capsule."""
    ptr = _capsule_get(cap, b"dltensor")
    t = _DLTensor.from_address(ptr)  # DLManagedTensor begins with its DLTensor
    kind = _DL_KIND.get(int(t.dtype.code))
    if kind is None or int(t.dtype.lanes) != 1:
        raise TypeError(f"unsupported DLPack dtype (code {t.dtype.code}, lanes {t.dtype.lanes})")
    item = int(t.dtype.bits) // 8
    ts = f"{'|' if item == 1 else '<'}{kind}{item}"
    nd = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(nd))
    strides = tuple(int(t.strides[i]) * item for i in range(nd)) if t.strides else None
    data = int(t.data or 0) + int(t.byte_offset)
    return {"shape": shape, "strides": strides, "typestr": ts, "data": (data, False), "version": 3}


# ---- streams ----------------------------------------------------------------------------------

_torch_raw = (None, None)  # (the torch module, its current-raw-stream function or None)


def _torch_current(torch):
    global _torch_raw
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    _torch_raw = (torch, raw)
    return raw


def torch_raw():
    """(torch, its current-raw-stream function) as :func:`current_stream` last used them, or
    None where that function is missing or the torch module changed since (rocsample._fastcall's
    entries call it themselves, checking the module)."""
    mod, fn = _torch_raw
    if fn is None or mod is not sys.modules.get("torch"):
        return None
    return mod, fn


def current_stream(fw: str | None, device: int) -> int | None:
    """The raw handle of ``fw``'s current stream on ``device``, or None (no framework rule)."""
    if fw == TORCH:
        torch = sys.modules["torch"]
        mod, raw = _torch_raw
        if mod is not torch:
            raw = _torch_current(torch)
        if raw is not None:
            return int(raw(device))
        return int(torch.cuda.current_stream(device).cuda_stream)
    if fw == CUPY:
        cupy = sys.modules["cupy"]
        try:
            return int(cupy.cuda.get_current_stream(device).ptr)
        except TypeError:  # older CuPy: the current device's only
            return int(cupy.cuda.get_current_stream().ptr)
    return None


_streams: dict = {}  # (backend id, handle, device) -> Stream of a framework's current stream


def call_stream(be, stream, *arrays):
    """The normalised stream of a call (SPEC §1): ``stream`` itself when given; for None the
    current stream of the first torch or CuPy array among ``arrays`` on that array's device,
    else the backend's default stream.

    The framework tells the device of its current stream, so the normalised stream is cached by
    (handle, device) and costs one dict lookup. The legacy default stream (handle 0) of a device
    that is not the current one is refused: its handle means the current device's.
    """
    if stream is not None or not be.is_device:
        st = be.stream(stream)
        if stream is not None and (type(stream).__module__ or "").startswith("torch"):
            note_torch_stream(st.device, st.handle)
        return st
    return keyed_stream(be, [device_key(be, a) for a in arrays if framework_of(a) is not None])


#: the frameworks with a current-stream rule and outputs of their own (device_key tags)
FRAMEWORKS = (TORCH, CUPY)


def keyed_stream(be, keys):
    """``call_stream(be, None, ...)`` from the arrays' :func:`device_key` answers (None for one
    that is no device array): the current stream of the first torch or CuPy array's framework
    on that array's device, else the backend's default stream. One dict read when seen before."""
    for k in keys:
        if k is None:
            continue
        k = k[0]
        fw = k[0]
        if fw not in FRAMEWORKS:
            continue
        dev = k[4]
        h = current_stream(fw, dev)
        st = _streams.get((id(be), h, dev))
        if st is None:
            st = _framework_stream(be, fw, h, dev)
        return st
    return be.stream(None)


def _framework_stream(be, fw, h, dev):
    if fw == TORCH:
        note_torch_stream(dev, h)
    st = be.stream(h if h != 0 else None)
    if st.device != dev:
        raise ValueError(
            f"stream: expected a stream of device {dev} (where the {fw} arrays live; its "
            "default stream is not the current device's: pass stream= or make that device "
            f"current), got None on device {st.device}")
    if len(_streams) >= 64:
        _streams.clear()
    _streams[(id(be), h, dev)] = st
    return st


#: (device, handle) of torch streams calls ran on. torch hands its streams out of a per-device
#: pool and never destroys them, so asking their capture status later is always defined (a
#: destroyed stream's handle is not: rocsample asks no other stream it merely saw once)
_durable: set = set()
_DURABLE_MAX = 4096


def note_torch_stream(device: int, handle: int) -> None:
    """Remember a torch stream (see ``_durable``); bounded (torch's pools hold 32 per device
    and priority, external streams aside)."""
    if handle and len(_durable) < _DURABLE_MAX:
        _durable.add((device, handle))


def known_devices() -> set[int]:
    """The devices of the torch streams calls ran on (see ``known_streams``)."""
    return {d for (d, _h) in list(_durable)}


def known_streams(device: int) -> set[int]:
    """Handles of ``device``'s streams whose capture status can be asked safely now: the torch
    streams calls ran on, and torch's and CuPy's current streams of this thread (asked only
    where that framework is imported and, for torch, has initialised CUDA)."""
    out = {h for (d, h) in list(_durable) if d == device}
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                out.add(current_stream(TORCH, device))
        except Exception:  # a torch without CUDA
            pass
    if sys.modules.get("cupy") is not None:
        try:
            out.add(current_stream(CUPY, device))
        except Exception:  # no CUDA device for CuPy
            pass
    return out


# ---- outputs ----------------------------------------------------------------------------------

_torch_args: dict = {}  # (torch module, dtype, device) -> (torch dtype, torch.device)


def empty(fw: str, shape, dtype, device: int, stream_handle: int, current=None):
    """A new array in ``fw`` on ``device``, safe to write from ``stream_handle``.

    torch: the caching allocator hands blocks out per stream; a block allocated on the current
    stream but written on another is marked used there too (``record_stream``), so it is not
    handed out again before that stream's work is done. CuPy: allocated with the call's stream
    current (its pool keeps an arena per stream). ``current``: the framework's current stream
    handle on ``device`` when the caller read it already.
    """
    if fw == TORCH:
        torch = sys.modules["torch"]
        a = _torch_args.get((torch, dtype, device))
        if a is None:
            if len(_torch_args) >= 64:
                _torch_args.clear()
            a = _torch_args[(torch, dtype, device)] = (getattr(torch, np.dtype(dtype).name),
                                                       torch.device("cuda", device))
        t = torch.empty(shape, dtype=a[0], device=a[1])
        if stream_handle != (current_stream(TORCH, device) if current is None else current):
            t.record_stream(torch.cuda.ExternalStream(stream_handle, device=t.device))
        return t
    if fw == CUPY:
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            if stream_handle != current_stream(CUPY, device):
                with cupy.cuda.ExternalStream(stream_handle, device):
                    return cupy.empty(shape, dtype)
            return cupy.empty(shape, dtype)
    raise ValueError(f"framework: expected {TORCH!r} or {CUPY!r}, got {fw!r}")


def wrap(fw: str | None, arr, device: int):
    """``arr`` (a backend device array) as an array of ``fw``, zero-copy; ``arr`` itself for None."""
    if fw == TORCH:
        torch = sys.modules["torch"]
        return torch.as_tensor(arr, device=torch.device("cuda", device))
    if fw == CUPY:
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            return cupy.asarray(arr)
    return arr
