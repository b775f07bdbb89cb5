"""A GPU backend without a GPU: the real ``GpuBackend`` / ``DriverRuntime`` / binder code over a
no-op driver, for host-overhead work (``tools/host_harness.py``) and tests of the bound paths.

What is real: every line of ``rocsample`` (``backends/gpu.py``'s ``bind`` and its ctypes launch,
``backends/_driver.py``'s ctypes stream queries, the scratch pool, the binder, interop). What is
fake, and how:

* **the driver**: ``driver.c`` (compiled with the C compiler on first use into a temporary
  directory) exports ``cuLaunchKernel`` / ``cuGraphLaunch`` / ``cuStreamIsCapturing`` /
  ``cuStreamGetDevice`` look-alikes that the vendor names as its ``native`` symbols, so the ctypes
  calls are the ones a GPU run makes. A launch does nothing but log its parameters; capture status
  is set by :meth:`FakeGpu.set_capturing` / :meth:`FakeGpu.set_global_capture`. The binding-layer
  calls (``cuMemAlloc`` and friends) are Python functions in :class:`FakeDriver`.
* **numba.cuda**: :class:`FakeCuda` — kernels are :class:`FakeKernel` objects (``specialize``
  types arguments with numba's own types and packs them as numba-cuda's ``_prepare_args`` does),
  device arrays are :class:`FakeDeviceArray` over host memory (real addresses, never read by a
  launch).
* **torch**: :func:`fake_torch` builds a module named ``torch`` whose ``Tensor`` has the
  attributes rocsample reads (``data_ptr()``, ``shape``, ``stride()``, ``dtype``,
  ``get_device()``, slicing, ``view``, ``__cuda_array_interface__``) over host memory, and
  ``torch._C._cuda_getCurrentRawStream`` / ``torch.empty`` / ``torch.as_tensor``. Its costs are a
  Python object's, not torch's (torch's own calls cost more on a real GPU host: see the harness).

Nothing here is imported by ``rocsample``; install with :func:`install` (returns a
:class:`FakeGpu`, and ``uninstall()`` puts the previous backend and ``torch`` back).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import types as pytypes

import numpy as np

_HERE = pathlib.Path(__file__).parent
_lib = None
_lib_lock = threading.Lock()


def driver_library() -> str | None:
    """Path of the compiled no-op driver, or None without a C compiler (RuntimeError when the
    compiler refuses driver.c)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib or None
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
        if cc is None:
            _lib = ""
            return None
        out = pathlib.Path(tempfile.mkdtemp(prefix="rocsample-fakegpu-")) / "libfakecuda.so"
        r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(_HERE / "driver.c")],
                           capture_output=True, text=True)
        if r.returncode != 0:  # a compiler that refuses driver.c is a broken test, not a skip
            raise RuntimeError(f"tests/fakegpu/driver.c does not compile:\n{r.stderr[-2000:]}")
        _lib = str(out)
        return _lib


# ---- device memory: host memory with real addresses ------------------------------------------

_memory: dict[int, np.ndarray] = {}  # address -> the host buffer behind a fake allocation
_ALIGN = 256


def _alloc(nbytes: int) -> int:
    raw = np.empty(max(int(nbytes), 1) + _ALIGN, np.uint8)
    base = raw.__array_interface__["data"][0]
    ptr = base + (-base % _ALIGN)
    _memory[ptr] = raw
    return ptr


