"""NVIDIA: numba-cuda + cuda-bindings. Every NVIDIA-specific line of rocsample is in this file."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import weakref

from ..errors import BackendUnavailable
from .gpu import GpuBackend, VendorBase


class Vendor(VendorBase):
    name = "cuda"
    native = ("libcuda.so.1", "cuLaunchKernel", "cuGraphLaunch")
    queries = ("cuStreamIsCapturing", "cuStreamGetDevice")
    # CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END;
    # ROCSAMPLE_LAUNCH_ARGS=pointers passes kernelParams instead (tools/gpu/params_probe.py)
    launch_buffer = None if os.environ.get("ROCSAMPLE_LAUNCH_ARGS") == "pointers" else (1, 2, 0)
    # (the plain kernel-node names, where a driver has no _v2 ones, read the same leading
    # fields: KernelNodeParams' last two only extend them)
    node_graphs = ("cuGraphCreate", ("cuGraphAddKernelNode_v2", "cuGraphAddKernelNode"),
                   "cuGraphInstantiateWithFlags",
                   ("cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams"),
                   "cuGraphExecDestroy", "cuGraphDestroy")

    #: captured calls put the histogram lane of device-decided routes into a conditional IF node
    #: (GpuBackend.conditional; CUDA 12.3 drivers and later, cuda-bindings with the calls);
    #: ROCSAMPLE_CONDITIONAL=0 turns it off (the lane then runs unconditionally, as before)
    conditional_nodes = os.environ.get("ROCSAMPLE_CONDITIONAL", "1") != "0"

    @staticmethod
    def conditional_if(drv):
        """CU_GRAPH_COND_TYPE_IF, the conditional node's type (GpuBackend.conditional; a name
        hip-python-interop does not serve: HIP has no conditional nodes)."""
        return drv.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_IF

    @staticmethod
    def stream_device(rt, handle: int) -> int:
        return int(rt.call("cuStreamGetDevice", handle))

    @staticmethod
    def graph_instantiate(rt, graph):
        return rt.call("cuGraphInstantiate", graph, 0)  # (graph, flags) on NVIDIA

    def kernel_function(self, compiled):
        """The CUfunction of a compiled numba kernel for the current context."""
        cufunc = compiled._codelibrary.get_cufunc()
        h = cufunc.handle
        return self.driver.CUfunction(int(h))

    @staticmethod
    def pointer_device(rt, ptr: int) -> int:
        # The runtime API's answer: on two H200s the driver's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        # read 0 for memory that cudaPointerGetAttributes (and the allocation's context) placed
        # on device 1. Proven on the H200 pair (the multi-GPU tests pass with it).
        from cuda.bindings import runtime as cudart

        err, attrs = cudart.cudaPointerGetAttributes(ptr)
        if int(err) != 0:
            raise RuntimeError(f"cudaPointerGetAttributes failed: {err!r}")
        return int(attrs.device)


# ---- interpreter exit ------------------------------------------------------------------------
# What broke (two H200s, numba-cuda 0.30.4 + cuda.core 1.x): the process died with SIGSEGV *after*
# every test had passed, in cuLibraryUnload called from numba's module finalizer.
#
# numba links a kernel once per compute capability (CUDACodeLibrary._cubin_cache[cc]) into one
# cuda.core ObjectCode, i.e. one context-independent CUlibrary. get_cufunc() then loads that same
# ObjectCode once per *device* (ctx.create_module_image -> CudaPythonModule), and every such module
# gets a weakref.finalize (_module_finalizer) that queues cuLibraryUnload(handle) on its context's
# deallocation queue. Two devices of the same compute capability therefore hold two modules with
# the same CUlibrary and two finalizers that unload it. They run at exit (weakref._exitfunc calls
# every live finalizer); each queue is flushed once it holds more than
# NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT (10) items, so the second cuLibraryUnload of the same,
# already freed library is a use after free in the driver: SIGSEGV (or SIGABRT, with
# numba.cuda.close(), which resets each context in turn and unloads the same library twice).
# With one device each library has one module and is unloaded once (cuda.core's own unload of
# ObjectCode libraries is disabled), so one GPU exits cleanly.
#
# The fix, without touching numba: an exit hook that runs before weakref._exitfunc, waits for
# each device numba has a context on (in that context), and then defers every deallocation
# numba would make at exit (Context.defer_cleanup, the public switch behind cuda.defer_cleanup).
# Nothing is then freed or unloaded one by one at exit: the driver reclaims the whole process when
# it ends, as it already did for the up to 10 items numba leaves queued on one device. Primary
# contexts are neither released nor reset (rocsample never does either; numba.cuda.close() would).

_exit_lock = threading.Lock()
_exit_registered = False
_exit_deferred = contextlib.ExitStack()  # entered at exit, never left: the queues stay disabled


def register_exit_hook(cuda) -> None:
    """Run :func:`quiesce_at_exit` at interpreter exit, before numba's weakref finalizers.

    atexit runs its functions last-registered first, and weakref.finalize registers its exit
    function with atexit when the first finalizer of the process is made. Making one here first
    (as numba.cuda.utils does for its own shutdown flag) puts that registration before ours
    whatever was imported in which order, so ours runs first. Registered once per process.
    """
    global _exit_registered
    with _exit_lock:
        if _exit_registered:
            return
        weakref.finalize(lambda: None, lambda: None)
        atexit.register(quiesce_at_exit, cuda)
        _exit_registered = True


def quiesce_at_exit(cuda) -> list[int]:
    """For each device numba holds a context on: synchronize it, then disable numba's
    deallocation queues of that context for the rest of the process. Returns those devices.

    Devices numba never touched are skipped (entering them would create a context at exit).
    Errors are swallowed: at exit there is nobody left to report to, and a failure here must not
    stop the other devices or the interpreter's own shutdown.
    """
    done = []
    try:
        gpus = list(cuda.gpus)
    except Exception:
        return done
    for dev in gpus:
        try:
            if getattr(dev, "primary_context", None) is None:
                continue  # numba never made a context here: nothing of it to free
            with dev:  # push this device's primary context; popped on leaving
                with contextlib.suppress(Exception):
                    cuda.synchronize()  # nothing in flight while the process is taken down
                _exit_deferred.enter_context(cuda.defer_cleanup())
            done.append(int(dev.id))
        except Exception:
            continue
    return done


# ---- first launches from several threads --------------------------------------------------------
# What broke (an H200, numba-cuda 0.30.4): two threads launching the same kernel for the first
# time both missed CUDACodeLibrary._cufunc_cache and both loaded its one cuda.core ObjectCode into
# the context: the driver hands back the same CUlibrary, and the second registration in the
# context's module table (a UniqueDict) raised "AssertionError: key already in dictionary:
# <CUlibrary ...>" in that thread's launch. numba's get_cufunc is not thread-safe; it is made so
# here by one lock around it (a dictionary hit under an uncontended lock on later launches; the
# repeated-call launches of rocsample bind the function once and do not come here).
_module_lock = threading.RLock()


def serialize_module_loads() -> None:
    """Wrap numba-cuda's ``CUDACodeLibrary.get_cufunc`` in one process-wide lock (once)."""
    from numba.cuda import codegen

    lib = codegen.CUDACodeLibrary
    with _module_lock:
        orig = lib.get_cufunc
        if getattr(orig, "_rocsample_serialized", False):
            return

        def get_cufunc(self):
            with _module_lock:
                return orig(self)

        get_cufunc._rocsample_serialized = True
        get_cufunc.__wrapped__ = orig
        lib.get_cufunc = get_cufunc


