"""Host cost per call of the paths bench/test_host_overhead.py times, without a GPU.

The real rocsample code (GpuBackend.bind's ctypes launches, DriverRuntime's ctypes stream
queries, the scratch pool, the binder, interop) runs over tests/fakegpu: a no-op C driver (a
launch costs a ctypes call and nothing more) and a Python stand-in for torch CUDA tensors. The
figures are rocsample's Python and ctypes work only: on a GPU host add the driver's own cost
per launch (cuLaunchKernel, about 2 us on the H200 host) and torch's for what torch does
(``torch.empty`` of a one-off call's outputs and its slices). A loaded machine inflates them:
compare figures of one run.

    python tools/host_harness.py                 # every case, median us per call
    python tools/host_harness.py -k sampler      # cases whose name contains "sampler"
    python tools/host_harness.py --profile NAME  # cProfile of one case (top 25 by tottime)
    python tools/host_harness.py --json out.json

Besides the time (this thread's CPU time, the median of 15 batches), each case reports the
Python bytecodes, Python calls and C calls (builtins, methods of C types, ctypes functions) one
call executes, counted by tracing: the same on a loaded machine as on an idle one (fake torch's
own work included: it is Python here, C in torch).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

CHAIN = dict(top_k=50, top_p=0.9, min_p=0.05, temperature=0.8)
VOCAB = 151936
_BUFFERS = 8  # "fresh": as many buffers as a bound call keeps graphs (binder._EXECS)
_NEW_BUFFERS = 24  # "new": every call an address the bound call's graphs do not hold


def cases(fg):
    """name -> (callable, launches per call, what the arguments are)."""
    import rocsample
    sr = importlib.import_module("rocsample.set_rows")

    torch = fg.torch
    out = {}

    def views(rows, vocab, n=_BUFFERS):
        bufs = [torch.empty((rows, 2, vocab)) for _ in range(n)]
        return itertools.cycle([bufs[i % n][:, -1, :] for i in range(4 * n)]), bufs

    for rows in (1, 64):
        for mode, params in (("chain", CHAIN), ("greedy", dict(temperature=0.0))):
            plan = rocsample.Sampler(rows, VOCAB, "float32")
            seed = torch.zeros(rows, dtype=torch.int64)
            pos = torch.zeros(rows, dtype=torch.int64)
            it, bufs = views(rows, VOCAB)
            x = bufs[0][:, -1, :]
            it_new, _ = views(rows, VOCAB, _NEW_BUFFERS)

            def fresh(plan=plan, it=it, seed=seed, pos=pos, params=params):
                return plan(next(it), seed=seed, position=pos, check=False, **params)

            def new(plan=plan, it=it_new, seed=seed, pos=pos, params=params):
                return plan(next(it), seed=seed, position=pos, check=False, **params)

            def same(plan=plan, x=x, seed=seed, pos=pos, params=params):
                return plan(x, seed=seed, position=pos, check=False, **params)

            # fresh views of two buffers in turn: a decode loop's logits (two allocator blocks)
            alt = itertools.cycle([bufs[i % 2][:, -1, :] for i in range(4 * _BUFFERS)])

            def two(plan=plan, it=alt, seed=seed, pos=pos, params=params):
                return plan(next(it), seed=seed, position=pos, check=False, **params)

            out[f"sampler {mode} fresh {rows}x{VOCAB}"] = fresh
            out[f"sampler {mode} new {rows}x{VOCAB}"] = new
            out[f"sampler {mode} fresh-2 {rows}x{VOCAB}"] = two
            out[f"sampler {mode} same {rows}x{VOCAB}"] = same

    seed = torch.zeros(64, dtype=torch.int64)
    pos = torch.zeros(64, dtype=torch.int64)
    it, bufs = views(64, VOCAB)
    x = bufs[0][:, -1, :]
    out["one-off sample fresh 64x151936"] = lambda: rocsample.sample(
        next(it), seed=seed, position=pos, check=False, **CHAIN)
    out["one-off sample same 64x151936"] = lambda: rocsample.sample(
        x, seed=seed, position=pos, check=False, **CHAIN)
    it_new, _ = views(64, VOCAB, _NEW_BUFFERS)
    out["one-off sample new 64x151936"] = lambda: rocsample.sample(
        next(it_new), seed=seed, position=pos, check=False, **CHAIN)
    out["one-off argmax fresh 64x151936"] = lambda: rocsample.argmax(next(it), check=False)
    out["one-off argmax new 64x151936"] = lambda: rocsample.argmax(next(it_new), check=False)
    out["one-off argmax same 64x151936"] = lambda: rocsample.argmax(x, check=False)

    idx = torch.zeros(1, dtype=torch.int64)
    idx._a[0] = 7
    for t in ("f16", "q8_0"):
        if t == "f16":
            kv = torch.zeros(_BUFFERS, 4096, 128, dtype=torch.float16)
        else:
            kv = torch.zeros(_BUFFERS, 4096, 128 // 32 * 34, dtype=torch.uint8)
        new = torch.zeros(_BUFFERS, 1, 128, dtype=torch.float32)
        lv = itertools.cycle([(kv[i % _BUFFERS], new[i % _BUFFERS]) for i in range(4 * _BUFFERS)])

        def fresh(lv=lv, t=t):
            d, s = next(lv)
            return sr.set_rows(d, s, idx, dst_type=t, check_bounds=False)

        d0, s0 = kv[0], new[0]
        out[f"set_rows {t} fresh 4096x128"] = fresh
        out[f"set_rows {t} same 4096x128"] = (
            lambda d0=d0, s0=s0, t=t: sr.set_rows(d0, s0, idx, dst_type=t, check_bounds=False))
    return out


def time_case(fn, n: int = 2000, batches: int = 15, clock=time.thread_time_ns) -> float:
    """Median over ``batches`` of the mean us per call of ``n // batches`` calls, by this
    thread's CPU time (a loaded machine's waits left out; its cache misses are not)."""
    for _ in range(50):
        fn()
    per = max(1, n // batches)
    res = []
    for _ in range(batches):
        t0 = clock()
        for _ in range(per):
            fn()
        res.append((clock() - t0) / per / 1e3)
    return statistics.median(res)


def count_work(fn, calls: int = 20) -> tuple[float, float, float]:
    """(Python bytecodes, Python function calls, C function calls) per call of ``fn``: a
    measure of the host work that a loaded machine does not blur (sys.settrace with opcode
    events, sys.setprofile for the calls)."""
    import sys as _sys

    n_op = n_py = n_c = 0

    def tracer(frame, event, arg):
        nonlocal n_op
        frame.f_trace_opcodes = True
        if event == "opcode":
            n_op += 1
        return tracer

    def profiler(frame, event, arg):
        nonlocal n_py, n_c
        if event == "call":
            n_py += 1
        elif event == "c_call":
            n_c += 1

    for _ in range(5):
        fn()
    _sys.settrace(tracer)
    try:
        for _ in range(calls):
            fn()
    finally:
        _sys.settrace(None)
    _sys.setprofile(profiler)
    try:
        for _ in range(calls):
            fn()
    finally:
        _sys.setprofile(None)
    return n_op / calls, n_py / calls, n_c / calls


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--profile", help="cProfile the one case whose name contains this")
    ap.add_argument("-n", type=int, default=3000, help="calls per case")
    ap.add_argument("--json", help="write {case: us} here")
    args = ap.parse_args(argv)
    from tests import fakegpu

    fg = fakegpu.install()
    cs = cases(fg)
    if args.profile:
        import cProfile
        import pstats

        name = next(k for k in cs if args.profile in k)
        fn = cs[name]
        for _ in range(50):
            fn()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(args.n):
            fn()
        pr.disable()
        print(name)
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
        return 0
    res = {}
    for name, fn in cs.items():
        if args.k not in name:
            continue
        for _ in range(5):  # the first call is checked, the second binds
            fn()
        c0 = {k: fg.count(k) for k in ("launch", "graph", "setparams", "query", "logged")}
        for _ in range(10):
            fn()
        per = {k: (fg.count(k) - v) / 10 for k, v in c0.items()}
        us = time_case(fn, args.n)
        ops, py, c = count_work(fn)
        res[name] = dict(us=round(us, 2), kernels=per["logged"], launches=per["launch"],
                         graph_launches=per["graph"], node_updates=per["setparams"],
                         capture_queries=per["query"], bytecodes=ops, py_calls=py, c_calls=c)
        print(f"{us:7.2f} us  {name:34s} {ops:5.0f} bytecodes {py:4.0f} py-calls {c:4.0f} c-calls"
              f"  kernels={per['logged']:g} launches={per['launch']:g} graphs={per['graph']:g}"
              f" node-updates={per['setparams']:g} queries={per['query']:g}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
