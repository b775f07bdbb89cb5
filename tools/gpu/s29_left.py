"""bench/test_sampling.py's top_p095 call at one shape (its logits, seeds 0.., position 0, the
same draw every replay), graph-timed, and the nucleus pass's decision for each row (HS_NUC):
which rows the pass leaves to its one-block finish. Usage: python tools/gpu/s29_left.py 256 32000"""
import sys
from collections import Counter

import numpy as np

import rocsample
import rocsample.sampling as rs
from bench.common import time_calls
from bench.test_sampling import _host_logits
from rocsample.backends import get_backend
from rocsample.kernels import sampling_fast as KF

rows, vocab = int(sys.argv[1]), int(sys.argv[2])
be = get_backend()
s = be.runtime.new_stream()
st = be.stream(s)
x = be.as_array(_host_logits(rows, vocab), "logits", st)
seed = be.as_array(np.arange(rows, dtype=np.int64), "seed", st)
plan = rocsample.Sampler(rows, vocab, "float32", stream=s)
names = {getattr(KF, n): n for n in dir(KF) if n.startswith("NUC_")}
for p0 in (0, 1):   # the bench's position, then another draw
    pos = be.as_array(np.full(rows, p0, np.int64), "position", st)

    def call(pos=pos):
        plan(x, seed=seed, position=pos, check=False, top_p=0.95, temperature=1.0)

    call()
    be.synchronize(s)
    buf = rs._pool(be).request(plan.stream, plan.plan.scratch_bytes, rs.PURPOSE)
    how = be.to_host(plan.plan.views(buf)["si"])[:, KF.HS_NUC]
    print(f"position {p0}: decisions", dict(Counter(names.get(int(h), int(h)) for h in how)),
          "left rows:", [int(r) for r in np.flatnonzero(how == KF.NUC_NONE)][:10])
    print("GRAPH", rows, vocab, "position", p0, "gpu_us=", time_calls(be, call, s).info(),
          flush=True)
