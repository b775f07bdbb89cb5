"""Four consecutive logits by one vector load: ``raw4`` and ``head4`` (phase 1's argmax kernel).

``build(cuda)`` gives two device functions over a 2-D logits array ``x`` whose rows have unit
element stride (float32, or the uint16 bits of float16 / bfloat16 logits):

``raw4(x, row, i) -> (a, b, c, d)``
    The raw elements ``x[row, i : i + 4]``. Compiled (numba-cuda, and numba-hip through the
    ``intrinsic`` the hip backend registers for ``rocsample.kernels.atomics``): one load of 4
    elements, an LLVM ``<4 x T>`` load of alignment ``4 * itemsize`` in the global address space
    (``ld.global.v4.f32`` / ``ld.global.v4.u16`` on sm_90, ``global_load_dwordx4`` /
    ``global_load_dwordx2`` on AMD), so ``x[row, i]`` must lie on a ``4 * itemsize`` boundary:
    ``head4`` says where the first such element of a row is. The simulator: four loads.

``head4(x, row) -> h``
    How many elements of row ``row`` come before its first element on a ``4 * itemsize``
    boundary (0 to 3), from the row's address where compiled (a caller's tensor may start
    anywhere its element alignment allows, and rows may have any stride). The simulator applies
    the same rule to the row's offset from the array's start (its loads keep no alignment), so
    that it walks the same heads as an aligned array on a GPU.

A kernel streaming a row by ``raw4`` loads elements ``[0, h)`` one by one, then ``(n - h) // 4``
vectors from ``h``, then the last ``(n - h) % 4`` one by one: every element once, whatever the
address. ``vector_intrinsics`` only emits target-neutral LLVM IR; tests/kernels/test_vload.py
checks it with numba's CPU ``intrinsic`` (address space 0 there).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from rocsample.kernels import JIT_CACHE, _numba_cuda
from rocsample.kernels import atomics as _atomics

__all__ = ["build", "vector_intrinsics"]


def vector_intrinsics(intrinsic, cgutils, types, addrspace: int = 1) -> SimpleNamespace:
    """``raw4`` and ``head4`` as intrinsics made with ``intrinsic`` (a numba ``intrinsic``
    decorator of the target that compiles them; ``cgutils`` and ``types`` of the same numba);
    loads in address space ``addrspace`` (1: the global space of NVPTX and AMDGPU)."""
    from llvmlite import ir

    def _row_pointer(context, builder, sig, args, col):
        aty = sig.args[0]
        ary = context.make_array(aty)(context, builder, value=args[0])
        r = context.cast(builder, args[1], sig.args[1], types.intp)
        return cgutils.get_item_pointer(context, builder, aty, ary, [r, col], wraparound=False)

    @intrinsic
    def raw4(typingctx, x, row, i):
        if not (isinstance(x, types.Array) and x.ndim == 2):
            return None
        rt = types.UniTuple(x.dtype, 4)
        sig = rt(x, row, i)

        def codegen(context, builder, sig, args):
            col = context.cast(builder, args[2], sig.args[2], types.intp)
            ptr = _row_pointer(context, builder, sig, args, col)
            vty = ir.VectorType(context.get_data_type(sig.args[0].dtype), 4)
            vptr = ir.PointerType(vty, addrspace)
            if addrspace:
                vptr = builder.addrspacecast(ptr, vptr)
            else:
                vptr = builder.bitcast(ptr, vptr)
            v = builder.load(vptr, align=4 * (sig.args[0].dtype.bitwidth // 8))
            vals = [builder.extract_element(v, ir.Constant(ir.IntType(32), k)) for k in range(4)]
            return context.make_tuple(builder, rt, vals)

        return sig, codegen

    @intrinsic
    def head4(typingctx, x, row):
        if not (isinstance(x, types.Array) and x.ndim == 2):
            return None
        sig = types.int64(x, row)

        def codegen(context, builder, sig, args):
            i64 = ir.IntType(64)
            ptr = _row_pointer(context, builder, sig, args, ir.Constant(i64, 0))
            elem = builder.udiv(builder.ptrtoint(ptr, i64),
                                ir.Constant(i64, sig.args[0].dtype.bitwidth // 8))
            return builder.and_(builder.neg(elem), ir.Constant(i64, 3))

        return sig, codegen

    return SimpleNamespace(raw4=raw4, head4=head4)


def build(cuda):
    """``(raw4, head4)`` (device functions) for kernels built with ``cuda``."""
    if _numba_cuda(cuda):
        from numba.cuda import cgutils, types
        from numba.cuda.extending import intrinsic
    else:
        intrinsic = _atomics._REGISTERED.get(getattr(cuda, "__name__", ""))
        if intrinsic is not None:   # numba-hip (registered by the hip backend)
            from numba.core import cgutils, types
    if intrinsic is not None:
        v = vector_intrinsics(intrinsic, cgutils, types)
        return v.raw4, v.head4

    @cuda.jit(device=True, cache=JIT_CACHE)
    def raw4(x, row, i):
        j = np.uint64(i)
        return (x[row, j], x[row, j + np.uint64(1)], x[row, j + np.uint64(2)],
                x[row, j + np.uint64(3)])

    @cuda.jit(device=True, cache=JIT_CACHE)
    def head4(x, row):
        # the row's offset in elements from an array start taken as aligned
        return np.int64((-((np.int64(row) * x.strides[0]) // x.itemsize)) & 3)

    return raw4, head4
