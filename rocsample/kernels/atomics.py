"""Array-element atomics for the kernels: ``add``, ``min`` and ``max`` of ``(ary, index, value)``,
returning the old value.

numba-cuda (and its simulator) provide these as ``cuda.atomic.*``; numba-hip 0.2 does not (its
``atomic`` names are HIP's pointer-taking ``atomicAdd`` family, and its README lists array
atomics as unsupported). So the kernels never call ``cuda.atomic`` themselves: ``build(cuda)``
gives them three device functions that are

- on numba-cuda and the simulator: thin wrappers of ``cuda.atomic.add / min / max`` (inlined);
- on a module registered with ``register`` (the hip backend registers numba-hip, with numba-hip's
  ``intrinsic`` decorator): LLVM ``atomicrmw`` instructions from ``rmw_intrinsics``.

``rmw_intrinsics`` only emits target-neutral LLVM IR (an element pointer and ``atomicrmw``
add / min / max / umin / umax / fadd, monotonic ordering, like CUDA's relaxed atomics); which
compiler receives it is the caller's choice, so the code generation is tested with numba's CPU
``intrinsic`` (tests/kernels/test_atomics.py) on machines without ROCm.
"""

from __future__ import annotations

from types import SimpleNamespace

from rocsample.kernels import JIT_CACHE

_REGISTERED: dict[str, object] = {}


def register(module_name: str, intrinsic) -> None:
    """Use ``rmw_intrinsics(intrinsic)`` for kernels built with the module ``module_name``."""
    _REGISTERED[module_name] = intrinsic


def rmw_intrinsics(intrinsic) -> SimpleNamespace:
    """``add``, ``min``, ``max`` as ``atomicrmw`` intrinsics made with ``intrinsic`` (a numba
    ``intrinsic`` decorator of the target that compiles them).

    Integer arrays: add, and signed or unsigned min / max by the array's signedness; float
    arrays: add only. The index is an integer or a tuple with one integer per dimension; the value
    is cast to the array's dtype. No bounds check and no negative-index wraparound, as on CUDA.
    """
    from numba.core import cgutils, types
    from numba.core.typing import signature

    def make(name):
        @intrinsic
        def rmw(typingctx, ary, idx, val):
            if not isinstance(ary, types.Array):
                return None
            floating = isinstance(ary.dtype, types.Float)
            if not (isinstance(ary.dtype, types.Integer) or (floating and name == "add")):
                return None
            idxs = list(idx) if isinstance(idx, types.BaseTuple) else [idx]
            if len(idxs) != ary.ndim or not all(isinstance(t, types.Integer) for t in idxs):
                return None
            if not isinstance(val, (types.Integer, types.Float, types.Boolean)):
                return None

            def codegen(context, builder, sig, args):
                aryty, idxty, valty = sig.args
                a, ix, v = args
                if isinstance(idxty, types.BaseTuple):
                    ivals = cgutils.unpack_tuple(builder, ix, len(idxty))
                    itys = list(idxty)
                else:
                    ivals, itys = [ix], [idxty]
                ivals = [context.cast(builder, i, t, types.intp) for i, t in zip(ivals, itys)]
                arr = context.make_array(aryty)(context, builder, a)
                ptr = cgutils.get_item_pointer(context, builder, aryty, arr, ivals,
                                               wraparound=False)
                v = context.cast(builder, v, valty, aryty.dtype)
                if isinstance(aryty.dtype, types.Float):
                    op = "fadd"
                elif name == "add":
                    op = "add"
                else:
                    op = name if aryty.dtype.signed else "u" + name
                return builder.atomic_rmw(op, ptr, v, "monotonic")

            return signature(ary.dtype, ary, idx, val), codegen

        return rmw

    return SimpleNamespace(add=make("add"), min=make("min"), max=make("max"))


def build(cuda) -> SimpleNamespace:
    intrinsic = _REGISTERED.get(getattr(cuda, "__name__", ""))
    if intrinsic is not None:
        return rmw_intrinsics(intrinsic)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def add(ary, i, v):
        return cuda.atomic.add(ary, i, v)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def amin(ary, i, v):
        return cuda.atomic.min(ary, i, v)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def amax(ary, i, v):
        return cuda.atomic.max(ary, i, v)

    return SimpleNamespace(add=add, min=amin, max=amax)
