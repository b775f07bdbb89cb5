"""The ``sim`` backend: the same kernels under numba-cuda's simulator, thread by thread.

The simulator is chosen when ``numba.cuda`` is first imported (``NUMBA_ENABLE_CUDASIM=1``), so
``sim`` cannot share a process with a real ``cuda`` backend that already loaded numba.cuda.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

import numpy as np

from ..errors import BackendUnavailable
from .emulated import EmulatedRuntime
from .numba_arrays import NumbaBackend, span


class _SimCuda:
    """The module kernels see as ``cuda`` under the simulator.

    The simulator swaps the ``cuda`` module in a kernel's *globals* for a per-launch fake that
    knows grid, threadIdx, shared memory and so on. Our kernels get ``cuda`` through
    ``build(cuda)``, a closure the swap never reaches, so this proxy forwards to the fake while a
    simulated kernel runs and to the simulator's numba.cuda otherwise.
    """

    def __init__(self, cuda, kernel_mod) -> None:
        object.__setattr__(self, "_cuda", cuda)
        object.__setattr__(self, "_kmod", kernel_mod)

    def __getattr__(self, name):
        ctx = self._kmod._kernel_context
        if ctx is not None and hasattr(ctx, name):
            return getattr(ctx, name)
        return getattr(self._cuda, name)


_SHARED_LOCK = threading.Lock()
#: One simulated kernel at a time in the process: the simulator keeps the running kernel's fake
#: ``cuda`` module in one global (it asserts "concurrent simulated kernel not supported") and
#: ``kernel[grid, block]`` stores the launch shape on the shared kernel object.
_LAUNCH_LOCK = threading.RLock()


def serialise_shared_arrays() -> None:
    """Make the simulator's ``cuda.shared.array`` create each array once per block (idempotent).

    The simulator runs a block's threads as Python threads and keys a block's shared arrays by
    the calling source line, but looks the key up and stores a new array without a lock: two
    threads that reach the line together can each get a private ``np.empty`` array, so one of them
    reads values nobody wrote. (CI saw it: a top-k tile list read back as garbage indices.) This
    replaces the method with one that does the lookup and the creation under one lock; the key
    (file, line of the caller) and the arrays are the simulator's own.
    """
    from numba.cuda.simulator import kernelapi

    cls = kernelapi.FakeCUDAShared
    if getattr(cls.array, "_rocsample_locked", False):
        return
    original = cls.array

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:
            return original(self, shape, dtype, alignment)  # neither path keys by the caller
        f = sys._getframe(1)
        caller = (f.f_code.co_filename, f.f_lineno)
        with _SHARED_LOCK:
            res = self._allocations.get(caller)
            if res is None:
                if isinstance(dtype, kernelapi.types.Type):
                    dtype = kernelapi.numpy_support.as_dtype(dtype)
                res = np.empty(shape, dtype)
                self._allocations[caller] = res
        return res

    array._rocsample_locked = True
    cls.array = array


def quiet_float_errors() -> None:
    """Run each simulated thread under ``np.errstate(all="ignore")`` (idempotent).

    A GPU's float arithmetic overflows to inf and makes NaN silently; the simulator computes with
    NumPy scalars, whose default error state warns (``RuntimeWarning: overflow encountered in
    scalar multiply``) from inside rocsample's kernels, which the user can do nothing about.
    NumPy's error state is per thread (a context variable a new thread does not inherit), so it
    is set in the simulator's own thread body, around the kernel's Python function.
    """
    from numba.cuda.simulator import kernel as kernel_mod

    cls = kernel_mod.BlockThread
    if getattr(cls.run, "_rocsample_quiet", False):
        return
    original = cls.run

    def run(self):
        with np.errstate(all="ignore"):
            original(self)

    run._rocsample_quiet = True
    cls.run = run


class _BlockBarrier:
    """``__syncthreads`` for one simulated block: releases the waiting threads when every thread
    still running waits (a thread that returned no longer counts, as on the simulator and on a
    GPU since Volta); ``abort`` releases them all with an error and keeps the first thread that
    failed (``failed``)."""

    def __init__(self, threads: int) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.live = threads
        self.waiting = 0
        self.generation = 0
        self.aborted = False
        self.failed = None

    def _release_if_all_wait(self) -> None:   # (holding cond)
        if self.waiting and self.waiting == self.live:
            self.waiting = 0
            self.generation += 1
            self.cond.notify_all()

    def wait(self) -> None:
        with self.cond:
            if self.aborted:
                raise RuntimeError("abort flag set on syncthreads call")
            gen = self.generation
            self.waiting += 1
            self._release_if_all_wait()
            while gen == self.generation and not self.aborted:
                self.cond.wait()
            if self.aborted:
                raise RuntimeError("abort flag set on syncthreads clear")

    def leave(self) -> None:
        with self.cond:
            self.live -= 1
            self._release_if_all_wait()

    def abort(self, thread) -> None:
        with self.cond:
            if self.failed is None:
                self.failed = thread
            self.aborted = True
            self.cond.notify_all()


def event_driven_blocks() -> None:
    """Run each simulated block's barriers on a condition variable (idempotent).

    The simulator's ``BlockManager.run`` starts a block's threads and then polls them in a busy
    loop until all are blocked in ``syncthreads`` or done, rebuilding the set of live threads on
    every pass; the poller holds the GIL for most of each switch interval, so every barrier of
    every block waits on it (the bulk of ``make test``'s sim time). This replaces the poller
    with :class:`_BlockBarrier`: the last thread to arrive releases the others, a thread that
    returns leaves the count, and the first exception aborts the block's other threads and is
    raised from the launch, as the simulator does (its message names the thread and block).
    Threads, shared arrays and ``syncthreads_count/and/or`` stay the simulator's own. A
    simulator whose classes take other arguments than numba-cuda 0.30's keeps its own poller
    (slow, still correct; tests/backends/test_sim_blocks.py fails on it)."""
    import inspect

    from numba.cuda.simulator import kernel as kernel_mod

    bt, bm = kernel_mod.BlockThread, kernel_mod.BlockManager
    if getattr(bm.run, "_rocsample_events", False):
        return
    if (list(inspect.signature(bt.__init__).parameters)
            != ["self", "f", "manager", "blockIdx", "threadIdx", "debug"]
            or list(inspect.signature(bm.__init__).parameters)
            != ["self", "f", "grid_dim", "block_dim", "debug"]):
        return
    thread_run = bt.run

    def syncthreads(self):
        self._rocsample_barrier.wait()

    def run_thread(self):
        try:
            thread_run(self)   # (the simulator's: catches the kernel's exception into .exception)
        finally:
            barrier = self._rocsample_barrier
            if self.exception is not None:
                barrier.abort(self)
            barrier.leave()

    def run_block(self, grid_point, *args):
        barrier = _BlockBarrier(int(np.prod(self._block_dim)))
        threads = []

        def target():
            self._f(*args)

        for block_point in np.ndindex(*self._block_dim):
            t = bt(target, self, grid_point, block_point, self._debug)
            t._rocsample_barrier = barrier
            threads.append(t)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        first = barrier.failed   # (the others' errors are the abort's)
        if first is not None:
            raise first.exception[0].with_traceback(first.exception[1])

    syncthreads._rocsample_events = run_thread._rocsample_events = True
    run_block._rocsample_events = True
    bt.syncthreads = syncthreads
    bt.run = run_thread
    bm.run = run_block


class SimBackend(NumbaBackend):
    def __init__(self, cuda) -> None:
        from numba.cuda.simulator import kernel as kernel_mod

        serialise_shared_arrays()
        quiet_float_errors()
        event_driven_blocks()
        cuda = _SimCuda(cuda, kernel_mod)
        super().__init__(
            "sim", cuda, EmulatedRuntime(alloc_array=lambda n: cuda.device_array(n, dtype=np.uint8))
        )

    def _is_own_array(self, obj) -> bool:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return isinstance(obj, FakeCUDAArray)

    def is_device_array(self, obj) -> bool:
        return self._is_own_array(obj) or super().is_device_array(obj)

    def launch(self, kernel, grid, block, stream, *args) -> None:
        def run():
            with _LAUNCH_LOCK:  # whole launches, one at a time (threads share the simulator)
                kernel[grid, block, stream.numba](*args)

        self.runtime.enqueue(stream, run)

    def warp_size(self, device=None) -> int:
        # The simulator has no wavefront; ROCSAMPLE_SIM_WARP=64 exercises wave64 layouts.
        return int(os.environ.get("ROCSAMPLE_SIM_WARP", "32"))

    def compute_units(self, device=None) -> int:
        return 4

    def device_name(self, device=None) -> str:
        return "numba-cuda simulator"

    def _allocated(self, arr, device: int):
        arr._rocsample_device = device  # the simulator's arrays have no device of their own
        return arr

    def array_span(self, arr):
        a = getattr(arr, "_ary", None) if self._is_own_array(arr) else None
        if a is None:
            return super().array_span(arr)
        return span(int(a.__array_interface__["data"][0]), a.shape, a.strides, a.itemsize)

    def array_layout(self, arr):
        a = arr._ary
        return (a.dtype, a.shape, a.strides)

    def array_at(self, address: int, layout):
        # the simulator's device memory is host memory: a view of the bytes at `address`
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        dtype, shape, strides = layout
        ptr, lo, hi = span(address, shape, strides, dtype.itemsize)
        if hi == lo:
            return FakeCUDAArray(np.empty(shape, dtype))
        buf = (ctypes.c_char * (hi - lo)).from_address(lo)
        return FakeCUDAArray(np.ndarray(shape, dtype, buffer=buf, offset=ptr - lo, strides=strides))

    def array_device(self, arr) -> int:
        # the device the array was allocated for (as_array / empty); others (views, arrays made
        # outside rocsample) count as the current device's
        return getattr(arr, "_rocsample_device", self.runtime.current_device())


def _is_simulator(cuda) -> bool:
    return "simulator" in type(cuda.get_current_device()).__module__


def load() -> SimBackend:
    mod = sys.modules.get("numba.cuda")
    if mod is not None and not _is_simulator(mod):
        raise BackendUnavailable(
            "sim: numba.cuda was already imported for a real GPU in this process; set "
            "ROCSAMPLE_BACKEND=sim (or NUMBA_ENABLE_CUDASIM=1) before anything imports numba.cuda"
        )
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    try:
        from numba import config

        config.ENABLE_CUDASIM = True
        from numba import cuda
    except ImportError as e:  # pragma: no cover - depends on the install
        raise BackendUnavailable(
            f"sim: numba-cuda is not installed ({e}); install rocsample[dev]"
        ) from e
    if not _is_simulator(cuda):
        raise BackendUnavailable("sim: numba.cuda loaded without the simulator in this process")
    return SimBackend(cuda)
