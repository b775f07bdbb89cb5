"""The Backend facade for real GPUs (cuda and hip); the vendor object supplies the differences."""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ._driver import DriverError, DriverRuntime
from .numba_arrays import NumbaBackend

#: events of a stream's forked launches (one per launch of a bound call, and the join)
_FORK_EVENTS = 9


class KernelNodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2 (a kernel node of a driver graph)."""

    _fields_ = [("func", ctypes.c_void_p), ("gridDimX", ctypes.c_uint),
                ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint),
                ("blockDimZ", ctypes.c_uint), ("sharedMemBytes", ctypes.c_uint),
                ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


class VendorBase:
    """What both vendor modules share; each adds only the calls that differ."""

    name = ""
    #: (driver library, kernel-launch symbol, graph-launch symbol) for the repeated-call paths;
    #: both symbols take the CUDA driver API's arguments (HIP's module launch mirrors it).
    native = None
    #: (graph create, add kernel node, instantiate with flags, exec kernel node set params, exec
    #: destroy, graph destroy) in ``native``'s library, with the CUDA driver API's arguments
    #: (:class:`KernelNodeParams`): what replays a bound call as one graph launch. None: bound
    #: calls launch their kernels one by one (HIP's kernel node parameters differ in layout,
    #: unproven without an AMD GPU).
    node_graphs = None
    #: (BUFFER_POINTER, BUFFER_SIZE, END) of the launch calls' ``extra`` list: bound launches pass
    #: their parameters as one packed buffer (the driver copies one block where ``kernelParams``
    #: has it copy each of numba's flattened values, about 100 for a sampling kernel), or None:
    #: by ``kernelParams`` pointers into that buffer (HIP: unproven without an AMD GPU)
    launch_buffer = None
    #: why the last graph of a bound call was not made (a missing symbol, a driver error), or None
    node_graph_error = None
    #: whether captured calls may put a lane into a conditional node (CUDA 12.3's conditional IF
    #: nodes, set by a kernel: rocsample.kernels.graph_cond); HIP has none
    conditional_nodes = False
    #: why the last captured conditional lane failed (the capture failed with it), or None
    conditional_error = None

    def __init__(self, cuda, driver) -> None:
        self.cuda = cuda
        self.driver = driver
        self._native = False
        self._queries = False
        self._nodes = False
        self._raw: dict = {}

    def _symbols(self, names, types):
        """``(functions, None)``: ``names`` in ``native``'s library (an entry may name
        alternatives, the first found is taken) with argument types ``types``, returning the
        driver's int error code; ``(None, why)`` where the library or a name is missing."""
        try:
            lib = ctypes.CDLL(self.native[0])
        except OSError as e:
            return None, f"{self.native[0]}: {e}"
        fns = []
        for entry, argtypes in zip(names, types):
            alts = (entry,) if isinstance(entry, str) else entry
            f = next((getattr(lib, n) for n in alts if hasattr(lib, n)), None)
            if f is None:
                return None, f"{self.native[0]} has none of {alts}"
            f.argtypes = argtypes
            f.restype = ctypes.c_int
            fns.append(f)
        return tuple(fns), None

    def node_graph_calls(self):
        """The ``node_graphs`` calls as ctypes functions (argument types set), or None (why:
        ``node_graph_error``)."""
        if self._nodes is False:
            self._nodes = None
            if self.native is not None and self.node_graphs is not None:
                vp, pp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
                kp = ctypes.POINTER(KernelNodeParams)
                types = ([pp, ctypes.c_uint], [pp, vp, pp, ctypes.c_size_t, kp],
                         [pp, vp, ctypes.c_ulonglong], [vp, vp, kp], [vp], [vp])
                self._nodes, why = self._symbols(self.node_graphs, types)
                if why is not None:
                    self.node_graph_error = why
        return self._nodes

    def native_calls(self):
        """(launch_kernel, graph_launch) as ctypes functions, or None where not loadable.

        A bound launch or a graph replay then costs one ctypes call instead of the binding
        layer's argument conversion (several microseconds per call).
        """
        if self._native is False:
            self._native = None
            if self.native is not None:
                vp, ui = ctypes.c_void_p, ctypes.c_uint
                types = ([vp, ui, ui, ui, ui, ui, ui, ui, vp, vp, vp], [vp, vp])
                self._native = self._symbols(self.native[1:], types)[0]
        return self._native

    #: the stream queries of every call (capture status, a stream's device), by the same library
    queries: tuple = ()

    def query_calls(self):
        """(stream_is_capturing, stream_get_device) as ctypes functions, or None.

        Both take ``(stream handle, int*)`` and return the driver's error code: a fraction of a
        microsecond each, where the binding layer's call costs several.
        """
        if self._queries is False:
            self._queries = None
            if self.native is not None and len(self.queries) == 2:
                t = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
                self._queries = self._symbols(self.queries, (t, t))[0]
        return self._queries

    def unconverted(self, fn):
        """``fn`` (one of the ctypes functions above) again without its argument types: a
        call then converts nothing, so it must pass ctypes objects of exactly those types (what
        the bound launches and capture probes do with the argument objects they make once)."""
        got = self._raw.get(id(fn))  # (ctypes functions are unhashable; fn is kept below)
        if got is None:
            raw = type(fn)(ctypes.cast(fn, ctypes.c_void_p).value)
            raw.restype = fn.restype
            got = self._raw[id(fn)] = (fn, raw)
        return got[1]

    @staticmethod
    def stream_handle(stream) -> int:
        h = stream.handle
        return int(getattr(h, "value", h) or 0)