def _from_address(ptr: int, shape, strides, dtype) -> np.ndarray:
    """A NumPy view of ``shape``/``strides`` at ``ptr`` (host memory behind a fake device array)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    if strides is None:
        strides, acc = [], dtype.itemsize
        for n in reversed(shape):
            strides.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(strides))
    if ptr == 0 or 0 in shape:
        return np.empty(shape, dtype)
    lo = hi = 0
    for n, s in zip(shape, strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    nbytes = hi - lo + dtype.itemsize
    buf = (ctypes.c_uint8 * nbytes).from_address(ptr + lo)
    return np.ndarray(shape, dtype, buffer=buf, offset=-lo, strides=strides)


class FakeDeviceArray:
    """A numba-like device array over host memory (``__cuda_array_interface__`` of it)."""

    def __init__(self, a: np.ndarray, owner=None) -> None:
        self._a = a
        self._owner = owner
        self._cai = None

    @property
    def __cuda_array_interface__(self):
        c = self._cai
        if c is None:
            i = self._a.__array_interface__
            c = self._cai = {"shape": self._a.shape, "strides": self._a.strides,
                             "typestr": self._a.dtype.str, "data": (i["data"][0], False),
                             "version": 3}
        return c

    shape = property(lambda self: self._a.shape)
    strides = property(lambda self: self._a.strides)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)

    def __len__(self):
        return len(self._a)

    def __getitem__(self, k):
        return FakeDeviceArray(self._a[k], self)

    def view(self, dtype):
        return FakeDeviceArray(self._a.view(dtype), self)

    def reshape(self, *shape):
        return FakeDeviceArray(self._a.reshape(*shape), self)

    def copy_to_host(self, stream=0):
        return self._a.copy()

    def copy_to_device(self, src, stream=0):
        self._a[...] = src


# ---- numba.cuda -----------------------------------------------------------------------------

def c_strides(shape, itemsize):
    from rocsample.backends.numba_arrays import c_strides as cs

    return cs(shape, itemsize)


def _nbtypes():
    try:
        from numba.cuda import types as t  # what GpuBackend.bind checks against
    except ImportError:
        t = None
    if getattr(t, "Array", None) is None:
        from numba.core import types as t
    return t


class FakeKernel:
    """A jitted kernel: ``specialize(*args)`` -> one overload typed and packed as numba-cuda does;
    ``kernel[grid, block, stream](*args)`` counts an unbound launch."""

    _ids = iter(range(1, 1 << 20))

    def __init__(self, fn, device: bool) -> None:
        self.py_func = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.device = device
        self._specs: dict = {}
        self.unbound_launches = 0

    def __call__(self, *args):  # a device function called at build time: never happens
        raise TypeError(f"{self.__name__}: a fake kernel cannot run")

    def __getitem__(self, config):
        def launch(*args):
            self.unbound_launches += 1
            FakeCuda.unbound_launches += 1
        return launch

    def specialize(self, *args):
        t = _nbtypes()
        tys = tuple(_typeof(t, a) for a in args)
        spec = self._specs.get(tys)
        if spec is None:
            spec = self._specs[tys] = pytypes.SimpleNamespace(overloads={tys: _Compiled(tys)})
        return spec


class _Compiled:
    def __init__(self, tys) -> None:
        self.argument_types = tys
        n = 0
        t = _nbtypes()
        for ty in tys:
            n += 5 + 2 * ty.ndim if isinstance(ty, t.Array) else 1
        # the handle's low byte: how many parameters the fake launch logs
        self.handle = (next(FakeKernel._ids) << 8) | min(n, 255)

    def _prepare_args(self, ty, val, stream, retr, kernelargs):
        t = _nbtypes()
        if isinstance(ty, t.Array):
            c = val.__cuda_array_interface__
            item = np.dtype(c["typestr"]).itemsize
            strides = c.get("strides") or c_strides(c["shape"], item)
            kernelargs += [0, 0, int(np.prod(c["shape"])), item, int(c["data"][0])]
            kernelargs.extend(c["shape"])
            kernelargs.extend(strides)
        elif isinstance(ty, t.Integer):
            kernelargs.append(getattr(ctypes, f"c_{ty}")(val))
        elif ty == t.float64:
            kernelargs.append(ctypes.c_double(val))
        elif ty == t.float32:
            kernelargs.append(ctypes.c_float(val))
        elif ty == t.boolean:
            kernelargs.append(val)
        else:
            raise TypeError(f"fake numba: no packing for {ty}")


def _from_dtype(dt):
    try:
        from numba.cuda.np.numpy_support import from_dtype
    except ImportError:
        from numba.np.numpy_support import from_dtype
    return from_dtype(np.dtype(dt))


def _typeof(t, a):
    if isinstance(a, (bool, np.bool_)):
        return t.boolean
    if isinstance(a, int):
        return t.int64
    if isinstance(a, float):
        return t.float64
    if isinstance(a, np.generic):
        return _from_dtype(a.dtype)
    c = a.__cuda_array_interface__
    return t.Array(_from_dtype(c["typestr"]), len(c["shape"]), "A")


class _Gpu:
    def __init__(self, i: int) -> None:
        self.id = i
        self.WARP_SIZE = 32
        self.MULTIPROCESSOR_COUNT = 132
        self.name = b"fake H200"
        self.primary_context = object()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class FakeStream:
    _next = iter(range(0x7000_0000, 0x7fff_ffff, 0x100))

    def __init__(self, handle: int | None = None) -> None:
        self.handle = ctypes.c_void_p(next(FakeStream._next) if handle is None else handle)

    def synchronize(self):
        pass


class FakeCuda:
    """The part of numba.cuda rocsample's GPU backend uses."""

    unbound_launches = 0

    def __init__(self, n_devices: int = 1) -> None:
        self.gpus = [_Gpu(i) for i in range(n_devices)]
        self.local = self.shared = self.const = pytypes.SimpleNamespace()
        self.libdevice = None

    def jit(self, fn=None, **kw):
        if callable(fn):
            return FakeKernel(fn, kw.get("device", False))
        return lambda f: FakeKernel(f, kw.get("device", False))

    def get_current_device(self):
        return self.gpus[0]

    def stream(self):
        return FakeStream()

    def external_stream(self, h):
        return FakeStream(h)

    def synchronize(self):
        pass

    @contextlib.contextmanager
    def defer_cleanup(self):
        yield

    def from_cuda_array_interface(self, desc, owner=None, sync=True):
        a = _from_address(int(desc["data"][0]), desc["shape"], desc.get("strides"), desc["typestr"])
        return FakeDeviceArray(a, owner)

    def as_cuda_array(self, obj, sync=True):
        return self.from_cuda_array_interface(obj.__cuda_array_interface__, obj)

    def device_array(self, shape, dtype=np.float64, stream=0):
        dt = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        ptr = _alloc(int(np.prod(shape)) * dt.itemsize)
        return FakeDeviceArray(_from_address(ptr, shape, None, dt))

    def to_device(self, host, stream=0):
        host = np.ascontiguousarray(host)
        d = self.device_array(host.shape, host.dtype)
        d._a[...] = host
        return d


