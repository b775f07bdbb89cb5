"""Compile every kernel the sim test run launched to PTX with numba-cuda's real compiler (no GPU).

The simulator executes kernels as Python, so a kernel numba cannot compile (an untypable
expression, a float64 literal promoting an expression, a missing device-function signature) still
passes the sim tests. CI has no GPU; this closes that gap. Input: the JSON that
``tools/kernel_sigs.py`` wrote during the sim run (``ROCSAMPLE_RECORD_KERNELS``, set by
``make test``). For each recorded (build namespace, kernel, argument types) it rebuilds the
namespace with the real ``numba.cuda`` and calls ``cuda.compile_ptx`` for compute capability 9.0
(NVVM and NVRTC come from the dev extra's ``cuda-toolkit`` wheels; no driver is needed).

Also checked on the compiled PTX, as the SPEC asks for the quantizers: the set_rows kernels that
quantize (``*quant*``) contain no fused multiply-add (ggml's reference rounds each product). And
two instruction choices of the sampling kernels' hot loops (rocsample/kernels/philox.py): no
kernel holds a non-flush-to-zero ``lg2.approx.f32`` (ptxas guards each with a denormal test and
two fix-ups), and the drawing variants of phase 1 (``partials(True...``) multiply Philox words
by ``mul.wide.u32`` (a 64-bit ``mul.lo`` of masked words left an add of zero a multiply) and
take a uniform's 23 bits by philox's ``shr.u32`` (``_k23_f32``: from the 64-bit word, two
instructions a token) with no 64-bit integer to float conversion (``I2F.U64``, the slow one);
phase 1's fast pass (``partials(True,LP,True...``) takes its rows' maximum by ``max.f32``.

Exit status 1 lists what failed; an empty or missing record is an error too (nothing was checked).
Usage: python tools/ptx_check.py SIGS.json [--jobs N]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor

CC = (9, 0)
NO_FMA = ("quant",)  # kernel names whose PTX must hold no fma (bit-exact ggml quantizers)
WIDE_MUL = ("partials(True",)  # kernel names whose Philox words multiply by mul.wide.u32
# kernel names whose masses are ex2.approx of one FFMA (amass): no expf range reduction, whose
# fma.rm.f32 marks it
NO_EXPF = ("_sample_nucleus",)
# phase 1's fast pass (partials(draw, lp, fast=True, ...)): its rows' maximum by max.f32 (one
# FMNMX; libdevice fmaxf), with no index
DRAW_FAST = re.compile(r"partials\(True,(?:True|False),True[,)]")


def ptx_rules(kernel: str, ptx: str) -> str | None:
    """What is wrong with a kernel's PTX by the rules above (None: nothing)."""
    if any(s in kernel for s in NO_FMA) and "fma." in ptx:
        return "fused multiply-add in a quantizer kernel's PTX"
    if "lg2.approx.f32" in ptx:
        return "lg2.approx.f32 without .ftz (a denormal guard on every approximate log)"
    if any(s in kernel for s in WIDE_MUL) and "mul.wide.u32" not in ptx:
        return "no mul.wide.u32 in a drawing kernel (Philox words multiplied as 64-bit values)"
    if any(s in kernel for s in WIDE_MUL) and "shr.u32 t, " not in ptx:
        return "no shr.u32 of a word's 23 bits in a drawing kernel (philox's _k23_f32)"
    if any(s in kernel for s in WIDE_MUL) and "cvt.rn.f32.u64" in ptx:
        return "a 64-bit integer to float32 conversion in a drawing kernel"
    if DRAW_FAST.search(kernel) and "max.f32" not in ptx:
        return "no max.f32 in a fast pass (its rows' maximum by compares)"
    if any(s in kernel for s in NO_EXPF) and "fma.rm.f32" in ptx:
        return "expf's range reduction (fma.rm.f32) in a nucleus pass (amass not by ex2.approx)"
    return None


def _types():
    from numba.cuda import types

    return types


def _signature(args):
    types = _types()
    out = []
    for a in args:
        if "array" in a:
            dtype, ndim, layout = a["array"]
            out.append(types.Array(getattr(types, dtype), ndim, layout))
        else:
            out.append(getattr(types, a["scalar"]))
    return tuple(out)


_NS: dict[str, object] = {}


def _kernel(build: str, path: str):
    ns = _NS.get(build)
    if ns is None:
        from numba import cuda

        mod, qual = build.split(":")
        fn = importlib.import_module(mod)
        for part in qual.split("."):
            fn = getattr(fn, part)
        ns = _NS[build] = fn(cuda)
    obj = ns
    for part in path.split("."):
        if part.endswith(")"):
            name, args = part[:-1].split("(")
            obj = getattr(obj, name)(*[a == "True" for a in args.split(",") if a])
        else:
            obj = getattr(obj, part)
    return obj


def _check(rec) -> tuple[str, str | None, float]:
    from numba import cuda

    sig = ", ".join(a["scalar"] if "scalar" in a else "{}[{}d{}]".format(*a["array"])
                    for a in rec["args"])
    label = f"{rec['build'].split(':')[0].rsplit('.', 1)[-1]}:{rec['kernel']}({sig})"
    t0 = time.perf_counter()
    try:
        k = _kernel(rec["build"], rec["kernel"])
        ptx, _ = cuda.compile_ptx(k.py_func, _signature(rec["args"]), cc=CC)
    except Exception as e:  # noqa: BLE001 - every failure is reported, with its type
        return label, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", 0.0
    why = ptx_rules(rec["kernel"], ptx)
    if why is not None:
        return label, why, 0.0
    if ".entry" not in ptx:
        return label, "no kernel entry in the PTX", 0.0
    return label, None, time.perf_counter() - t0


class _NoDevice:
    compute_capability = CC


def _init() -> None:
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    os.environ.setdefault("ROCSAMPLE_JIT_CACHE", "0")
    # device functions ask the current device for its compute capability while they compile;
    # there is no device here, and compile_ptx is told the target (CC) anyway
    import numba.cuda.dispatcher as dispatcher

    dispatcher.get_current_device = lambda: _NoDevice()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sigs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        print("ptx_check: run without NUMBA_ENABLE_CUDASIM (it needs the real compiler)")
        return 2
    try:
        recs = json.load(open(a.sigs))
    except (OSError, ValueError) as e:
        print(f"ptx_check: no kernel record to check ({e}); run the sim tests with "
              "ROCSAMPLE_RECORD_KERNELS first")
        return 1
    if not recs:
        print("ptx_check: the kernel record is empty: the sim run launched nothing")
        return 1
    _init()
    t0 = time.perf_counter()
    failed = []
    with ProcessPoolExecutor(max_workers=max(1, a.jobs), initializer=_init) as ex:
        for i, (label, err, dt) in enumerate(ex.map(_check, recs), 1):
            mark = "FAIL" if err else "ok"
            print(f"[{i}/{len(recs)}] {mark} {label}" + (f": {err}" if err else f" ({dt:.1f} s)"),
                  flush=True)
            if err:
                failed.append((label, err))
    print(f"ptx_check: {len(recs) - len(failed)} of {len(recs)} kernel signatures compiled for "
          f"sm_{CC[0]}{CC[1]} in {time.perf_counter() - t0:.0f} s")
    for label, err in failed:
        print(f"FAILED {label}: {err}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