def load() -> GpuBackend:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise BackendUnavailable(
            "cuda: NUMBA_ENABLE_CUDASIM=1 is set in this process (the simulator); unset it to use a GPU"
        )
    if "numba.hip" in sys.modules:
        raise BackendUnavailable("cuda: numba.hip already posed as numba.cuda in this process")
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise BackendUnavailable(
            f"cuda: cuda.bindings is not importable ({e}); install rocsample[cuda] "
            "(numba-cuda[cu13], which brings cuda-bindings)"
        ) from e
    # Probe the driver before importing numba.cuda: a failed probe must leave this process free to
    # choose the simulator afterwards.
    try:
        res = driver.cuInit(0)
        err = res[0] if isinstance(res, tuple) else res
    except Exception as e:  # cuda-pathfinder raises when libcuda.so is missing
        raise BackendUnavailable(
            f"cuda: libcuda.so not found ({type(e).__name__}): install the NVIDIA driver, "
            "or choose ROCSAMPLE_BACKEND=cpu"
        ) from e
    if int(err) != 0:
        raise BackendUnavailable(f"cuda: cuInit failed ({err!r}): no usable NVIDIA GPU")
    try:
        from numba import cuda
    except ImportError as e:
        raise BackendUnavailable(f"cuda: numba-cuda is not installed ({e}); install rocsample[cuda]") from e
    try:
        ok = cuda.is_available()
    except Exception as e:  # the driver library itself may be missing
        raise BackendUnavailable(f"cuda: the CUDA driver could not be loaded ({e})") from e
    if not ok:
        raise BackendUnavailable(
            "cuda: no usable NVIDIA GPU (libcuda.so not found or no device); install the NVIDIA "
            "driver, or choose ROCSAMPLE_BACKEND=cpu"
        )
    register_exit_hook(cuda)
    serialize_module_loads()
    return GpuBackend("cuda", Vendor(cuda, driver))
