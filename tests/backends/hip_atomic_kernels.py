"""Small kernels, one per atomic the kernels use, for tests/backends/test_hip_offline.py: built by
``tools/amd/compile_check.py`` (``build(cuda)`` with numba-hip) to read the instructions that
``rocsample.kernels.atomics`` becomes in AMD code. Each returns the old value, as the kernels'
callers may use it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from rocsample.kernels import atomics

# (kernel name, op, element dtype) of the global-memory kernels
GLOBAL = [("add_i32", "add", "int32"), ("add_i64", "add", "int64"), ("add_f32", "add", "float32"),
          ("min_i64", "min", "int64"), ("max_i32", "max", "int32"), ("min_u64", "min", "uint64"),
          ("max_u32", "max", "uint32")]


def build(cuda):
    a = atomics.build(cuda)
    ops = {"add": a.add, "min": a.min, "max": a.max}
    ns = {}
    for name, op, _ in GLOBAL:
        ns[name] = _global_kernel(cuda, ops[op])
    add = a.add

    @cuda.jit
    def shared_add_i32(out, v):
        sh = cuda.shared.array(64, np.int32)
        t = cuda.threadIdx.x
        sh[t] = 0
        cuda.syncthreads()
        old = add(sh, t % 4, v)
        cuda.syncthreads()
        out[t] = sh[t] + old

    ns["shared_add_i32"] = shared_add_i32
    return SimpleNamespace(**ns)


def _global_kernel(cuda, op):
    @cuda.jit
    def k(ary, old, v):
        i = cuda.grid(1)
        if i < old.shape[0]:
            old[i] = op(ary, i % ary.shape[0], v)

    return k
