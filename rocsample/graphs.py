"""Capture and replay (SPEC §5).

>>> with rocsample.graphs.capture(stream) as g:
...     sampler(logits_dev)             # work is recorded, not run
>>> g.replay(stream)                    # run it; repeat as often as needed
>>> g.release()                         # frees the graph and, once its work is done, its scratch

Inputs that change between replays live in device memory and are updated with
:func:`copy_to_device` (a stream-ordered copy on the graph's stream), never by host writes into
memory a running graph may read.

On ``cuda`` and ``hip`` these are real driver graphs (cuStreamBeginCapture ... cuGraphLaunch); on
``sim`` and ``cpu`` the emulated runtime records the launches and replays them in order.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading

import numpy as np

from .backends import get_backend
from .backends import interop as _interop
from .errors import CaptureError
from .scratch import get_pool

_ids = itertools.count(1)
_ids_lock = threading.Lock()


class Graph:
    """A captured, instantiated graph; replay it with :meth:`replay`, free it with :meth:`release`."""

    def __init__(self, backend, stream) -> None:
        with _ids_lock:
            self.id = next(_ids)
        self.backend = backend
        self.stream = stream  # the normalised capture stream
        self._graph = None
        self._exec = None
        self._last_stream = None
        self._arg_stream = None
        self._arg_st = None
        self.replays = 0
        self.released = False
        self._release_asked = False  # release() was called; done once no capture forbids it
        # One launch or release at a time: a release waits for a launch being enqueued (its
        # event must come after it) and runs once however many threads ask.
        self._lock = threading.Lock()
        # device arrays the captured kernels read or write that the scratch pool does not own
        # (a plan's cached parameter copies and outputs): alive as long as the graph (hold())
        self._held: list = []

    @property
    def ready(self) -> bool:
        return self._exec is not None and not self.released and not self._release_asked

    def replay(self, stream=None) -> None:
        """Launch the graph on ``stream`` (default: the stream it was captured on)."""
        with self._lock:
            if not self.ready:
                raise CaptureError(
                    "graph: not replayable ("
                    + ("released" if self.released else "capture not finished") + ")"
                )
            if stream is None:
                st = self.stream
            elif stream is self._arg_stream and not isinstance(stream, int):
                # the same live stream object as last time (its handle cannot have been recycled
                # while it is alive): skip the driver queries of the normalisation
                st = self._arg_st
            else:
                st = self.backend.stream(stream)
                self._arg_stream, self._arg_st = stream, st
            self.backend.runtime.graph_launch(self._exec, st)
            self._last_stream = st
            self.replays += 1

    def release(self, _forgotten: bool = False) -> None:
        """Destroy the graph; its scratch returns to the pool once its last launch completes."""
        with self._lock:
            if self.released:
                return
            pool = get_pool(self.backend)
            if self._exec is not None and pool._release_blocked(self.stream.device):
                # cuGraphExecDestroy / cuGraphDestroy inside an open capture (this thread's, a
                # global one, or a foreign one rocsample sees) would invalidate that capture: the
                # graph stops being replayable now and is destroyed at the pool's next call after
                self._release_asked = True
                pool._defer(functools.partial(self.release, _forgotten))
                return
            rt = self.backend.runtime
            if self._exec is not None:
                rt.graph_exec_destroy(self._exec)
            if self._graph is not None:
                rt.graph_destroy(self._graph)
            self.released = True
            # A forgotten graph (__del__) may have been collected with its streams: their
            # finalizers (cuStreamDestroy) ran before ours, so no stream of it is asked or
            # recorded on (a destroyed handle crashed the driver under compute-sanitizer); its
            # buffers are then freed with no event, by cuMemFree, which waits for the device.
            last = None if _forgotten else (self._last_stream or self.stream)
            pool._release_graph(self.id, last)
            self._held = []  # numba frees them with cuMemFree, which waits for the device

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):  # a forgotten graph must not leak its pinned scratch forever
        # Not release() here: the collector can run this finalizer inside a scratch-pool call
        # that holds the pool's locks (a deadlock on the retired list's lock). The pool runs the
        # release at the start of its next public call (request, prewarm, trim, stats).
        try:
            if not self.released and self._exec is not None:
                get_pool(self.backend)._defer(functools.partial(self.release, True))
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "released" if self.released else ("ready" if self.ready else "capturing")
        return f"<rocsample Graph #{self.id} {state}, {self.replays} replays>"


_active: dict = {}  # (device, stream handle) -> the Graph being captured on that stream


def hold(stream, *objs) -> None:
    """Keep ``objs`` alive as long as the graph being captured on ``stream``, if one is.

    A captured kernel keeps the *addresses* of its arguments; an array that its Python owner
    drops (a parameter cache trimmed, a plan garbage-collected) would be freed under the graph.
    ``stream`` is a normalised backends.Stream. Outside a capture this is one dict lookup.
    """
    g = _active.get((stream.device, stream.handle))
    if g is not None:
        g._held.extend(o for o in objs if o is not None)


@contextlib.contextmanager
def capture(stream, mode: str = "thread_local"):
    """Capture the work issued on ``stream`` inside the block into a replayable :class:`Graph`.

    Parameters
    ----------
    stream
        Any stream rocsample accepts (not the default stream).
    mode
        ``"thread_local"`` (default), ``"global"`` or ``"relaxed"``, as in cuStreamBeginCapture.

    Raises
    ------
    ScratchNotWarmed
        From a call inside the block that needed unwarmed scratch; the capture is ended, the
        partial graph destroyed, and the same stream can be prewarmed and captured again.
    CaptureError
        If the capture was invalidated (e.g. by an allocation on the device).

    Note
    ----
    Nothing inside the block may allocate device memory or synchronize: pass device arrays,
    prewarm scratch first (``Sampler.prewarm`` / ``rocsample.scratch.prewarm``).
    """
    be = get_backend()
    st = be.stream(stream)
    pool = get_pool(be)
    g = Graph(be, st)
    defer = contextlib.ExitStack()
    if be.cuda is not None and hasattr(be.cuda, "defer_cleanup"):
        # numba must not free memory (cuMemFree) while the capture is open. Its deferral is per
        # context, the current one when entered: enter it with the *stream's* device current.
        with be.on_device(st.device):
            defer.enter_context(be.cuda.defer_cleanup())
    # The pool learns of the capture first: a request from another thread that lands right after
    # the driver's begin then pins its buffer to this graph (released with it), not to an
    # unknown "external" capture that would keep it forever.
    fresh = pool._begin_capture(st, mode)  # False: already capturing; the driver refuses below
    try:
        be.runtime.begin_capture(st, mode)
    except BaseException:
        if fresh:
            pool._end_capture(st, None)
        defer.close()
        raise
    _active[(st.device, st.handle)] = g
    try:
        with defer:
            yield g
    except BaseException:
        _active.pop((st.device, st.handle), None)
        graph = None
        try:
            graph = be.runtime.end_capture(st)
        except Exception:
            pass  # invalidated: the driver has already dropped it
        if graph is not None:
            be.runtime.graph_destroy(graph)
        pool._end_capture(st, None)
        raise
    _active.pop((st.device, st.handle), None)
    try:
        graph = be.runtime.end_capture(st)
    except Exception:
        pool._end_capture(st, None)
        raise
    try:
        exec_ = be.runtime.instantiate(graph)
    except Exception:
        be.runtime.graph_destroy(graph)
        pool._end_capture(st, None)
        raise
    g._graph, g._exec = graph, exec_
    pool._end_capture(st, g.id)


def copy_to_device(dst, host, stream) -> None:
    """Stream-ordered host-to-device copy into ``dst`` (for graph inputs between replays).

    Parameters
    ----------
    dst : device array
        The graph input to refill (a NumPy array on ``cpu``, whose arrays are its device memory).
    host : numpy.ndarray
        The new contents: dst's shape and dtype exactly. Bytes are copied, never converted: a
        float64 array for a float32 input is refused, on every backend (bfloat16 values for a
        uint16 input: pass ``host.view(np.uint16)``).
    stream
        The stream the copy is ordered on (the graph's).

    Raises
    ------
    TypeError, ValueError
        Naming ``dst`` or ``host``, before anything is enqueued.
    """
    from . import _validate as V

    be = get_backend()
    st = be.stream(stream)
    if not (be.is_device_array(dst) if be.is_device else isinstance(dst, np.ndarray)):
        V.fail("dst", "a device array (on cpu, a NumPy array: its device memory)", V.describe(dst),
               TypeError)
    d_dtype, d_shape = V.dtype_of(dst), tuple(int(n) for n in dst.shape)
    host = _interop.adopt(host)  # a torch CPU tensor or a host DLPack producer reads as NumPy
    if not isinstance(host, np.ndarray):
        V.fail("host", f"a NumPy array of dtype {d_dtype} and shape {d_shape}", V.describe(host),
               TypeError)
    if V.dtype_of(host) != d_dtype:
        V.fail("host", f"dtype {d_dtype} (dst's; bytes are copied, not converted)", V.dtype_of(host),
               TypeError)
    if tuple(host.shape) != d_shape:
        V.fail("host", f"shape {d_shape} (dst's)", f"shape {tuple(host.shape)}")
    be.copy_to_device(dst, host, st)


__all__ = ["Graph", "capture", "copy_to_device", "hold"]
