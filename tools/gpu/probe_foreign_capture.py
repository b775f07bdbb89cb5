"""On the lent H200: what foreign captures (torch.cuda.graph, CuPy) do with rocsample calls today.

Prints one line per case; never raises. Used to plan issue #17's capture rules.
Usage: python3 tools/gpu/probe_foreign_capture.py
"""
from __future__ import annotations

import traceback

import numpy as np


def case(name, fn):
    try:
        r = fn()
        print(f"[{name}] OK {r if r is not None else ''}", flush=True)
    except BaseException as e:  # noqa: BLE001
        tb = traceback.format_exc().strip().splitlines()
        print(f"[{name}] {type(e).__name__}: {str(e)[:300]}", flush=True)
        for line in tb[-6:]:
            print("    " + line[:200])


def main():
    import torch

    import rocsample
    from cuda.bindings import driver as drv

    be = rocsample.use_backend("cuda")
    print("torch", torch.__version__)

    def q(h):
        r = drv.cuStreamIsCapturing(h)
        return (int(r[0]), int(r[1]) if len(r) > 1 else None)

    def flags(h):
        r = drv.cuStreamGetFlags(h)
        return (int(r[0]), int(r[1]))

    s = torch.cuda.Stream()
    print("torch stream flags (err, flags):", flags(s.cuda_stream))

    def capture_queries(mode):
        g = torch.cuda.CUDAGraph()
        out = {}
        with torch.cuda.graph(g, stream=s, capture_error_mode=mode):
            out["legacy"] = q(0)
            out["capture_stream"] = q(s.cuda_stream)
            other = torch.cuda.Stream()
            out["other_torch_stream"] = q(other.cuda_stream)
            out["torch_is_capturing"] = torch.cuda.is_current_stream_capturing()
            x = torch.zeros(4, device="cuda")
            x += 1
        return out

    for mode in ("global", "thread_local", "relaxed"):
        case(f"queries inside torch.cuda.graph({mode})", lambda mode=mode: capture_queries(mode))

    def set_rows_in_torch_graph(mode, dtype):
        ring = torch.zeros((256, 128), dtype=torch.float16, device="cuda") if dtype == "f16" else \
            torch.zeros((256, 128 // 32 * 34), dtype=torch.uint8, device="cuda")
        src = torch.randn((1, 128), device="cuda")
        idx = torch.zeros((1,), dtype=torch.int64, device="cuda")
        with torch.cuda.stream(s):
            rocsample.set_rows(ring, src, idx, dst_type=dtype, stream=s, check_bounds=False)
            rocsample.set_rows(ring, src, idx, dst_type=dtype, stream=s, check_bounds=False)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s, capture_error_mode=mode):
            rocsample.set_rows(ring, src, idx, dst_type=dtype, stream=s, check_bounds=False)
            y = ring.float().sum() if dtype == "f16" else ring.sum()
        for i in range(5):
            idx.fill_(i * 60)
            src.normal_()
            g.replay()
        torch.cuda.synchronize()
        return f"replayed; sum {float(y)}"

    for mode in ("global", "thread_local"):
        for dt in ("f16", "q8_0"):
            case(f"set_rows {dt} in torch.cuda.graph({mode})",
                 lambda mode=mode, dt=dt: set_rows_in_torch_graph(mode, dt))

    def sampler_in_torch_graph(mode, fresh):
        plan = rocsample.Sampler(8, 32000, "float32", stream=s)
        x = torch.randn((8, 32000), device="cuda")
        seed = torch.arange(8, dtype=torch.int64, device="cuda")
        pos = torch.zeros(8, dtype=torch.int64, device="cuda")
        kw = dict(top_k=50, top_p=0.9, temperature=0.8, check=False)
        plan(x, seed=seed, position=pos, **kw)
        plan(x, seed=seed, position=pos, **kw)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s, capture_error_mode=mode):
            xx = x[:, :] if fresh else x
            res = plan(xx, seed=seed, position=pos, advance_position=True, **kw)
        g.replay()
        torch.cuda.synchronize()
        return type(res[0]).__name__

    for mode in ("global", "thread_local"):
        for fresh in (False, True):
            case(f"Sampler in torch.cuda.graph({mode}, fresh view={fresh})",
                 lambda mode=mode, fresh=fresh: sampler_in_torch_graph(mode, fresh))

    def unwarmed_in_torch_graph():
        x = torch.randn((3, 1000), device="cuda")
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g, stream=s):
                rocsample.sample(x, seed=0, position=0, check=False, stream=s)
        except Exception as e:  # noqa: BLE001
            return f"raised {type(e).__name__}: {str(e)[:200]}; after: torch works = {bool((torch.ones(2, device='cuda') + 1).sum() == 4)}"
        return "no error"

    case("unwarmed one-off sample in torch.cuda.graph", unwarmed_in_torch_graph)

    def cupy_case():
        import cupy as cp

        cs = cp.cuda.Stream(non_blocking=True)
        x = cp.random.standard_normal((4, 5000), dtype=cp.float32)
        try:
            rocsample.sample(x, seed=0, position=0, stream=cs)
            r1 = "cupy stream object accepted"
        except Exception as e:  # noqa: BLE001
            r1 = f"cupy stream object: {type(e).__name__}: {str(e)[:120]}"
        tok = rocsample.sample(x, seed=0, position=0, stream=cs.ptr)
        return r1 + f"; via .ptr -> {type(tok).__name__}"

    case("cupy", cupy_case)

    from numba.core import config
    print("numba pending dealloc count/ratio:", config.CUDA_DEALLOCS_COUNT, config.CUDA_DEALLOCS_RATIO)

    def fresh_tensor_host_cost():
        import time
        plan = rocsample.Sampler(64, 151936, "float32")
        big = torch.randn((64, 2, 151936), device="cuda")
        seed = torch.arange(64, dtype=torch.int64, device="cuda")
        pos = torch.zeros(64, dtype=torch.int64, device="cuda")
        kw = dict(top_k=50, top_p=0.9, temperature=0.8, min_p=0.05, check=False)
        same = big[:, -1, :]
        for _ in range(3):
            plan(same, seed=seed, position=pos, **kw)
        torch.cuda.synchronize()
        t = []
        for _ in range(50):
            t0 = time.perf_counter()
            plan(same, seed=seed, position=pos, **kw)
            t.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        u = []
        for _ in range(50):
            v = big[:, -1, :]
            t0 = time.perf_counter()
            plan(v, seed=seed, position=pos, **kw)
            u.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        return f"same object {np.median(t)*1e6:.1f} us, fresh view {np.median(u)*1e6:.1f} us"

    case("Sampler host cost 64x151936 chain", fresh_tensor_host_cost)


if __name__ == "__main__":
    main()
