"""NVVM's approximate float32 functions as numba-cuda intrinsics (elsewhere: None).

``approx_ftz(cuda, "lg2")`` and ``approx_ftz(cuda, "ex2")`` are ``lg2.approx.ftz.f32`` and
``ex2.approx.ftz.f32``: one ``MUFU.LG2`` / ``MUFU.EX2`` each on sm_90. A device function's
``fastmath`` log2 or exp2 lowers to the non-ftz form (flush-to-zero is a kernel's option, and the
kernels keep denormals: their exact scores multiply raw logits), and ptxas guards every non-ftz
``MUFU`` with a denormal test and two predicated fix-ups. The callers pass only arguments where
both forms give the same bits (normal inputs; for ex2, results that are normal or whose flush to
zero their error bound covers): rocsample/kernels/philox.py's ``gumbel_fast`` and the nucleus
pass's ``amass`` (rocsample/kernels/sampling_hist.py). This file never imports numba at import
time; ``cuda`` is the numba CUDA-dialect module the kernels are built with.
"""

from __future__ import annotations

from rocsample.kernels import _numba_cuda

_NAMES = {"lg2": "llvm.nvvm.lg2.approx.ftz.f", "ex2": "llvm.nvvm.ex2.approx.ftz.f"}


def approx_ftz(cuda, op: str):
    """numba-cuda: ``OP.approx.ftz.f32`` (``op``: "lg2" or "ex2") as an intrinsic of one
    float32; elsewhere (the simulator, numba-hip) None, and the caller uses the exact function."""
    name = _NAMES[op]
    if not _numba_cuda(cuda):
        return None
    from llvmlite import ir
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def approx(typingctx, x):
        if x != types.float32:
            return None
        sig = types.float32(types.float32)

        def codegen(context, builder, sig, args):
            f32 = ir.FloatType()
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f32, [f32]), name)
            return builder.call(fn, [args[0]])

        return sig, codegen

    return approx
