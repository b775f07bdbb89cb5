"""Does a call on torch's legacy default stream get slower as the process holds more streams?

bench/test_host_overhead.py found `Sampler.__call__` on the legacy default stream 3-14 us slower
than on a side stream (the chain most, greedy at one row least), in three runs, while
tools/gpu/oneoff_probe.py (a fresh process with few streams) found no difference. A launch into
the legacy stream is ordered after every *blocking* stream's work on the context, and the
benchmark session has made many (numba's `cuda.stream()` makes blocking streams; each case's
fixture makes one). This times, in batches (host_calib.py's method), the chain and greedy at
1 x 151936 and the chain at 64 x 151936 on the legacy stream and on a torch side stream, after
256 extra non-blocking driver streams exist, then after 16, 64 and 256 extra blocking numba
streams as well (each stream with one tiny kernel run on it), so the two hypotheses part.

    cd tools/gpu && python3 legacy_probe.py     # about 30 s with a warm numba cache
"""
from __future__ import annotations

import sys

import host_calib
from host_calib import per_call


def main() -> int:
    import torch

    import rocsample
    from rocsample import sampling as S

    host_calib._sync = torch.cuda.synchronize
    rocsample.use_backend("cuda")
    be = S._backend()
    chain = dict(check=False, temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
    greedy = dict(check=False, temperature=0.0)
    cases = []
    for rows, name, kw in ((1, "chain", chain), (1, "greedy", greedy), (64, "chain", chain)):
        x = torch.randn(rows, 151936, device="cuda")
        seed = torch.arange(rows, dtype=torch.int64, device="cuda")
        pos = torch.zeros(rows, dtype=torch.int64, device="cuda")
        plan = rocsample.Sampler(rows, 151936, "float32")
        cases.append((f"{name} {rows}x151936", plan, x, seed, pos, kw))
    side = torch.cuda.Stream()
    keep = []

    def report(label):
        for name, plan, x, seed, pos, kw in cases:
            out = []
            for sname, ctx in (("legacy", torch.cuda.stream(torch.cuda.default_stream())),
                               ("side", torch.cuda.stream(side))):
                with ctx:
                    for _ in range(3):
                        plan(x, seed=seed, position=pos, **kw)
                    us = per_call(lambda p=plan, v=x, s=seed, q=pos, k=kw: p(v, seed=s, position=q,
                                                                             **k), 1000)
                    out.append(f"{sname} {us:6.2f}")
            print(f"{label:>28}  {name:<18} " + "  ".join(out) + " us", flush=True)

    report("no extra streams")
    tiny = torch.zeros(4, device="cuda")

    def touch(handle):  # one tiny kernel on the stream, so the driver has seen work on it
        with torch.cuda.stream(torch.cuda.ExternalStream(handle)):
            tiny.add_(1)

    rt = be.runtime
    nonblocking = [int(rt.call("cuStreamCreate", 1)) for _ in range(256)]  # CU_STREAM_NON_BLOCKING
    for h in nonblocking:
        touch(h)
    torch.cuda.synchronize()
    report("+256 non-blocking streams")
    for total in (16, 64, 256):
        while len(keep) < total:
            s = rt.new_stream()  # numba's cuda.stream(): a blocking stream
            keep.append(s)
            touch(be.vendor.stream_handle(s))
        torch.cuda.synchronize()
        report(f"+{total} blocking streams")
    return 0


if __name__ == "__main__":
    sys.exit(main())