class GpuBackend(NumbaBackend):
    def __init__(self, name: str, vendor) -> None:
        super().__init__(name, vendor.cuda, DriverRuntime(vendor))
        self.vendor = vendor
        self._attrs: dict = {}
        self._forks: dict = {}  # (device, stream handle) -> (side stream handle, events)
        self._bodies: dict = {}  # (device, stream handle) -> a stream that captures lane bodies

    def _device(self, device):
        return self.cuda.gpus[self.runtime.current_device() if device is None else device]

    def _attr(self, device, name: str) -> int:
        d = self.runtime.current_device() if device is None else device
        key = (d, name)
        v = self._attrs.get(key)
        if v is None:
            with self.cuda.gpus[d]:
                v = int(getattr(self.cuda.get_current_device(), name))
            self._attrs[key] = v
        return v

    def warp_size(self, device=None) -> int:
        return self._attr(device, "WARP_SIZE")

    def compute_units(self, device=None) -> int:
        return self._attr(device, "MULTIPROCESSOR_COUNT")

    def device_name(self, device=None) -> str:
        d = self.runtime.current_device() if device is None else device
        with self.cuda.gpus[d]:
            name = self.cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)

    def array_device(self, arr) -> int:
        ptr = int(arr.__cuda_array_interface__["data"][0])
        if ptr == 0:
            return self.runtime.current_device()
        return self.runtime.pointer_device(ptr)

    def bind(self, kernel, grid, block, stream, *args) -> "DriverBound":
        """Resolve the specialised kernel and marshal its arguments once; launch by the driver.

        numba's dispatcher types every argument and rebuilds the parameter buffer on each call
        (tens of microseconds); a decode loop calls the same kernels with the same layouts, so
        this keeps one packed ``void*[]`` per launch and calls ``cuLaunchKernel`` directly. The
        data address of each array argument is one ``c_int64`` cell of that buffer
        (``DriverBound.cells``): writing it re-points the launch (numba packs an array as meminfo,
        parent, size, itemsize, data, shape..., strides...).
        """
        try:
            from numba.cuda import types as nbtypes  # the dispatcher's own (numba-cuda's) types
        except ImportError:  # numba-hip posing as numba.cuda: numba's
            nbtypes = None
        if getattr(nbtypes, "Array", None) is None:  # numba's numba.cuda (not numba-cuda's) has none
            from numba.core import types as nbtypes

        grid = _dim3(grid)
        block = _dim3(block)
        with self.cuda.gpus[stream.device]:
            spec = kernel.specialize(*args)
            compiled = next(iter(spec.overloads.values()))
            func = self.vendor.kernel_function(compiled)
            packed: list = []
            retr: list = []
            data_at: list = []  # (index of the data address in packed, that address)
            starts = []  # per argument: the index of its first packed value
            for ty, val in zip(compiled.argument_types, args):
                start = len(packed)
                starts.append(start)
                compiled._prepare_args(ty, val, stream.numba, retr, packed)
                if isinstance(ty, nbtypes.Array):
                    span = self.array_span(val)
                    data_at.append((start + 4, None if span is None else span[0]))
        cvals = [_as_ctype(v) for v in packed]
        # One buffer in the kernel's parameter layout (each value at its natural alignment, as
        # the compiled kernel's parameters lie), and a pointer into it per parameter: the
        # driver reads either (``extra`` or ``kernelParams``: VendorBase.launch_buffer), and a
        # cell (a data address) is written in one place for both.
        offs = []
        end = 0
        for c in cvals:
            a = ctypes.alignment(c)
            end = -(-end // a) * a
            offs.append(end)
            end += ctypes.sizeof(c)
        buf = (ctypes.c_int64 * max(1, -(-end // 8)))()
        base = ctypes.addressof(buf)
        for c, o in zip(cvals, offs):
            ctypes.memmove(base + o, ctypes.addressof(c), ctypes.sizeof(c))
        params = (ctypes.c_void_p * max(1, len(cvals)))(*[base + o for o in offs])
        size = ctypes.c_size_t(end)
        keys = self.vendor.launch_buffer
        extra = None if keys is None else (ctypes.c_void_p * 5)(
            keys[0], base, keys[1], ctypes.addressof(size), keys[2])
        cells = []
        for at, want in data_at:
            if (want is None or at >= len(cvals) or int(cvals[at].value or 0) != want
                    or ctypes.sizeof(cvals[at]) != 8):
                cells = None  # not numba's packing as we know it: this launch is never re-pointed
                break
            cells.append(ctypes.c_int64.from_buffer(buf, offs[at]))
        if cells is not None and len(cells) != sum(self.array_span(a) is not None for a in args):
            cells = None  # an array argument not typed as one: never re-pointed (stale otherwise)
        arrays = [a for a, ty in zip(args, compiled.argument_types) if isinstance(ty, nbtypes.Array)]
        keep = [buf, params, size, extra, arrays, retr]  # they must outlive every launch
        handle = stream.handle
        addr = ctypes.addressof(params)
        # the parameters as one buffer where the vendor says so, else by pointer
        pa, xa = (addr, None) if extra is None else (None, ctypes.addressof(extra))
        native = self.vendor.native_calls()
        if native is not None:
            lk = self.vendor.unconverted(native[0])
            # every argument a ctypes object made once: the call converts nothing (a Python int
            # for a c_uint parameter costs a conversion per argument per launch)
            ui = ctypes.c_uint
            cargs = (ctypes.c_void_p(int(func)), *(ui(v) for v in grid), *(ui(v) for v in block),
                     ui(0), ctypes.c_void_p(int(handle) or None), ctypes.c_void_p(pa),
                     ctypes.c_void_p(xa))

            sym = self.vendor.native[1]

            def run(_keep=keep):
                err = lk(*cargs)
                if err != 0:
                    raise RuntimeError(f"{sym} failed: error {err}")

            return DriverBound(run, cells, arrays, (lk, cargs, sym, keep),
                               (buf, tuple(offs[i] if i < len(offs) else -1 for i in starts)))
        else:
            launch = self.runtime.drv.cuLaunchKernel

            def run(_keep=keep):
                err = launch(func, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                             handle, addr, 0)
                if int(err[0] if isinstance(err, tuple) else err) != 0:
                    raise RuntimeError(f"cuLaunchKernel failed: {err!r}")

        return DriverBound(run, cells, arrays)

    def node_graph(self, bounds, device: int, after=None):
        """The launches ``bounds`` (:class:`DriverBound`, one stream, in order) as one
        instantiated driver graph of kernel nodes (:class:`NodeGraph`); None where the vendor
        has no such calls or the driver refuses one, False while an open capture on ``device``
        forbids making one now. Each node's parameters are read from its
        launch's packed buffer now, and again by :meth:`NodeGraph.repoint`. ``after``: per
        launch, (lane, the launches it follows) (:func:`rocsample.binder.bind_call`); None: each
        follows the one before."""
        calls = self.vendor.node_graph_calls()
        native = self.vendor.native_calls()
        if calls is None or native is None or not bounds:
            return None
        if any(getattr(b, "native", None) is None for b in bounds):
            return None
        stream = bounds[0].native[1][8]
        from ..scratch import get_pool

        if get_pool(self)._release_blocked(device):
            return False  # an open capture on the device: making graphs waits for its end
        create, add, inst, _setp, _xdestroy, gdestroy = calls
        vp = ctypes.c_void_p
        graph = vp()
        nodes, params = [], []
        vendor = self.vendor
        with self.on_device(device):
            err = create(ctypes.byref(graph), 0)
            if err != 0:
                vendor.node_graph_error = f"{vendor.node_graphs[0]} returned {err}"
                return None
            ex = vp()
            # How a node names its kernel. The handle a bound launch passes cuLaunchKernel may
            # be a CUfunction or a library's CUkernel (numba-cuda loads CUlibrary modules: the
            # driver answered CUDA_ERROR_INVALID_HANDLE for it as ``func`` on the H200), so:
            # ``func``; else ``kern`` (func NULL, the current context); else the CUfunction
            # cuKernelGetFunction gives for the current context. The first that the driver
            # takes serves every node.
            ways = ["func", "kern", "function"]
            for k, b in enumerate(bounds):
                c = b.native[1]  # (func, grid x3, block x3, shared bytes, stream, params, extra)
                node = vp()
                if after is not None:
                    follows = after[k][1]
                else:
                    follows = (k - 1,) if k else ()
                dep = (vp * len(follows))(*[nodes[d].value for d in follows]) if follows else None
                errs = []
                for way in list(ways):
                    p = _node_params(vendor, way, c)
                    err = 1 if p is None else add(ctypes.byref(node), graph, dep,
                                                  len(follows), ctypes.byref(p))
                    if err == 0:
                        ways = [way]
                        break
                    errs.append(f"{way}: {err}")
                else:
                    vendor.node_graph_error = (f"{vendor.node_graphs[1]!s} refused the kernel ("
                                               + ", ".join(errs) + ")")
                    gdestroy(graph)
                    return None
                nodes.append(node)
                params.append(p)
            err = inst(ctypes.byref(ex), graph, 0)
            if err != 0:
                vendor.node_graph_error = f"{vendor.node_graphs[2]} returned {err}"
                gdestroy(graph)
                return None
        vendor.node_graph_error = None
        return NodeGraph(self, device, calls, native[1], graph, ex, nodes, params, stream)

    #: streams with a side stream for forked launches (made once per (device, stream), kept)
    _FORK_MAX = 32

    def fork_streams(self, stream):
        """(side stream handle, events) for ``stream``'s forked launches (:meth:`forked`), made
        at the first request while no capture is open on its device (a Sampler asks at a call
        whose route has branches, before it binds: binding may happen inside a capture) and
        kept. None for the legacy default stream (never captured: no fork needed), while a
        capture is open and none was made yet, past ``_FORK_MAX`` streams, or where the driver
        refuses a stream or an event (the launches then stay one chain)."""
        key = (stream.device, int(stream.handle or 0))
        got = self._forks.get(key)
        if got is not None or key[1] == 0:
            return got
        from ..scratch import get_pool

        if get_pool(self)._release_blocked(stream.device) or len(self._forks) >= self._FORK_MAX:
            return None
        rt = self.runtime
        try:
            with rt._context(stream.device):
                side = int(rt.call("cuStreamCreate", 1))  # CU_STREAM_NON_BLOCKING
                evs = [rt.call("cuEventCreate", 2) for _ in range(_FORK_EVENTS)]  # no timing
        except (DriverError, AttributeError, TypeError):
            return None
        got = self._forks[key] = (side, evs)
        return got

    def _lanes(self, bounds, after, stream):
        """``bounds`` (:class:`DriverBound` on ``stream``) laid out for :func:`_run_lanes`:
        ``(after, calls, lanes, cross, side, evs)``, lane 1's launches moved to the side stream
        of :meth:`fork_streams` (``after`` None: a chain on ``stream``, no side stream); None
        where the launches need a side stream that cannot be had."""
        n = len(bounds)
        if after is None:
            after = tuple((0, (k - 1,) if k else ()) for k in range(n))
            side, evs = None, ()
        else:
            got = self.fork_streams(stream)
            if got is None or n >= len(got[1]):
                return None
            side, evs = got
        lanes = [a[0] for a in after]
        calls = []
        for b, lane in zip(bounds, lanes):
            fn, cargs = b.native[0], b.native[1]
            if lane:
                cargs = cargs[:8] + (ctypes.c_void_p(side),) + cargs[9:]
            calls.append((fn, cargs))
        # events: ev[k] recorded after launch k where a launch of the other lane follows it
        cross = {d for k, (lane, ds) in enumerate(after) for d in ds if lanes[d] != lane}
        return after, calls, lanes, cross, side, evs

    def forked(self, bounds, after, stream):
        """A callable launching ``bounds`` (:class:`DriverBound` on ``stream``) as ``after``
        says (per launch (lane, the launches it follows)): lane 1's on a side stream of
        ``stream``'s own, events where a launch follows one of the other lane, and the side
        stream joined back at the end. Under a stream capture the two lanes become parallel
        branches of the captured graph (their rows are disjoint). None where ``after`` is a chain,
        a launch is not a driver launch, or :meth:`fork_streams` has no side stream."""
        if after is None or any(getattr(b, "native", None) is None for b in bounds):
            return None
        lanes = self._lanes(bounds, after, stream)
        if lanes is None:
            return None
        return functools.partial(_run_lanes, self.runtime.call, self.vendor.native[1],
                                 stream.handle, lanes)

    def body_stream(self, stream):
        """A stream of ``stream``'s own that captures conditional lanes' bodies
        (:meth:`conditional`), made at the first request while no capture is open on its device
        (a Sampler asks at a call whose route has a conditional lane, before it binds) and kept;
        None where it cannot be made now (the lane then runs unconditionally)."""
        key = (stream.device, int(stream.handle or 0))
        got = self._bodies.get(key)
        if got is not None or key[1] == 0 or not self.vendor.conditional_nodes:
            return got
        from ..scratch import get_pool

        if get_pool(self)._release_blocked(stream.device) or len(self._bodies) >= self._FORK_MAX:
            return None
        try:
            with self.runtime._context(stream.device):
                got = int(self.runtime.call("cuStreamCreate", 1))  # CU_STREAM_NON_BLOCKING
        except (DriverError, AttributeError, TypeError):
            return None
        self._bodies[key] = got
        return got

    def conditional(self, bounds, after, cond, stream):
        """A callable for a capture of ``bounds`` (:class:`DriverBound` on ``stream``, ``after``
        as :meth:`forked` takes it, or None: a chain) with a conditional lane, ``cond = (body,
        gate)``: the launches ``body`` (``rocsample.sampling_router.conditional``) go into the
        body of a conditional IF node of the capture's graph, after the launches they follow and
        one launch of ``gate`` ((kernel, grid, block, args) of ``_lane_gate_kernel``,
        rocsample.kernels.graph_cond, bound here) whose first argument is the node's handle for
        that captured launch only (its packed value is 0 again after), so the body runs only in
        graph launches where a row asked for it. The callable returns False, having launched
        nothing, unless ``stream`` is capturing (the caller then launches as it would have).
        None where the vendor has no conditional nodes, a launch is not a driver launch, or no
        body stream could be made."""
        if cond is None or not self.vendor.conditional_nodes:
            return None
        if not hasattr(self.runtime.drv, "cuGraphConditionalHandleCreate"):
            return None
        body, (kernel, grid, block, args) = cond
        if any(getattr(b, "native", None) is None for b in bounds):
            return None
        gate = self.bind(kernel, grid, block, stream, *args)
        at = gate.arg_offsets
        if getattr(gate, "native", None) is None or at is None or not at[1] or at[1][0] < 0:
            return None
        helper = self.body_stream(stream)
        if helper is None:
            return None
        lanes = self._lanes(bounds, after, stream)
        if lanes is None:
            return None
        cell = ctypes.c_uint64.from_buffer(at[0], at[1][0])
        rt = self.runtime
        drv = rt.drv
        call = rt.call
        main = stream.handle
        device = stream.device
        sym = self.vendor.native[1]
        vendor = self.vendor
        body = tuple(body)
        # the body's launches on the body stream (captured into the node's body graph)
        inner = [(bounds[j].native[0],
                  bounds[j].native[1][:8] + (ctypes.c_void_p(helper),) + bounds[j].native[1][9:])
                 for j in body]
        cond_if = vendor.conditional_if(drv)
        active = drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE
        relaxed = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        set_deps = drv.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES

        def info(h):
            # (status, graph, dependencies) of a capturing stream
            r = drv.cuStreamGetCaptureInfo(h)
            if int(r[0]) != 0:
                raise DriverError(f"cuStreamGetCaptureInfo failed: {r[0]!r}")
            return r[1], r[3], list(r[4])[:int(r[-1])]

        gfn, gargs = gate.native[0], gate.native[1]

        def node(on, handle):
            # the gate (on ``on``, after what it captured last), then the IF node after it, its
            # body the body's launches; ``on`` then continues from the node
            cell.value = int(handle)
            try:
                _launch(sym, gfn, gargs[:8] + (ctypes.c_void_p(on),) + gargs[9:])
            finally:
                cell.value = 0
            _st, graph, deps = info(on)
            p = drv.CUgraphNodeParams()
            p.type = drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
            p.conditional.handle = handle
            p.conditional.type = cond_if
            p.conditional.size = 1
            p.conditional.ctx = rt.primary_context(device)
            try:
                nd = call("cuGraphAddNode", graph, deps, None, len(deps), p)
            except TypeError:  # (cuda-bindings 12: no edge data)
                nd = call("cuGraphAddNode", graph, deps, len(deps), p)
            try:
                call("cuStreamBeginCaptureToGraph", helper, p.conditional.phGraph_out[0], None,
                     None, 0, relaxed)
            except TypeError:
                call("cuStreamBeginCaptureToGraph", helper, p.conditional.phGraph_out[0], None,
                     0, relaxed)
            try:
                for fn, cargs in inner:
                    _launch(sym, fn, cargs)
            finally:
                call("cuStreamEndCapture", helper)
            try:
                call("cuStreamUpdateCaptureDependencies", on, [nd], None, 1, set_deps)
            except TypeError:
                call("cuStreamUpdateCaptureDependencies", on, [nd], 1, set_deps)

        def run(_keep=gate):  # (the gate's packed parameters live as long as this)
            try:
                return go()
            except Exception as e:  # the capture is broken then: the caller's capture fails
                vendor.conditional_error = f"{type(e).__name__}: {e}"
                raise

        def go():
            status, graph, _deps = info(main)
            if status != active:
                return False
            with rt._context(device):
                handle = call("cuGraphConditionalHandleCreate", graph, rt.primary_context(device),
                              0, 1)  # default 0, CU_GRAPH_COND_ASSIGN_DEFAULT
            _run_lanes(call, sym, main, lanes, body, lambda on: node(on, handle))
            vendor.conditional_error = None
            return True

        return run


def _launch(sym, fn, cargs):
    err = fn(*cargs)
    if err != 0:
        raise RuntimeError(f"{sym} failed: error {err}")


def _run_lanes(call, sym, main, lanes, at=(), node=None):
    """Launch :meth:`GpuBackend._lanes`'s layout ``lanes`` of a call on the stream ``main``
    (``call``: the runtime's driver call; ``sym``: the launch's name for errors): each launch on
    its lane's stream after waiting for the events of the other lane's launches it follows, an
    event recorded after each launch the other lane follows, the side stream joined back at the
    end. ``at``: launch indices that ``node(stream)`` replaces, called once at the first
    (:meth:`GpuBackend.conditional`)."""
    after, calls, lanes_, cross, side, evs = lanes
    for k, (fn, cargs) in enumerate(calls):
        on = side if lanes_[k] else main
        for d in after[k][1]:
            if lanes_[d] != lanes_[k]:
                call("cuStreamWaitEvent", on, evs[d], 0)
        if k in at:
            if k == at[0]:
                node(on)
        else:
            _launch(sym, fn, cargs)
        if k in cross:
            call("cuEventRecord", evs[k], on)
    if side is not None:
        call("cuEventRecord", evs[-1], side)  # the side stream joins back
        call("cuStreamWaitEvent", main, evs[-1], 0)


class NodeGraph:
    """A bound call's launches as one instantiated driver graph (:meth:`GpuBackend.node_graph`).

    ``launch()`` is one ``cuGraphLaunch`` on the bound stream (one driver call for every kernel
    of the call: on the H200's host 3.0 us for the chain's two kernels where two
    ``cuLaunchKernel`` cost 11-17 us, tools/gpu/host_probe.py). ``repoint(k)`` copies launch k's
    packed parameters (its cells as they are now) into node k (``cuGraphExecKernelNodeSetParams``,
    about 1-2 us): the driver reads the values at that call, launches already queued keep
    theirs. Destroyed when collected, at the scratch pool's next call, once no open capture on
    the device forbids it (destroying graphs inside one would invalidate it).
    """

    __slots__ = ("_be", "_device", "_calls", "_graph", "_exec", "_nodes", "_params", "_refs",
                 "launch", "native", "points", "__weakref__")

    def __init__(self, be, device, calls, graph_launch, graph, ex, nodes, params, stream) -> None:
        self._be = be
        self._device = device
        self._calls = calls
        self._graph = graph
        self._exec = ex
        self._nodes = nodes
        self._params = params
        vendor = be.vendor
        gl = vendor.unconverted(graph_launch)
        setp = vendor.unconverted(calls[3])
        sym = vendor.native[2]
        self._refs = tuple((setp, ex, n, ctypes.byref(p)) for n, p in zip(nodes, params))
        # what repoint(k) calls, as integers per launch k: (the update's address, the exec, node
        # k, its parameters' address), for rocsample._fastcall, which re-points nodes itself
        sa = ctypes.cast(setp, ctypes.c_void_p).value
        self.points = tuple((sa, ex.value or 0, n.value or 0, ctypes.addressof(p))
                            for n, p in zip(nodes, params))

        def launch(_a=(ex, stream)):
            err = gl(*_a)
            if err != 0:
                raise RuntimeError(f"{sym} failed: error {err}")

        self.launch = launch
        # what launch() calls, as integers: (the graph launch's address, the exec, the stream,
        # the call's name), for rocsample._fastcall's repeated call, which calls it itself
        self.native = (ctypes.cast(gl, ctypes.c_void_p).value, ex.value or 0,
                       getattr(stream, "value", stream) or 0, sym)

    def repoint(self, k: int) -> None:
        setp, ex, node, ref = self._refs[k]
        err = setp(ex, node, ref)
        if err != 0:
            raise RuntimeError(f"{self._be.vendor.node_graphs[3]!s} failed: error {err}")

    def __del__(self):
        try:
            from ..scratch import get_pool

            pool = get_pool(self._be)
            pool._defer(_destroy_later(pool, self._device, self._calls, self._exec, self._graph,
                                       self._be))
        except Exception:
            pass


def _node_params(vendor, way: str, c):
    """The kernel node parameters of bound launch arguments ``c``, naming the kernel ``way``
    (see :meth:`GpuBackend.node_graph`); None where that way is not available."""
    h = c[0].value
    rest = [v.value for v in c[1:8]]
    if way == "func":
        return KernelNodeParams(h, *rest, c[9].value, c[10].value)
    if way == "kern":
        p = KernelNodeParams(None, *rest, c[9].value, c[10].value)
        p.kern = h
        return p
    try:
        get = ctypes.CDLL(vendor.native[0]).cuKernelGetFunction
    except (OSError, AttributeError):
        return None
    f = ctypes.c_void_p()
    if get(ctypes.byref(f), ctypes.c_void_p(h)) != 0:
        return None
    return KernelNodeParams(f.value, *rest, c[9].value, c[10].value)


def _destroy_later(pool, device, calls, ex, graph, be):
    def destroy():
        if pool._release_blocked(device):
            pool._defer(destroy)  # an open capture on the device: at a later call
            return
        with be.on_device(device):
            calls[4](ex)
            calls[5](graph)
    return destroy


class DriverBound:
    """A launch bound by :meth:`GpuBackend.bind`: ``run()`` (or calling it) is one driver launch.

    ``cells``: the ``c_int64`` data address of each array argument in the packed parameters, in
    argument order (None when numba's packing was not recognised: never re-pointed).
    ``release(k)`` drops the Python reference to the k-th array argument: the caller owns that
    memory, and a launch re-pointed on every call needs only its address.
    """

    __slots__ = ("run", "cells", "_arrays", "native", "arg_offsets")

    def __init__(self, run, cells, arrays, native=None, arg_offsets=None) -> None:
        self.run = run
        self.cells = cells
        self._arrays = arrays
        # (ctypes function, its argument objects, the symbol's name, what they point into):
        # what run() calls, for a caller that makes the call itself (BoundCall.run)
        self.native = native
        # (the packed parameter buffer, per argument the byte offset of its first value there,
        # -1 for an argument that packs to nothing), or None
        self.arg_offsets = arg_offsets

    def __call__(self) -> None:
        self.run()

    def release(self, k: int) -> None:
        self._arrays[k] = None


def _dim3(d) -> tuple[int, int, int]:
    if isinstance(d, int):
        return (d, 1, 1)
    d = tuple(int(x) for x in d)
    return d + (1,) * (3 - len(d))


def _as_ctype(v):
    """A packed parameter value as a ctypes object of its own size: the buffer's layout (one
    value after another at its alignment) must be the kernel's."""
    if isinstance(v, ctypes._SimpleCData):
        return v
    if isinstance(v, bool):
        return ctypes.c_bool(v)
    dt = getattr(v, "dtype", None)
    if dt is not None and getattr(v, "ndim", None) == 0:  # a NumPy scalar: its own width
        return np.ctypeslib.as_ctypes_type(dt)(v.item())
    return ctypes.c_int64(int(v))  # meminfo, parent, sizes, pointers, shapes, strides: intptr
