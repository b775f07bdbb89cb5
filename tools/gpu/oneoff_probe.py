"""Where a one-off torch call's output allocation and the default stream's chain go (host us).

Prints, on the real cuda backend and torch, per_call figures (tools/gpu/host_calib.py's method)
for: a Sampler chain call at 1 x 151936 and 64 x 151936 on torch's default stream and on a side
stream (bench/test_host_overhead.py found chain 1 x 151936 on the default stream 3-5 us slower
than every other case, in two runs); and the parts of ``Sampler._outputs_for`` for a one-off
call's fresh torch outputs (the capture guard, torch.empty through interop.empty, the unbind),
with the handles they compare. About 20 s with a warm numba cache.
"""
from __future__ import annotations

import sys

import host_calib
import numpy as np
from host_calib import per_call


def main() -> int:
    import torch

    import rocsample
    from rocsample import sampling as S

    host_calib._sync = torch.cuda.synchronize
    rocsample.use_backend("cuda")
    be = S._backend()
    kw = dict(check=False, temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
    side = torch.cuda.Stream()
    for rows in (1, 64):
        x = torch.randn(rows, 151936, device="cuda")
        seed = torch.zeros(rows, dtype=torch.int64, device="cuda")
        pos = torch.zeros(rows, dtype=torch.int64, device="cuda")
        plan = rocsample.Sampler(rows, 151936, "float32")
        for name, ctx in (("default", torch.cuda.stream(torch.cuda.default_stream())),
                          ("side", torch.cuda.stream(side))):
            with ctx:
                for _ in range(3):
                    plan(x, seed=seed, position=pos, **kw)
                us = per_call(lambda p=plan, v=x, s=seed, q=pos: p(v, seed=s, position=q, **kw), 2000)
                print(f"{us:8.2f} us  Sampler chain {rows}x151936, {name} stream", flush=True)
    x = torch.randn(64, 151936, device="cuda")
    rocsample.argmax(x, check=False)
    rocsample.argmax(x, check=False)
    op = next(iter(S._TORCH_PLANS.values()))
    st = op.stream
    cur = S._io.current_stream(S._io.TORCH, st.device)
    print(f"one-off plan stream handle {st.handle}, torch current raw stream {cur}")
    T = S._io.TORCH
    parts = {
        "_guard_alloc": lambda: S._guard_alloc(be, st, T, "outputs"),
        "check_can_allocate": lambda: be.check_can_allocate(st, "outputs"),
        "interop.empty((2, 64), int32)": lambda: S._io.empty(T, (2, 64), np.int32, st.device,
                                                             st.handle, cur),
        "torch.empty((2, 64), int32) directly": lambda: torch.empty(
            (2, 64), dtype=torch.int32, device=torch.device("cuda", st.device)),
        "Sampler._outputs_for fresh": lambda: op._outputs_for(T, True, False, st),
        "rocsample.argmax one-off": lambda: rocsample.argmax(x, check=False),
    }
    for name, fn in parts.items():
        try:
            print(f"{per_call(fn, 2000):8.2f} us  {name}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"  failed  {name}: {type(e).__name__}: {e}")
    b = torch.empty((2, 64), dtype=torch.int32, device="cuda")
    print(f"{per_call(lambda: b.unbind(0), 2000):8.2f} us  unbind(0) of a (2, 64) block")
    return 0


if __name__ == "__main__":
    sys.exit(main())
