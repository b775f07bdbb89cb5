"""Does numba-cuda's disk cache work for kernels built in a closure (our build(cuda) pattern)?"""
import sys
import time

t0 = time.perf_counter()
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402


def build(cuda, cache):
    @cuda.jit(device=True, cache=cache)
    def twice(v):
        return v * 2

    @cuda.jit(cache=cache)
    def k(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = twice(a[i]) + 1

    return k


k = build(cuda, cache=sys.argv[1] == "1")
a = cuda.to_device(np.arange(8, dtype=np.float32))
k[1, 32](a)
cuda.synchronize()
print(f"cache={sys.argv[1]} first launch after {time.perf_counter() - t0:.2f}s; ok={a.copy_to_host()[3] == 7}")
