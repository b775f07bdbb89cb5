"""Are bench/test_host_overhead.py's slow first cases the process's first calls? (issue #17)

The chain at 1 x 151936 on torch's legacy default stream, the host run's first Sampler cases,
missed 10 us in three runs (10.2-11.9 us) with every call served in C, while the same cases in
a second process took 5.9-6.8 (docs/PERF_NOTES.md, "Eleventh session"). This runs those cases
(fresh views of eight buffers, two buffers in turn, the same tensors; then the side stream's
fresh views) as the benchmark times them (a spin kernel queued ahead of each call, 200 timed
rounds, the median) PASSES times over in one process, each pass with a new Sampler as each
benchmark case makes, and prints one line per (pass, case): the host us and how many of the
timed calls rocsample._fastcall served. If only the first pass is slow, the excess belongs to
the process's first calls, not to the stream or the shape.

    python3 tools/gpu/first_cases_probe.py [PASSES]     # about 3 s a pass with a warm cache

Answered in the thirteenth session (docs/PERF_NOTES.md): neither the first calls nor the first
process; the host's CPU has slow phases of a few seconds in which every part of a call runs
about 1.5x slower, wherever they fall. The device scripts still run this first, as a warm-up
process (numba's cache, the driver) with the C path's parts printed.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time

from host_calib import c_parts as parts  # (tools/gpu: the script's folder)
from host_calib import c_timing
from sampler_inputs import CHAIN

_timing = c_timing()

ROWS, VOCAB = 1, 151936
BUFFERS, ROUNDS, WARM, BUSY_CYCLES = 8, 200, 20, 200_000  # as bench/test_host_overhead.py


def case(torch, rocsample, served, kind):
    """(host us median, calls served in C / timed, where the served calls' time went) of one
    case, made as the benchmark makes it."""
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    seed = torch.arange(ROWS, dtype=torch.int64, device="cuda")
    pos = torch.zeros(ROWS, dtype=torch.int64, device="cuda")
    bufs = [torch.randn(ROWS, 2, VOCAB, device="cuda") for _ in range(BUFFERS)]
    n = 2 if kind == "alternating" else BUFFERS
    views = itertools.cycle([bufs[i % n][:, -1, :] for i in range(4 * ROUNDS)])
    x = bufs[0][:, -1, :]

    def fn():
        v = x if kind == "same" else next(views)
        return plan(v, seed=seed, position=pos, check=False, **CHAIN)

    for _ in range(3 + WARM):
        fn()
    torch.cuda.synchronize()
    n0 = served() if served else 0
    if _timing is not None:
        _timing(True)
    times = []
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        torch.cuda._sleep(BUSY_CYCLES)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return (statistics.median(times) * 1e6, (served() - n0 if served else None),
            parts(_timing(False)) if _timing is not None else "")


def main() -> int:
    import torch

    import rocsample

    try:
        from rocsample._fastcall import served
    except ImportError:
        served = None
    passes = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rocsample.use_backend("cuda")
    t_start = time.perf_counter()
    for p in range(1, passes + 1):
        for stream, kind in (("default", "fresh"), ("default", "alternating"),
                             ("default", "same"), ("side", "fresh")):
            if stream == "side":
                with torch.cuda.stream(torch.cuda.Stream()):
                    us, c, t = case(torch, rocsample, served, kind)
            else:
                us, c, t = case(torch, rocsample, served, kind)
            print(f"pass {p} at {time.perf_counter() - t_start:5.1f} s  chain {ROWS}x{VOCAB} "
                  f"{kind:11s} {stream:7s} stream  {us:6.1f} us  C served {c}/{ROUNDS}{t}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
