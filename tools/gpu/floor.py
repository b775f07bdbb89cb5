"""Greedy and temperature-only at the 12 benchmark shapes, graph-timed (bench/common.py's method):
this tree's rocsample, and torch.argmax / torch's softmax+multinomial as peers (``--peers``).

One JSON line per (impl, mode, shape) on stdout: gpu_us, x_floor (one read of the logits at the
measured copy bandwidth), splits. Run by tools/gpu/floor.sh, once per tree (working tree, .alt).
"""
import json
import sys

from sampler_inputs import device_inputs, logits

import rocsample
from bench.common import measure_copy_bandwidth, time_calls, time_torch, torch_cuda
from rocsample.backends import get_backend

SHAPES = ([(2, 96)] if "--smoke" in sys.argv  # a local check on the sim backend
          else [(r, v) for r in (1, 8, 64, 256) for v in (32000, 151936, 262144)])
MODES = {"greedy": dict(temperature=0.0), "temperature": dict(temperature=0.8)}
tree = sys.argv[1]
peers = "--peers" in sys.argv
be = get_backend()
bw = measure_copy_bandwidth(be)
torch = torch_cuda() if peers else None
for rows, vocab in SHAPES:
    floor_us = rows * vocab * 4 / bw * 1e6
    host = logits(rows, vocab)
    s = be.runtime.new_stream()
    x, seed, pos = device_inputs(be, be.stream(s), host)
    plan = rocsample.Sampler(rows, vocab, "float32", stream=s)
    for m, params in MODES.items():
        def call(plan=plan, x=x, seed=seed, pos=pos, params=params):
            plan(x, seed=seed, position=pos, check=False, **params)
        call()
        be.synchronize(s)
        t = time_calls(be, call, s)
        print(json.dumps(dict(impl=f"rocsample:{tree}", mode=m, shape=f"{rows}x{vocab}",
                              gpu_us=round(t.gpu_s * 1e6, 2), x_floor=round(t.gpu_s * 1e6 / floor_us, 2),
                              splits=plan.splits)), flush=True)
    if torch is not None:
        tx = torch.from_numpy(host).cuda()
        gen = torch.Generator(device="cuda")
        for m, fn in (("greedy", lambda tx=tx: torch.argmax(tx, dim=-1)),
                      ("temperature", lambda tx=tx, gen=gen: torch.multinomial(
                          torch.softmax(tx / 0.8, dim=-1), 1, generator=gen))):
            t = time_torch(torch, fn, generators=(gen,), capturable=m == "greedy")
            print(json.dumps(dict(impl="torch", mode=m, shape=f"{rows}x{vocab}",
                                  gpu_us=round(t.gpu_s * 1e6, 2), method=t.method,
                                  x_floor=round(t.gpu_s * 1e6 / floor_us, 2))), flush=True)