# ---- the driver's binding layer (what DriverRuntime.call reaches) ------------------------------

class FakeDriver:
    """``cuda.bindings.driver``'s calls rocsample makes outside the ctypes paths."""

    CUstreamCaptureMode = pytypes.SimpleNamespace(CU_STREAM_CAPTURE_MODE_GLOBAL=0,
                                                  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL=1,
                                                  CU_STREAM_CAPTURE_MODE_RELAXED=2)

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def _n(self, name):
        self.calls[name] = self.calls.get(name, 0) + 1

    @staticmethod
    def CUfunction(h):
        return int(h)

    def cuMemAlloc(self, n):
        self._n("cuMemAlloc")
        return 0, _alloc(n)

    def cuMemFree(self, p):
        self._n("cuMemFree")
        _memory.pop(int(p), None)
        return (0,)

    def cuDevicePrimaryCtxRetain(self, d):
        return 0, object()

    def cuCtxPushCurrent(self, c):
        return (0,)

    def cuCtxPopCurrent(self):
        return 0, None

    def cuEventCreate(self, flags):
        return 0, object()

    def cuEventRecord(self, ev, h):
        self._n("cuEventRecord")
        return (0,)

    def cuStreamCreate(self, flags):
        self._n("cuStreamCreate")
        self._streams = getattr(self, "_streams", 0x5000) + 0x10
        return 0, self._streams

    def cuStreamWaitEvent(self, h, ev, flags):
        self._n("cuStreamWaitEvent")
        return (0,)

    def cuEventQuery(self, ev):
        return (0,)

    def cuEventDestroy(self, ev):
        return (0,)

    def cuStreamSynchronize(self, h):
        return (0,)

    def cuStreamIsCapturing(self, h):  # the fallback when the ctypes queries are missing
        return 0, 0


