"""Device code, one file per kernel family. Each file defines ``build(cuda)``; see docs/DESIGN.md.

``JIT_CACHE``: kernels are cached on disk by numba (``cache=True``) so a second process reaches
its first token without recompiling; ``ROCSAMPLE_JIT_CACHE=0`` turns it off. numba picks the
folder (``__pycache__`` beside the source, or ``NUMBA_CACHE_DIR``).
"""

import os

JIT_CACHE = os.environ.get("ROCSAMPLE_JIT_CACHE", "1") != "0"


def register_cap(cuda, family: str, default: int | None) -> dict:
    """``cuda.jit`` options capping a kernel family's registers per thread on numba-cuda.

    A streaming kernel whose rarely run tail (a row's last block) needs many registers holds
    few blocks per SM for its whole stream; a cap (``max_registers``: ptxas spills the excess,
    which docs/PERF_NOTES.md checks lands outside the streaming loops) buys occupancy. Only
    numba-cuda's compiler takes it: the simulator and numba-hip get ``{}``.
    ``ROCSAMPLE_MAX_REGISTERS="hist=64,select=48"`` overrides ``default`` per family (0: no
    cap) for tools/gpu's sweeps; numba's disk cache does not key on it, so a sweep gives each
    setting its own ``NUMBA_CACHE_DIR``.
    """
    if getattr(cuda.jit, "__module__", "") != "numba.cuda.decorators":
        return {}
    cap = default
    for item in os.environ.get("ROCSAMPLE_MAX_REGISTERS", "").split(","):
        name, _, value = item.partition("=")
        if name.strip() == family and value.strip():
            cap = int(value)
    return {"max_registers": cap} if cap else {}
