"""Does a launch with one packed parameter buffer cost less than one with ``void *params[]``?

numba packs an array argument as 5 + 2 * ndim kernel parameters, so the sampling kernels take
over a hundred; the driver copies ``kernelParams`` one parameter at a time. This times, for the
bound launches of a warmed Sampler (full chain and greedy, 64 x 151936, a torch side stream):
the bound ``cuLaunchKernel(..., kernelParams, NULL)``, the same launch with
``extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, END}``
(offsets from ``cuFuncGetParamInfo``, checked against natural alignment), and checks the tokens
of the buffer launches equal the normal ones. Prints a line per figure; $OUT/launch-probe.json.
"""

# ruff: noqa: B023  (every lambda is called at once, inside its loop iteration)
from __future__ import annotations

import ctypes
import json
import os
import sys

import host_probe
from host_calib import per_call


def layout(cu, func, cvals):
    """(offsets by natural alignment, the driver's offsets or None, total size)."""
    mine, off = [], 0
    for v in cvals:
        a = ctypes.alignment(type(v))
        off = -(-off // a) * a
        mine.append(off)
        off += ctypes.sizeof(v)
    theirs = []
    o, s = ctypes.c_size_t(), ctypes.c_size_t()
    for i in range(len(cvals)):
        err = cu.cuFuncGetParamInfo(func, ctypes.c_size_t(i), ctypes.byref(o), ctypes.byref(s))
        if err:
            theirs = f"error {err} at {i}"
            break
        theirs.append((o.value, s.value))
    return mine, theirs, off


def main() -> int:
    torch, rocsample, cu, x = host_probe.start()
    out = {}
    seed = torch.arange(64, dtype=torch.int64, device="cuda")
    pos = torch.zeros(64, dtype=torch.int64, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for label, params in (("chain", dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)),
                              ("greedy", dict(temperature=0.0)),
                              ("temperature", dict(temperature=0.8))):
            plan = rocsample.Sampler(64, 151936, "float32")
            kw = dict(seed=seed, position=pos, check=False, **params)
            for _ in range(3):
                tok = plan(x, **kw)[0]
            torch.cuda.synchronize()
            want = tok.clone()
            (hit,) = plan._binder._table.values()
            bufs = []
            for k, bl in enumerate(hit.keep):
                fn, cargs, sym, keep = bl.native
                cvals = keep[0]
                mine, theirs, size = layout(cu, cargs[0], cvals)
                same = isinstance(theirs, list) and [t[0] for t in theirs] == mine
                out[f"{label} launch {k}: {len(cvals)} params, {size} bytes, offsets agree"] = same
                if not same:
                    out[f"{label} launch {k}: driver layout"] = str(theirs)[:400]
                buf = (ctypes.c_char * max(size, 8))()
                for v, o in zip(cvals, mine):
                    ctypes.memmove(ctypes.addressof(buf) + o, ctypes.addressof(v), ctypes.sizeof(v))
                sz = ctypes.c_size_t(size)
                extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(sz), 0)
                eargs = cargs[:9] + (None, ctypes.c_void_p(ctypes.addressof(extra)))
                bufs.append((fn, eargs, buf, sz, extra))
                out[f"{label} launch {k}: kernelParams"] = per_call(lambda: fn(*cargs))
                out[f"{label} launch {k}: one buffer (extra)"] = per_call(lambda: fn(*eargs))
            torch.cuda.synchronize()
            tok.fill_(-7)
            torch.cuda.synchronize()
            for fn, eargs, *_ in bufs:
                rc = fn(*eargs)
                out.setdefault(f"{label}: buffer launch rc", rc)
            torch.cuda.synchronize()
            out[f"{label}: buffer launches' tokens equal"] = bool(torch.equal(tok, want))
            out[f"{label}: all launches, one buffer each"] = per_call(
                lambda: [fn(*eargs) for fn, eargs, *_ in bufs])
            torch.cuda.synchronize()
    for k, v in out.items():
        print(f"{v:8.2f} us  {k}" if isinstance(v, float) else f"{v!s:>8}     {k}")
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "launch-probe.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
