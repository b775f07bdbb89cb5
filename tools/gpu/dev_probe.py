"""Where per-row device parameters spend their time beside host scalars (issue #13's 1.2x).

Graph-timed (bench/common.py's method) chain_dev, the chain's values as per-row device arrays,
against the chain itself, with the device route altered in this process only (timing variants:
every row of the batch is a tile row, so each variant's launches still finish every row):
  base            the route as it is
  nohist          without the histogram and select launches (what those two cost the call)
  noselect        without the select launch (the lane of one kernel: what merging the two
                  passes into one launch could give; the twentieth session built that launch,
                  tools/gpu/one_launch.patch, and it was slower: docs/PERF_NOTES.md)
  strided         those two at the row-strided grid (splits_fin x rows_fin)
  splits          phase 1's drawing variant at the plan's splits instead of splits_draw
  nodraw          phase 1's non-drawing variant (what the drawing variant costs)
  nodraw_nohist   both (about the chain's launches)
  dfin512         the tile finalize at blocks of 512 threads (1024 on the H200: 64 registers a
                  thread, a whole SM's register file, so it waits for every block of the
                  histogram lane on an SM to leave it)
  serial          one lane: phase 1, the tile finalize, then the histogram and select passes
and of the chain itself (host scalars): fin512 / fin256, the tile finalize's block (1024 on the
H200); s16 / s24, the plan at 16 / 24 splits (Sampler(_splits=...)).
--carveout P: every kernel the Sampler binds gets CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
P (percent of the unified L1 as shared memory; kernels of different carveouts cannot share an SM).
Usage: python3 tools/gpu/dev_probe.py [--shapes 1x151936,64x151936] [--variants a,b] [--carveout P]
Prints "GRAPH <variant> <shape> gpu_us=N" lines (steps.sh graph_lines reads them).
"""
import dataclasses
import sys

from sampler_inputs import CHAIN, device_inputs, device_params, logits, shapes_arg

import rocsample
from bench.common import time_calls
from rocsample import sampling_router as R
from rocsample.backends import get_backend

VARIANTS = {"base": {}, "nohist": dict(hist=False, select=False), "noselect": {}, "strided": dict(strided=True),
            "splits": {}, "nodraw": dict(draw=False),
            "nodraw_nohist": dict(draw=False, hist=False, select=False),
            "fin512": {}, "fin256": {}, "s16": {}, "s24": {}, "dfin512": {}, "serial": {}}
HOST = ("fin512", "fin256", "s16", "s24")  # variants of the chain with host scalars
SHAPES = shapes_arg([(1, 151936), (64, 151936)])
names = list(VARIANTS)
if "--variants" in sys.argv:
    names = sys.argv[sys.argv.index("--variants") + 1].split(",")
orig, orig_after, orig_launches = R.route, R.after, R.launches


def kname(k):
    return getattr(getattr(k, "py_func", k), "__name__", str(k))


if "--carveout" in sys.argv:
    from rocsample.backends import cuda as _cv
    carve = int(sys.argv[sys.argv.index("--carveout") + 1])
    _kf = _cv.Vendor.kernel_function

    def kernel_function(self, compiled, _kf=_kf):
        f = _kf(self, compiled)
        a = self.driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        err = self.driver.cuFuncSetAttribute(f, a, carve)[0]
        if int(err) != 0:  # numba-cuda's handle may be a CUkernel (cuda.core's CUlibrary)
            err2 = self.driver.cuKernelSetAttribute(
                a, carve, self.driver.CUkernel(int(f)), 0)[0]
            print(f"carveout: cuFuncSetAttribute {err!r}, cuKernelSetAttribute {err2!r}",
                  file=sys.stderr, flush=True)
            assert int(err2) == 0, err2
        return f
    _cv.Vendor.kernel_function = kernel_function
be = get_backend()
for rows, vocab in SHAPES:
    s = be.runtime.new_stream()
    x, seed, pos = device_inputs(be, be.stream(s), logits(rows, vocab))
    dev = device_params(be, be.stream(s), rows)
    want = None  # the chain's tokens (the first call below), which every variant must draw
    for name in ["chain"] + names:
        change = VARIANTS.get(name, {})
        R.route = (lambda plan, host, order="llama", change=change: dataclasses.replace(
            orig(plan, host, order), **change) if host.top_k is None else orig(plan, host, order))
        sp = rocsample.Sampler(rows, vocab, "float32", stream=s,
                               _splits=int(name[1:]) if name in ("s16", "s24") else None)
        if name.startswith(("fin", "dfin")):
            sp.plan.fast_final_block = int(name.split("fin")[1])
        R.after = (lambda r, a: None) if name == "serial" else orig_after
        R.launches = orig_launches
        if name == "noselect":  # the histogram kernel as it is, the select pass dropped
            R.launches = lambda plan, kn, r, o: [
                L for L in orig_launches(plan, kn, r, o) if "select" not in kname(L[0])]
            R.after = lambda r, a: orig_after(r, a)[:-1]
        if name == "splits":
            sp.plan.splits_draw, sp.plan.chunk_draw = sp.plan.splits, sp.plan.chunk
        kw = CHAIN if name == "chain" or name in HOST else dev

        def call(sp=sp, kw=kw, x=x, seed=seed, pos=pos):
            return sp(x, seed=seed, position=pos, check=False, **kw)
        got = be.to_host(call()[0], be.stream(s))  # (tokens, status) with check=False
        if want is None:
            want = got
        same = bool((got == want).all())
        t = time_calls(be, call, s)
        print(f"GRAPH {name} {rows}x{vocab} gpu_us={t.info()['gpu_us']:.3f} same_tokens={same} "
              f"splits={sp.plan.splits} draw={sp.plan.splits_draw} fin={sp.plan.splits_fin}x"
              f"{sp.plan.rows_fin}", flush=True)
    R.route, R.after, R.launches = orig, orig_after, orig_launches
