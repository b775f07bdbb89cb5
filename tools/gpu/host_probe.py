"""What a driver graph launch costs against the kernel launches it replaces, and where the host
time of a one-off call goes, on the GPU machine (issue #17: Sampler <= 10 us, one-off <= 30 us).

1. Per call (batches of 100, the queue drained between batches, as tools/gpu/host_calib.py):
   each bound launch of a warmed Sampler's full chain (ctypes cuLaunchKernel), the same launches
   captured into one driver graph and launched by one ctypes cuGraphLaunch, the
   cuGraphExecKernelNodeSetParams that would re-point one node for a fresh logits tensor, and
   the same for greedy's single launch.
2. cProfile of a one-off ``rocsample.sample`` / ``rocsample.argmax`` and of ``Sampler.__call__``
   with a fresh torch view every call (top entries by own time).

Writes $OUT/host-probe.json and prints a line per figure. About 20 s with a warm numba cache.
"""

# ruff: noqa: B023  (every lambda is called at once, inside its loop iteration)
from __future__ import annotations

import cProfile
import ctypes
import io
import pstats
import sys
import time

import host_calib
from host_calib import per_call  # (batches of 100, the queue drained between them)


def _bound(torch, rocsample, x, kw):
    """A Sampler at 64 x 151936 warmed with ``kw`` (bound on its second call) and its bound call."""
    plan = rocsample.Sampler(64, 151936, "float32")
    for _ in range(3):
        plan(x, **kw)
    torch.cuda.synchronize()
    (hit,) = plan._binder._table.values()
    return plan, hit


class KNP(ctypes.Structure):  # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", ctypes.c_void_p), ("gx", ctypes.c_uint), ("gy", ctypes.c_uint),
                ("gz", ctypes.c_uint), ("bx", ctypes.c_uint), ("by", ctypes.c_uint),
                ("bz", ctypes.c_uint), ("shmem", ctypes.c_uint),
                ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


def graph_of(cu, native, handle):
    """Capture the bound launches ``native`` (on stream ``handle``) into an instantiated graph:
    (exec, [(node, params)])."""
    c = ctypes.c_void_p
    assert cu.cuStreamBeginCapture_v2(c(handle), ctypes.c_int(2)) == 0  # relaxed
    for fn, args, _sym in native:
        assert fn(*args) == 0
    graph = c()
    assert cu.cuStreamEndCapture(c(handle), ctypes.byref(graph)) == 0
    ex = c()
    assert cu.cuGraphInstantiateWithFlags(ctypes.byref(ex), graph, ctypes.c_ulonglong(0)) == 0
    n = ctypes.c_size_t(0)
    assert cu.cuGraphGetNodes(graph, None, ctypes.byref(n)) == 0
    nodes = (c * n.value)()
    assert cu.cuGraphGetNodes(graph, nodes, ctypes.byref(n)) == 0
    got = []
    for i in range(n.value):
        p = KNP()
        err = cu.cuGraphKernelNodeGetParams_v2(c(nodes[i]), ctypes.byref(p))
        got.append((c(nodes[i]), p, err))
    return ex, got


