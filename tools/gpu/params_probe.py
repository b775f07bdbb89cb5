"""What passing a bound launch's parameters as one packed buffer buys (host us), against
``kernelParams`` pointers: run once as is and once with ``ROCSAMPLE_LAUNCH_ARGS=pointers``.

Prints, on the real cuda backend with torch tensors (tools/gpu/host_calib.py's per_call method:
batches of calls, the device drained between batches), for the chain at 1 x 151936 and
64 x 151936 and greedy at 64 x 151936: a ``Sampler`` call with the same tensor, with a new
address every call (eight buffers: every call re-points the bound call's graph nodes), one node
update alone (``cuGraphExecKernelNodeSetParams``) and one direct ``cuLaunchKernel`` of phase 1
(what a call under a capture makes); then one-off ``sample`` / ``argmax`` with a new address
every call. The last line is a checksum of sampled tokens (the same in both modes).

    cd tools/gpu && python3 params_probe.py && ROCSAMPLE_LAUNCH_ARGS=pointers python3 params_probe.py
"""
from __future__ import annotations

import itertools
import os
import sys

import host_calib
from host_calib import per_call


def main() -> int:
    import torch

    import rocsample

    host_calib._sync = torch.cuda.synchronize
    rocsample.use_backend("cuda")
    mode = os.environ.get("ROCSAMPLE_LAUNCH_ARGS") or "buffer"
    chain = dict(check=False, temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
    greedy = dict(check=False, temperature=0.0)
    check = 0
    for rows, name, kw in ((1, "chain", chain), (64, "chain", chain), (64, "greedy", greedy)):
        bufs = [torch.randn(rows, 2, 151936, device="cuda") for _ in range(8)]
        views = itertools.cycle([bufs[i % 8][:, -1, :] for i in range(64)])
        x = bufs[0][:, -1, :]
        seed = torch.arange(rows, dtype=torch.int64, device="cuda")
        pos = torch.zeros(rows, dtype=torch.int64, device="cuda")
        plan = rocsample.Sampler(rows, 151936, "float32")
        for _ in range(3):
            tok = plan(x, seed=seed, position=pos, **kw)[0]
        check += int(tok.sum())
        same = per_call(lambda: plan(x, seed=seed, position=pos, **kw))
        fresh = per_call(lambda: plan(next(views), seed=seed, position=pos, **kw))
        hit = next(iter(plan._binder._table.values()))
        gx = hit._gx
        setp = per_call(lambda: gx.repoint(0)) if gx is not None else float("nan")
        launch0 = hit.launches[0]
        direct = per_call(launch0)
        print(f"[{mode}] {name} {rows}x151936: same {same:6.2f} us, new address every call "
              f"{fresh:6.2f} us, node update {setp:5.2f} us, cuLaunchKernel {direct:5.2f} us "
              f"({len(hit.launches)} launches)", flush=True)
    bufs = [torch.randn(64, 2, 151936, device="cuda") for _ in range(8)]
    views = itertools.cycle([bufs[i % 8][:, -1, :] for i in range(64)])
    seed = torch.arange(64, dtype=torch.int64, device="cuda")
    pos = torch.zeros(64, dtype=torch.int64, device="cuda")
    for op in ("sample", "argmax"):
        if op == "sample":
            def fn():
                return rocsample.sample(next(views), seed=seed, position=pos, **chain)
        else:
            def fn():
                return rocsample.argmax(next(views), check=False)
        print(f"[{mode}] one-off {op} 64x151936, new address every call: {per_call(fn):6.2f} us",
              flush=True)
    torch.cuda.synchronize()
    print(f"[{mode}] checksum {check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
