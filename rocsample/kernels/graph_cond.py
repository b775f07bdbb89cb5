"""The histogram lane of a captured graph as a conditional node: ``need_lane`` and the gate.

Device parameter arrays (and the rows the nucleus pass leaves) leave it to the device whether
any row needs the histogram and select passes. Under a stream capture on CUDA the binder puts
those two passes into the body of a conditional IF node (``GpuBackend.conditional``) and, just
before it, one launch of ``_lane_gate_kernel`` (one thread) with the node's handle: the gate
sets the node's value to 1 when the launch's kernels asked for the passes, so the body runs only
in graph launches where some row needs it (the node's value is 0 at every graph launch:
``CU_GRAPH_COND_ASSIGN_DEFAULT``).

How a row asks: ``need_lane(cflag)``, an atomic add on ``cflag[0]`` (the plan's own count) by
the block that leaves the row to the histogram path (phase 1's last block of a min-p-only or
histogram row that is no nucleus row, the nucleus pass's last block of a row it leaves: host
values' nucleus routes whose histogram-path rows are all the pass's, ``Route.strided``, make
the lane conditional up to ``sampling_router.NUC_COND_MAX_ROWS`` rows). ``lane_reset(cflag)``
takes the count back to 0, in the kernels that run after each launch sequence that counts:
the gate (as it reads it) and the histogram and min-p kernels (the first of the passes,
launched wherever a row can ask), so the count is 0 before every call. The gate alone calls
``cudaGraphSetConditional``: CUDA leaves concurrent calls undefined, and the call in a streaming
kernel cost ptxas 8-16 registers (at its start) or ~20 instructions of the fast draw's loop (at its
end) on sm_90 (docs/PERF_NOTES.md, twenty-first session).

On numba-cuda ``cudaGraphSetConditional`` is a built-in that ptxas resolves (declared with
``cuda.declare_device``, C ABI); the simulator and numba-hip have no conditional nodes: there
``set_conditional`` does nothing, so the gate only takes the count back (and the binder never
launches it there).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from rocsample.kernels import JIT_CACHE, _numba_cuda

_U64_0 = np.uint64(0)


def build(cuda, atomic_add) -> SimpleNamespace:
    """``need_lane(cflag)`` and ``lane_reset(cflag)`` (device functions) and
    ``_lane_gate_kernel(cond, cflag)`` for kernels built with ``cuda`` (``atomic_add``: the
    backend's array atomic, ``rocsample.kernels.atomics``)."""

    @cuda.jit(device=True, cache=JIT_CACHE)
    def need_lane(cflag):
        atomic_add(cflag, 0, np.int32(1))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def lane_reset(cflag):
        # the count back to 0 (one thread of a kernel that runs after every kernel that counts);
        # True when some row asked since the last reset
        if cflag[0] != 0:
            cflag[0] = 0
            return True
        return False

    if _numba_cuda(cuda):
        from numba import types

        set_conditional = cuda.declare_device(
            "cudaGraphSetConditional", types.void(types.uint64, types.uint32), abi="c")
    else:

        @cuda.jit(device=True, cache=JIT_CACHE)
        def set_conditional(cond, value):
            # no conditional nodes here (the binder never launches the gate with a handle)
            pass

    @cuda.jit(cache=JIT_CACHE)
    def _lane_gate_kernel(cond, cflag):
        # one thread: the node ``cond`` runs its body when some row asked since the last reset
        if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
            if lane_reset(cflag) and cond != _U64_0:
                set_conditional(cond, np.uint32(1))

    return SimpleNamespace(need_lane=need_lane, lane_reset=lane_reset,
                           _lane_gate_kernel=_lane_gate_kernel)
