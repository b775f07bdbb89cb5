"""A two-step device job that goes wrong if another stream shares its scratch.

Step 1 writes ``value + i`` into the scratch buffer; step 2 copies the buffer into ``out``.
If two streams shared one buffer, interleaved jobs would copy each other's values.
"""

from __future__ import annotations

import numpy as np

_BLOCK = 64


def build(cuda):
    @cuda.jit
    def _fill_kernel(buf, n, value):
        i = cuda.grid(1)
        if i < n:
            buf[i] = value + i

    @cuda.jit
    def _copy_kernel(buf, out, n):
        i = cuda.grid(1)
        if i < n:
            out[i] = buf[i]

    return {"fill": _fill_kernel, "copy": _copy_kernel}


def run_job(backend, stream, scratch_u8, out, value: int) -> None:
    """Enqueue the two steps on ``stream`` using ``scratch_u8`` (uint8, >= 4*len(out) bytes)."""
    n = out.shape[0]
    st = backend.stream(stream)
    if not backend.is_device:
        buf = scratch_u8[: 4 * n].view(np.int32)

        def step1():
            buf[:] = value + np.arange(n, dtype=np.int32)

        def step2():
            out[:] = buf

        backend.enqueue(st, step1)
        backend.enqueue(st, step2)
        return
    k = backend.kernels(build)
    buf = scratch_u8[: 4 * n].view(np.int32)
    grid = (n + _BLOCK - 1) // _BLOCK
    backend.launch(k["fill"], grid, _BLOCK, st, buf, n, np.int32(value))
    backend.launch(k["copy"], grid, _BLOCK, st, buf, out, n)


def expected(n: int, value: int) -> np.ndarray:
    return value + np.arange(n, dtype=np.int32)
