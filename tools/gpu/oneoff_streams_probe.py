"""Where a one-off call's host time goes (issue #17): torch's legacy default stream against a
side stream, the same logits against a new address every call.

bench/test_host_overhead.py's one-off ``sample`` (the chain at 64 x 151936) took 17.5-29.0 us on
the legacy default stream and 25.8-37.4 on a side stream in the eleventh session's run on
ae301d7, where ``argmax`` took the same on both (15.9-24.9); on 47c7b30 the two streams' figures
were equal (19.1-32.1). This times the four cases per (stream, op) as the benchmark does (a spin
kernel queued ahead of each call, 200 timed rounds, the median; "new": 24 buffers in turn, three
times the graphs a bound call keeps, so every call re-points a graph), PASSES times over in one
process, on the legacy default stream with one-off outputs from blocks made for
``_POOL_CALLS`` calls and from each call's own (``_POOL_CALLS = 1``), printing where the served
calls' time went (rocsample._fastcall.timing); then profiles ``sample``'s calls (cProfile, each
call alone: the functions by own time a call, in us) on both streams, same and new.

    python3 tools/gpu/oneoff_streams_probe.py [PASSES]     # about 10 s a pass with a warm cache
"""

from __future__ import annotations

import cProfile
import itertools
import pstats
import statistics
import sys
import time

from host_calib import c_parts as parts  # (tools/gpu: the script's folder)
from host_calib import c_timing
from sampler_inputs import CHAIN

_timing = c_timing()

ROWS, VOCAB = 64, 151936
ROUNDS, WARM, BUSY_CYCLES = 200, 20, 200_000  # as bench/test_host_overhead.py
BUFFERS = {"same": 1, "fresh": 8, "new": 24}


def make_fn(torch, rocsample, op, kind):
    seed = torch.arange(ROWS, dtype=torch.int64, device="cuda")
    pos = torch.zeros(ROWS, dtype=torch.int64, device="cuda")
    n = BUFFERS[kind]
    bufs = [torch.randn(ROWS, 2, VOCAB, device="cuda") for _ in range(n)]
    views = itertools.cycle([bufs[i % n][:, -1, :] for i in range(4 * ROUNDS)])
    x = bufs[0][:, -1, :]

    def fn():
        v = x if kind == "same" else next(views)
        if op == "argmax":
            return rocsample.argmax(v, check=False)
        return rocsample.sample(v, seed=seed, position=pos, check=False, **CHAIN)
    return fn


def timed(torch, fn, prof=None):
    for _ in range(3 + WARM):
        fn()
    torch.cuda.synchronize()
    times = []
    if _timing is not None and prof is None:
        _timing(True)
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        torch.cuda._sleep(BUSY_CYCLES)
        if prof is not None:
            prof.enable()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if prof is not None:
            prof.disable()
    torch.cuda.synchronize()
    global last_parts
    last_parts = parts(_timing(False)) if _timing is not None and prof is None else ""
    return statistics.median(times) * 1e6


last_parts = ""


def on(torch, stream, body):
    if stream == "side":
        with torch.cuda.stream(torch.cuda.Stream()):
            return body()
    return body()


def main() -> int:
    import torch

    import rocsample

    try:
        from rocsample._fastcall import served
    except ImportError:
        served = None
    passes = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    rocsample.use_backend("cuda")
    t_start = time.perf_counter()
    from rocsample import sampling as S

    pool = S._POOL_CALLS
    for p in range(1, passes + 1):
        for stream in ("default", "side"):
            for op in ("sample", "argmax"):
                for kind in ("same", "fresh", "new"):
                    # one-off outputs from blocks made for 16 calls, or each call's own (1)
                    for S._POOL_CALLS in ((pool, 1) if stream == "default" else (pool,)):
                        S._TORCH_PLANS.clear()  # (a new plan: the last case's blocks gone)
                        n0 = served() if served else 0
                        us = on(torch, stream, lambda o=op, k=kind: timed(
                            torch, make_fn(torch, rocsample, o, k)))
                        c = served() - n0 if served else None
                        print(f"pass {p} at {time.perf_counter() - t_start:5.1f} s  {op:6s} "
                              f"{kind:5s} {stream:7s} stream, outputs a block of "
                              f"{S._POOL_CALLS:2d}  {us:6.1f} us  C served {c}{last_parts}",
                              flush=True)
    S._POOL_CALLS = pool
    for stream in ("default", "side"):
        for kind in ("same", "new"):
            prof = cProfile.Profile()
            us = on(torch, stream, lambda k=kind, pr=prof: timed(
                torch, make_fn(torch, rocsample, "sample", k), pr))
            st = pstats.Stats(prof)
            rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:14]
            print(f"\n== profile: sample {kind} on the {stream} stream ({us:.1f} us a call profiled)")
            for (file, line, name), (_cc, nc, tt, ct, _callers) in rows:
                where = f"{file.rsplit('/', 2)[-1] if '/' in file else file}:{line}"
                print(f"  {tt / ROUNDS * 1e6:7.2f} us own {ct / ROUNDS * 1e6:7.2f} us cum "
                      f"{nc / ROUNDS:5.1f} calls  {name} ({where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
