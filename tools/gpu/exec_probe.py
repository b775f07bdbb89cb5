"""What a bound call's graph launch costs by how its executables are used (H200 host, batches).

For a Sampler's bound call (64 x 151936, chain: two kernel nodes; greedy: one) and an unchecked
set_rows (one node), per call: the same executable again; two address lists in turn, each with
an executable of its own (``execs`` >= 2: a different executable every call, nothing re-pointed);
the same two lists through one executable re-pointed every call (``execs`` = 1). Prints one line
per case and writes $OUT/exec-probe.json. About 20 s with a warm numba cache.
"""

from __future__ import annotations

import sys

import host_calib  # (a sibling module: tools/gpu is sys.path[0])


def main() -> int:
    import importlib

    import torch

    import rocsample
    from rocsample.binder import Binder

    sr = importlib.import_module("rocsample.set_rows")
    rocsample.use_backend("cuda")
    sync = torch.cuda.synchronize

    host_calib._sync = sync  # (its per_call drains the queue between batches with it)
    per_call = host_calib.per_call

    out = {}
    xa = torch.randn(64, 151936, device="cuda")
    xb = torch.randn(64, 151936, device="cuda")
    seed = torch.zeros(64, dtype=torch.int64, device="cuda")
    pos = torch.zeros(64, dtype=torch.int64, device="cuda")
    for mode, kw in (("chain", dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)),
                     ("greedy", dict(temperature=0.0))):
        for execs in (4, 1):
            plan = rocsample.Sampler(64, 151936, "float32")
            plan._binder = Binder(execs=execs)
            for _ in range(3):
                plan(xa, seed=seed, position=pos, check=False, **kw)
            sync()
            if execs == 4:
                out[f"{mode}: the same tensors (one executable)"] = per_call(
                    lambda plan=plan, kw=kw: plan(xa, seed=seed, position=pos, check=False, **kw))
            xs = [xa, xb]
            k = [0]

            def alt(plan=plan, xs=xs, k=k, kw=kw):
                k[0] ^= 1
                return plan(xs[k[0]], seed=seed, position=pos, check=False, **kw)
            how = ("two executables in turn" if execs > 1
                   else "one executable re-pointed every call")
            out[f"{mode}: two logits buffers in turn, {how}"] = per_call(alt)
            sync()
    kv = torch.zeros(8, 4096, 128, dtype=torch.float16, device="cuda")
    new = torch.randn(8, 1, 128, device="cuda")
    idx = torch.tensor([7], dtype=torch.int64, device="cuda")
    for execs in (64, 1):
        sr._binder = Binder(entries=16, execs=execs)
        views = [(kv[i], new[i]) for i in range(8)]
        for d, s in views * 2:
            sr.set_rows(d, s, idx, check_bounds=False)
        sync()
        if execs == 64:
            d0, s0 = views[0]
            out["set_rows f16: the same layer (one executable)"] = per_call(
                lambda d0=d0, s0=s0: sr.set_rows(d0, s0, idx, check_bounds=False))
        k = [0]

        def layer(views=views, k=k):
            k[0] = (k[0] + 1) % 8
            d, s = views[k[0]]
            return sr.set_rows(d, s, idx, check_bounds=False)
        how = "an executable each" if execs > 1 else "one executable re-pointed every call"
        out[f"set_rows f16: eight layers in turn, {how}"] = per_call(layer)
        sync()
    host_calib.report(out, "exec-probe.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