def _streams(torch, rocsample, out, gl, ex, native):
    """One cuGraphLaunch of the chain's graph on each kind of stream, and whether it waits for
    the GPU: launched right after 20 ms of torch.cuda._sleep queued on that stream."""
    be = rocsample.get_backend()
    numba_blocking = be.runtime.new_stream()  # numba's cuda.stream(): cuStreamCreate(0)
    kinds = {"legacy default (NULL)": None, "per-thread default (2)": 2,
             "numba stream (blocking)": int(be.stream(numba_blocking).handle),
             "torch side stream (non-blocking)": torch.cuda.current_stream().cuda_stream}
    fn, cargs, _ = native[0]
    for name, h in kinds.items():
        a = (ex, ctypes.c_void_p(h))
        out[f"cuGraphLaunch on the {name}"] = per_call(lambda: gl(*a))
        la = cargs[:8] + (ctypes.c_void_p(h),) + cargs[9:]
        out[f"cuLaunchKernel (chain phase 1) on the {name}"] = per_call(lambda: fn(*la))
        torch.cuda.synchronize()
        # the sleep on that stream (the legacy one for both default streams: they synchronise)
        ts = (torch.cuda.ExternalStream(h) if h not in (None, 2)
              else torch.cuda.default_stream())
        for what, call in (("cuGraphLaunch", lambda: gl(*a)), ("cuLaunchKernel", lambda: fn(*la))):
            with torch.cuda.stream(ts):
                torch.cuda._sleep(40_000_000)  # about 20 ms of GPU time
            t0 = time.perf_counter()
            call()
            out[f"{what} behind a queued sleep on the {name} (host us)"] = (
                (time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()


def profile(fn, n=3000, top=30):
    for _ in range(50):
        fn()
    pr = cProfile.Profile()
    pr.enable()
    for i in range(n):
        fn()
        if i % 100 == 99:
            host_calib._sync()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def start():
    """(torch, rocsample on cuda, libcuda, 64 x 151936 float32 logits) for the probes."""
    import torch

    import rocsample

    host_calib._sync = torch.cuda.synchronize
    rocsample.use_backend("cuda")
    return torch, rocsample, ctypes.CDLL("libcuda.so.1"), torch.randn(64, 151936, device="cuda")


def main() -> int:
    torch, rocsample, cu, x = start()
    out = {}
    big = [torch.randn(64, 2, 151936, device="cuda") for _ in range(8)]
    views = [b[:, -1, :] for b in big] * 4
    seed = torch.zeros(64, dtype=torch.int64, device="cuda")
    pos = torch.zeros(64, dtype=torch.int64, device="cuda")
    chain = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
    side = torch.cuda.Stream()  # (the legacy default stream cannot be captured)
    with torch.cuda.stream(side):
        return _body(torch, rocsample, cu, out, x, views, seed, pos, chain)


def _body(torch, rocsample, cu, out, x, views, seed, pos, chain):
    for label, params in (("chain", chain), ("greedy", dict(temperature=0.0))):
        kw = dict(seed=seed, position=pos, check=False, **params)
        plan, hit = _bound(torch, rocsample, x, kw)
        native = hit._native
        for i, (fn, args, _) in enumerate(native):
            out[f"{label}: bound launch {i} (ctypes cuLaunchKernel)"] = per_call(
                lambda fn=fn, args=args: fn(*args))
        out[f"{label}: all {len(native)} bound launches"] = per_call(
            lambda: [fn(*args) for fn, args, _ in native])
        torch.cuda.synchronize()
        handle = native[0][1][8].value  # the stream argument of the bound launch
        ex, nodes = graph_of(cu, native, handle)
        gl = cu.cuGraphLaunch
        gargs = (ex, ctypes.c_void_p(handle))
        out[f"{label}: one cuGraphLaunch of those launches"] = per_call(lambda: gl(*gargs))
        if label == "chain":
            _streams(torch, rocsample, out, gl, ex, native)
            gx = hit._gx  # the bound call's own graph (GpuBackend.node_graph: explicit nodes)
            out["chain: bound call made its node graph"] = gx is not None
            out["node_graph_error"] = str(rocsample.get_backend().vendor.node_graph_error)
            if gx is not None:
                for name, h in (("legacy default (NULL)", None), ("side stream", handle)):
                    a = (gx._exec, ctypes.c_void_p(h))
                    out[f"cuGraphLaunch of the explicit node graph on the {name}"] = per_call(
                        lambda: gl(*a))
                torch.cuda.synchronize()
            from rocsample.scratch import get_pool

            pool = get_pool(rocsample.get_backend())
            out["pool: what blocks making graphs now"] = str(
                pool._allocation_blocker(rocsample.get_backend().runtime, 0))
        sp = cu.cuGraphExecKernelNodeSetParams_v2
        for i, (node, p, err) in enumerate(nodes):
            out[f"{label}: node {i} GetParams error"] = err
            if err == 0:
                ref = ctypes.byref(p)
                out[f"{label}: cuGraphExecKernelNodeSetParams node {i}"] = per_call(
                    lambda node=node, ref=ref: sp(ex, node, ref))
                out[f"{label}: SetParams node {i} rc"] = sp(ex, node, ref)
        torch.cuda.synchronize()
        it = iter(views * 1000)
        out[f"{label}: Sampler.__call__ fresh view"] = per_call(lambda: plan(next(it), **kw))
        out[f"{label}: Sampler.__call__ same"] = per_call(lambda: plan(x, **kw))
        torch.cuda.synchronize()
        out[f"profile {label} Sampler fresh"] = profile(lambda: plan(next(it), **kw))
    with torch.cuda.stream(torch.cuda.default_stream()):  # a notebook's stream: the legacy one
        kw = dict(seed=seed, position=pos, check=False, **chain)
        plan, hit = _bound(torch, rocsample, x, kw)
        out["legacy stream: bound call made a node graph"] = hit._gx is not None
        out["legacy stream: Sampler.__call__ chain same"] = per_call(lambda: plan(x, **kw))
        torch.cuda.synchronize()
    out["torch.argmax"] = per_call(lambda: torch.argmax(x, dim=-1))
    out["torch.cuda.current_stream()"] = per_call(torch.cuda.current_stream)
    out["one-off argmax"] = per_call(lambda: rocsample.argmax(x, check=False))
    out["one-off sample chain"] = per_call(
        lambda: rocsample.sample(x, seed=seed, position=pos, check=False, **chain))
    out["profile one-off argmax"] = profile(lambda: rocsample.argmax(x, check=False))
    out["profile one-off sample"] = profile(
        lambda: rocsample.sample(x, seed=seed, position=pos, check=False, **chain))
    torch.cuda.synchronize()
    host_calib.report(out, "host-probe.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