def _vendor_class():
    from rocsample.backends import cuda as _cuda_vendor
    from rocsample.backends.gpu import VendorBase

    class FakeVendor(VendorBase):
        name = "cuda"
        # the cuda vendor's parameter passing (a packed buffer in ``extra``; driver.c reads both)
        launch_buffer = _cuda_vendor.Vendor.launch_buffer

        def __init__(self, cuda, driver, lib) -> None:
            super().__init__(cuda, driver)
            self.native = (lib, "fake_launch", "fake_graph_launch")
            self.node_graphs = ("fake_graph_create", "fake_graph_add_kernel_node",
                                "fake_graph_instantiate", "fake_graph_exec_set_params",
                                "fake_graph_exec_destroy", "fake_graph_destroy")
            self.queries = ("fake_is_capturing", "fake_get_device")

        @staticmethod
        def stream_device(rt, handle):
            return 0

        def kernel_function(self, compiled):
            return compiled.handle

        @staticmethod
        def pointer_device(rt, ptr):
            return 0

    return FakeVendor


# ---- torch ------------------------------------------------------------------------------------

def fake_torch():
    """A module named ``torch`` with the CUDA-tensor surface rocsample reads (see the docstring)."""
    mod = pytypes.ModuleType("torch")
    state = {"initialized": True}
    local = threading.local()  # torch's current stream is per thread (and device)

    class dtype:
        __module__ = "torch"

        def __init__(self, name):
            self.name = name
            self.np = np.dtype("uint16" if name == "bfloat16" else name)
            self.itemsize = self.np.itemsize

        def __repr__(self):
            return f"torch.{self.name}"

        __str__ = __repr__

    dts = {n: dtype(n) for n in ("float32", "float16", "bfloat16", "float64", "int64", "int32",
                                 "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool")}
    by_np = {v.np: v for k, v in dts.items() if k != "bfloat16"}

    class Size(tuple):
        __module__ = "torch"

    class device:
        __module__ = "torch"

        def __init__(self, kind, index=0):
            self.type, self.index = kind, index

    class Tensor:
        __module__ = "torch"
        __slots__ = ("_a", "dtype", "_base", "_ptr", "_shape", "_stride")

        def __init__(self, a, dt=None, base=None):
            self._a = a
            self.dtype = by_np[a.dtype] if dt is None else dt
            self._base = base
            self._ptr = a.__array_interface__["data"][0]
            # torch builds these in C on every read (tens of ns): kept ready, to cost about that
            self._shape = Size(a.shape)
            self._stride = tuple(x // a.itemsize for x in a.strides)

        @property
        def shape(self):
            return self._shape

        def stride(self, dim=None):
            return self._stride if dim is None else self._stride[dim]

        def data_ptr(self):
            return self._ptr

        def get_device(self):
            return 0

        def element_size(self):
            return self._a.itemsize

        def dim(self):
            return self._a.ndim

        @property
        def device(self):
            return device("cuda", 0)

        is_cuda = True
        requires_grad = False

        def __getitem__(self, k):
            return Tensor(self._a[k], self.dtype, self)

        def view(self, dt):
            return Tensor(self._a.view(dt.np), dt, self)

        def unbind(self, dim=0):
            assert dim == 0
            return tuple(Tensor(r, self.dtype, self) for r in self._a)

        def record_stream(self, s):
            pass

        def is_contiguous(self):
            return self._a.flags.c_contiguous

        @property
        def __cuda_array_interface__(self):
            return {"shape": self._a.shape, "strides": self._a.strides,
                    "typestr": self._a.dtype.str, "data": (self._ptr, False), "version": 3}

        def cpu(self):
            return pytypes.SimpleNamespace(numpy=lambda: self._a.copy())

    def empty(shape, dtype=None, device=None):
        dt = dtype or dts["float32"]
        return Tensor(np.empty(shape, dt.np), dt)  # (NumPy's allocation: freed with the tensor)

    def zeros(*shape, dtype=None, device=None):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        t = empty(shape, dtype, device)
        t._a[...] = 0
        return t

    def as_tensor(arr, device=None):
        c = arr.__cuda_array_interface__
        a = _from_address(int(c["data"][0]), c["shape"], c.get("strides"), c["typestr"])
        return Tensor(a, None, arr)

    def from_numpy(a):
        return Tensor(a)

    def current_raw(dev):
        return getattr(local, "stream", 0)

    class ExternalStream:
        def __init__(self, h, device=None):
            self.cuda_stream = h

    mod.Tensor, mod.Size, mod.device, mod.dtype = Tensor, Size, device, dtype
    mod.empty, mod.zeros, mod.as_tensor, mod.from_numpy = empty, zeros, as_tensor, from_numpy
    for k, v in dts.items():
        setattr(mod, k, v)
    mod._C = pytypes.SimpleNamespace(_cuda_getCurrentRawStream=current_raw)
    mod.cuda = pytypes.SimpleNamespace(
        is_initialized=lambda: state["initialized"], ExternalStream=ExternalStream,
        current_stream=lambda d=None: pytypes.SimpleNamespace(cuda_stream=current_raw(d)))
    mod._state = state
    mod._local = local
    return mod


# ---- installing it ------------------------------------------------------------------------------

class FakeGpu:
    """The installed fake: the backend, the fake torch and the driver's counters."""

    def __init__(self, be, torch, lib, prev) -> None:
        self.backend = be
        self.torch = torch
        self.lib = ctypes.CDLL(lib)
        self.lib.fake_count.restype = ctypes.c_long
        self.lib.fake_log_val.restype = ctypes.c_int64
        self.lib.fake_log_val.argtypes = [ctypes.c_long, ctypes.c_int]
        self.lib.fake_log_func.restype = ctypes.c_size_t
        self.lib.fake_log_stream.restype = ctypes.c_size_t
        self.lib.fake_set_capturing.argtypes = [ctypes.c_size_t, ctypes.c_int]
        self._prev = prev

    _COUNTS = ("launch", "graph", "query", "device", "logged", "setparams", "instantiate",
               "exec_destroy", "node")

    def count(self, what: str) -> int:
        """Driver calls so far: 'launch' (cuLaunchKernel), 'graph' (graph launches), 'query'
        (capture status), 'device', 'setparams' (exec kernel-node updates), 'instantiate',
        'exec_destroy'; 'node' the kernel nodes graph launches ran, 'logged' the kernel runs
        logged (launches and nodes: the index of the next in :meth:`launch_params`)."""
        return int(self.lib.fake_count(self._COUNTS.index(what)))

    def launch_params(self, k: int, n: int) -> list[int]:
        """The first ``n`` 8-byte parameter values of the k-th kernel run (of the last 64)."""
        return [int(self.lib.fake_log_val(k, i)) for i in range(n)]

    def launch_stream(self, k: int) -> int:
        return int(self.lib.fake_log_stream(k))

    def exec_deps(self, exec_handle: int, node: int) -> list[int]:
        """The nodes (by index in its graph) that node ``node`` of an instantiated kernel-node
        graph depends on."""
        self.lib.fake_exec_deps.restype = ctypes.c_long
        self.lib.fake_exec_deps.argtypes = [ctypes.c_size_t, ctypes.c_int]
        m = int(self.lib.fake_exec_deps(exec_handle, node))
        assert m >= 0, f"no node {node} in exec {exec_handle:#x}"
        return [i for i in range(32) if m >> i & 1]

    def set_capturing(self, handle: int, on: bool = True) -> None:
        self.lib.fake_set_capturing(handle, 1 if on else 0)

    def set_fail_add(self, err: int) -> None:
        """Make cuGraphAddKernelNode return ``err`` for every node (> 0), refuse a kernel named
        as ``func`` and take it as ``kern`` (-1: the H200's driver with numba-cuda's library
        kernels), or succeed again (0)."""
        self.lib.fake_set_fail_add(err)

    def set_global_capture(self, on: bool = True) -> None:
        self.lib.fake_set_global(1 if on else 0)

    def set_torch_stream(self, handle: int) -> None:
        """torch's current stream, for the calling thread (``torch.cuda.stream(s)``)."""
        self.torch._local.stream = handle

    def uninstall(self) -> None:
        import importlib

        from rocsample import backends, scratch
        from rocsample.backends import interop

        be = self.backend
        sampling = importlib.import_module("rocsample.sampling")
        set_rows = importlib.import_module("rocsample.set_rows")
        for table in (sampling._PLANS, set_rows._binder._table):
            for k in [k for k in list(table) if k[0] == id(be)]:
                table.pop(k, None)
        set_rows._binder.fast[:] = [e for e in set_rows._binder.fast if e[0][0] != id(be)]
        scratch._pools.pop(id(be), None)
        for k in [k for k in list(interop._streams) if k[0] == id(be)]:
            interop._streams.pop(k, None)
        prev_be, prev_loaded, prev_torch = self._prev
        backends._current = prev_be
        backends._loaded.clear()
        backends._loaded.update(prev_loaded)
        if prev_torch is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = prev_torch


def install(*, torch: bool = True, n_devices: int = 1) -> FakeGpu:
    """Make a fake-driver ``cuda`` backend current (and, with ``torch``, the fake torch module).

    Raises RuntimeError without a C compiler (the driver symbols are C functions)."""
    lib = driver_library()
    if lib is None:
        raise RuntimeError("fakegpu: no C compiler to build the no-op driver")
    from rocsample import backends
    from rocsample.backends.gpu import GpuBackend

    prev = (backends._current, dict(backends._loaded), sys.modules.get("torch"))
    be = GpuBackend("cuda", _vendor_class()(FakeCuda(n_devices), FakeDriver(), lib))
    backends._current = be
    backends._loaded["cuda"] = be
    t = None
    if torch:
        t = fake_torch()
        sys.modules["torch"] = t
    return FakeGpu(be, t, lib, prev)


def fastcall():
    """``(rocsample._fastcall or None, the pytest marks of a module testing the C path over this
    fake)``: the module is None where the extension is not built, an ImportError where
    ROCSAMPLE_REQUIRE_FASTCALL=1 (``make test``, which builds it); the marks skip without a C
    compiler for the no-op driver or without the extension."""
    import pytest

    try:
        from rocsample import _fastcall
    except ImportError:  # pragma: no cover - make test requires it
        if os.environ.get("ROCSAMPLE_REQUIRE_FASTCALL") == "1":
            raise
        _fastcall = None
    return _fastcall, [
        pytest.mark.skipif(driver_library() is None, reason="no C compiler for the no-op driver"),
        pytest.mark.skipif(_fastcall is None,
                           reason="rocsample._fastcall not built (pip install -e .)"),
    ]


def installed(monkeypatch):
    """The body of a test module's ``fg`` fixture (``yield from fakegpu.installed(monkeypatch)``):
    the fake installed for one test, with set_rows' module binder and interop's set of durable
    streams replaced for that test (bound calls and streams of the fake never leak into another
    test); yields the :class:`FakeGpu`, and uninstalls it after."""
    import importlib

    from rocsample.backends import interop
    from rocsample.binder import Binder

    sr = importlib.import_module("rocsample.set_rows")
    monkeypatch.setattr(sr, "_binder", Binder(entries=16, execs=64))
    monkeypatch.setattr(interop, "_durable", set(interop._durable))
    g = install()
    try:
        yield g
    finally:
        g.set_torch_stream(0)
        g.uninstall()
