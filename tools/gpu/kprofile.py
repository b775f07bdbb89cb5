"""Per-kernel device time of the Sampler's kernels (run under ncu, see kprofile.sh).

Prints one marker line per configuration; ncu's CSV lists the kernels in launch order.
Also prints graph-timed per-call figures (bench/common.py's method) for the same configs.
``--bench-inputs``: bench/test_sampling.py's logits at each shape (its own generator) instead of
sampler_inputs.logits' (the rows a route leaves differ between the two).
"""
import sys

from sampler_inputs import CHAIN, device_inputs, device_params, logits, shapes_arg

import rocsample
from bench.common import time_calls
from rocsample.backends import get_backend

MODES = {"greedy": dict(temperature=0.0), "temp": dict(temperature=0.8),
         "temp1": dict(temperature=1.0),   # (top_p alone's temperature: its phase 1's twin)
         "chain": CHAIN,
         "topk50": dict(top_k=50, temperature=0.8), "topp": dict(top_p=0.95, temperature=0.8),
         # bench/test_sampling.py's modes that miss issue #13's targets
         "topp_alone": dict(top_p=0.95), "minp": dict(min_p=0.05), "topk1000": dict(top_k=1000),
         "chain_dev": "dev",  # the chain's values as per-row device arrays
         # phase 1's logprob variants (the fused log-sum-exp tail)
         "temp_lp": dict(temperature=0.8, return_logprobs=True),
         "topp_alone_lp": dict(top_p=0.95, return_logprobs=True)}
SHAPES = shapes_arg([(1, 1024), (1, 32000), (1, 151936), (8, 32000), (64, 32000), (64, 151936),
                     (256, 262144)])  # --shapes 1x151936,64x151936
# --tile-min 32: the plan's least tokens a tile, doubled in splits of <= 2048 (an A/B of tpt)
if "--tile-min" in sys.argv:
    import rocsample.kernels.sampling_fast as _kf
    _kf.TILE_MIN = int(sys.argv[sys.argv.index("--tile-min") + 1])
be = get_backend()
if "--bench-inputs" in sys.argv:
    from bench.test_sampling import _host_logits as logits  # noqa: F811
graph = "--graph" in sys.argv
modes = [m for m in MODES if f"--{m}" in sys.argv] or ["greedy", "chain"]
for rows, vocab in SHAPES:
    s = be.runtime.new_stream()
    x, seed, pos = device_inputs(be, be.stream(s), logits(rows, vocab))
    plan = rocsample.Sampler(rows, vocab, "float32", stream=s)
    for m in modes:
        kw = MODES[m]
        if kw == "dev":
            kw = device_params(be, be.stream(s), rows)

        def call(plan=plan, x=x, seed=seed, pos=pos, kw=kw):
            plan(x, seed=seed, position=pos, check=False, **kw)
        call()
        call()
        be.synchronize(s)
        print(f"MARK {m} {rows}x{vocab} splits={plan.splits} tpt={plan.tpt}", flush=True)
        call()
        be.synchronize(s)
        if graph:
            t = time_calls(be, call, s)
            print(f"GRAPH {m} {rows}x{vocab} gpu_us={t.info()}", flush=True)
