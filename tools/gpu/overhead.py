"""Host overhead probe on the GPU: numba dispatch vs bound launches vs torch (issue #6 notes)."""

import time

import numpy as np

import rocsample
from rocsample import graphs


def per_call(fn, n=2000):
    for _ in range(50):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


be = rocsample.use_backend("cuda")
cuda = be.cuda
s = be.runtime.new_stream()
st = be.stream(s)


@cuda.jit
def _k(a, n, v):
    i = cuda.grid(1)
    if i < n:
        a[i] = a[i] + v


a = cuda.to_device(np.zeros(1024, np.float32))
t_numba = per_call(lambda: _k[4, 256, s](a, 1024, np.float32(1)))
bound = be.bind(_k, 4, 256, st, a, 1024, np.float32(1))
a.copy_to_device(np.zeros(1024, np.float32))
for _ in range(10):
    bound()
s.synchronize()
ok = bool((a.copy_to_host() == 10).all())
t_bound = per_call(bound)
x = be.as_array(np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32), "x")
sp = rocsample.Sampler(1, 151936, "float32", stream=s)
t_samp = per_call(lambda: sp(x, temperature=0.0, seed=1, position=0, check=False), n=300)
t_chain = per_call(lambda: sp(x, temperature=0.8, top_k=50, top_p=0.9, min_p=0.05, seed=1, position=0,
                              check=False), n=100)
sp.prewarm()
with graphs.capture(s) as g:
    sp(x, temperature=0.8, top_k=50, top_p=0.9, min_p=0.05, seed=1, position=0, check=False)
t_replay = per_call(lambda: g.replay(s), n=500)
s.synchronize()
import torch  # noqa: E402

tx = torch.randn(1, 151936, device="cuda")
t_torch = per_call(lambda: torch.argmax(tx, dim=-1), n=2000)
print(f"bound launch correct: {ok}")
print(f"host us/call: numba dispatch {t_numba:.1f}, bound {t_bound:.1f}, Sampler greedy {t_samp:.1f}, "
      f"Sampler full chain {t_chain:.1f}, graph replay (full chain) {t_replay:.1f}, torch.argmax {t_torch:.1f}")
