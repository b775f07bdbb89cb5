"""Where the host time of a repeated call goes on the GPU machine (issue #17 host path).

Times, on the real cuda backend with real torch tensors, the parts a warmed repeated call is made
of (docs/DESIGN.md, "The repeated call"), so the figures of bench/test_host_overhead.py can be
split into rocsample's Python, the driver and torch:

* one bound launch of a Sampler's bound call (the ctypes cuLaunchKernel, no Python around it but
  the call), the bound call run as one graph launch (what a repeated call makes) and launch by
  launch (what it makes under a capture), and the capture probe (ctypes cuStreamIsCapturing);
* the torch reads of one tensor (get_device, data_ptr, shape, stride, dtype), torch's current
  stream, torch.empty on the GPU and a slice (what a one-off call's outputs cost);
* a whole Sampler call, for reference.

Prints one line per part and writes $OUT/host-calib.json. About 10 s with a warm numba cache.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

_sync = None  # torch.cuda.synchronize, once torch is imported


def c_timing():
    """``rocsample._fastcall.timing`` (where the C path's served calls spend their host time),
    or None where the extension is not built."""
    try:
        from rocsample._fastcall import timing
    except ImportError:
        return None
    return timing


def c_parts(t) -> str:
    """``rocsample._fastcall.timing``'s counters as us a served call (empty: none served)."""
    if not t or not t["calls"]:
        return ""
    c = t["calls"] * 1e3
    return (f"  [C: total {t['total_ns'] / c:.1f}, probe {t['probe_ns'] / c:.1f}, outputs "
            f"{t['outputs_ns'] / c:.1f}, node updates {t['node_update_ns'] / c:.1f}, graph launch "
            f"{t['graph_launch_ns'] / c:.1f}, reads {t.get('reads_ns', 0) / c:.1f}, match "
            f"{t.get('match_ns', 0) / c:.1f} us a call]")


def per_call(fn, n=2000, batch=100):
    """Host us per call: the median of batches of ``batch`` calls, the device drained between
    batches (outside the timing: a full launch queue would make a launch wait for the GPU)."""
    for _ in range(50):
        fn()
    times = []
    for _ in range(max(1, n // batch)):
        _sync()
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t0) / batch * 1e6)
    times.sort()
    return times[len(times) // 2]


def main() -> int:
    global _sync
    import torch

    import rocsample

    _sync = torch.cuda.synchronize
    rocsample.use_backend("cuda")
    out = {}
    x = torch.randn(64, 151936, device="cuda")  # (the bench's shape: its bound launches)
    seed = torch.zeros(64, dtype=torch.int64, device="cuda")
    pos = torch.zeros(64, dtype=torch.int64, device="cuda")
    plan = rocsample.Sampler(64, 151936, "float32")
    kw = dict(seed=seed, position=pos, check=False, temperature=0.8, top_k=50, top_p=0.9,
              min_p=0.05)
    for _ in range(3):
        plan(x, **kw)
    torch.cuda.synchronize()
    (hit,) = plan._binder._table.values()
    native = hit._native
    out["native launches bound"] = native is not None
    if native is not None:
        fn, args, _ = native[0]
        out["one bound launch (ctypes cuLaunchKernel)"] = per_call(lambda: fn(*args), 2000)
        torch.cuda.synchronize()
        fn, args, _ = native[1]
        out["the other bound launch"] = per_call(lambda: fn(*args), 2000)
        torch.cuda.synchronize()
    out["capture probe (ctypes cuStreamIsCapturing)"] = per_call(hit._probe)
    out["BoundCall.ready (probe + pool check)"] = per_call(hit.ready)
    out["BoundCall.run (one graph launch of both kernels)"] = per_call(
        lambda: hit.run(hit.ptrs), 2000)
    torch.cuda.synchronize()
    out["BoundCall.run launch by launch (both launches, as under a capture)"] = per_call(
        lambda: hit.run(hit.ptrs, False), 2000)
    torch.cuda.synchronize()
    v = x[:, :]
    out["torch reads of one tensor"] = per_call(
        lambda: (v.get_device(), v.data_ptr(), v.shape, v.stride(), v.dtype))
    raw = torch._C._cuda_getCurrentRawStream
    out["torch current raw stream"] = per_call(lambda: raw(0))
    i32 = torch.int32
    dev = torch.device("cuda", 0)
    out["torch.empty(128, int32, cuda)"] = per_call(lambda: torch.empty(128, dtype=i32, device=dev))
    b = torch.empty(128, dtype=i32, device=dev)
    out["torch slice b[:64]"] = per_call(lambda: b[:64])
    b2 = torch.empty((2, 64), dtype=i32, device=dev)
    out["torch b2.unbind(0) (two views at once)"] = per_call(lambda: b2.unbind(0))
    out["Sampler.__call__ chain (same tensors)"] = per_call(lambda: plan(x, **kw), 2000)
    torch.cuda.synchronize()
    import itertools

    bufs = [torch.randn(64, 2, 151936, device="cuda") for _ in range(8)]
    for name, n in (("alternating: two buffers", 2), ("fresh: eight buffers", 8)):
        views = itertools.cycle([bufs[i % n][:, -1, :] for i in range(64)])
        out[f"Sampler.__call__ chain (fresh views, {name})"] = per_call(
            lambda views=views: plan(next(views), **kw), 2000)
        torch.cuda.synchronize()
    out["rocsample.sample one-off chain (same tensor)"] = per_call(
        lambda: rocsample.sample(x, **kw), 2000)
    torch.cuda.synchronize()
    out["rocsample.argmax one-off (same tensor)"] = per_call(
        lambda: rocsample.argmax(x, check=False), 2000)
    torch.cuda.synchronize()
    # the one-off's parts: its plan by torch stream, the bound call with fresh outputs, and the
    # outputs alone
    S = sys.modules["rocsample.sampling"]
    out["one-off plans by torch stream (entries)"] = len(S._TORCH_PLANS)
    op = next(iter(S._TORCH_PLANS.values()), None)
    try:
        _one_off_parts(out, op, S, x, seed, pos)
    except Exception as e:  # noqa: BLE001 - the other figures still print
        out["one-off parts failed"] = f"{type(e).__name__}: {e}"
    out["torch.argmax"] = per_call(lambda: torch.argmax(x, dim=-1), 2000)
    torch.cuda.synchronize()
    z = np.zeros(1)
    out["python loop of 100 float adds (CPU speed)"] = per_call(
        lambda: [z.size + 1.0 for _ in range(100)], 2000)
    report(out, "host-calib.json")
    return 0


def _one_off_parts(out, op, S, x, seed, pos):
    """A one-off call's parts: the bound call with fresh outputs, and the outputs alone."""
    if op is None:
        return
    a = (x, 0.8, 50, 0.9, 0.05, seed, pos, False, False, False, None, None, True)
    out["one-off fast path taken"] = op._torch_repeat(*a) is not None
    out["Sampler._torch_repeat fresh (a one-off's bound call and outputs)"] = per_call(
        lambda: op._torch_repeat(*a), 2000)
    _sync()
    out["Sampler._outputs_for fresh torch (tokens, status)"] = per_call(
        lambda: op._outputs_for(S._io.TORCH, True, False, op.stream), 2000)
    _sync()


def report(out: dict, name: str) -> None:
    """Print one line per figure (a text as a block) and write ``out`` to $OUT/``name``."""
    for k, v in out.items():
        if isinstance(v, str):
            print(f"==== {k}\n{v}")
        elif isinstance(v, float):
            print(f"{v:8.2f} us  {k}")
        else:
            print(f"{v!s:>8}     {k}")
    with open(os.path.join(os.environ.get("OUT", "/tmp"), name), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
