"""The finishing form's exact pass, timed: bench/test_sampling.py's top_p095 inputs at 256 x
32000 (seeds 0.., position 0), graph-timed with top_p 0.95 on every row, then with one row's
top_p at the mass before its phase-1 winner (row 255 at 256 rows: the target within a few units
of that mass, inside any bound, so the row's last block sums the exact masses), and the nucleus
pass's decision for that row (HS_NUC). The difference of the two figures is the exact pass's cost on the critical
path. Usage: python tools/gpu/straddle_time.py [rows vocab]"""
import sys

import numpy as np

import rocsample
import rocsample.sampling as rs
from bench.common import time_calls
from bench.test_sampling import _host_logits
from rocsample.backends import get_backend
from rocsample.kernels import sampling_fast as KF
from rocsample.reference import philox
from rocsample.reference import sampling as ref

rows, vocab = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (256, 32000)
be = get_backend()
s = be.runtime.new_stream()
st = be.stream(s)
lg = _host_logits(rows, vocab)
x = be.as_array(lg, "logits", st)
seed = be.as_array(np.arange(rows, dtype=np.int64), "seed", st)
pos = be.as_array(np.zeros(rows, np.int64), "position", st)
plan = rocsample.Sampler(rows, vocab, "float32", stream=s)
names = {getattr(KF, n): n for n in dir(KF) if n.startswith("NUC_")}
# row r's phase-1 winner (the exact Gumbel scores' best) and the exact mass before it (the last
# row whose winner is not its largest logit)
idx = np.arange(vocab, dtype=np.int64)
for r in range(rows - 1, -1, -1):
    g = philox.token_gumbel(np.uint64(r), np.uint64(0), idx).astype(np.float32)
    w1 = int(np.argsort(-(lg[r] + g), kind="stable")[0])
    xr = lg[r].astype(np.float64)
    m, _ = ref.mass_units(xr, xr.max())
    before = int(m[(xr > xr[w1]) | ((xr == xr[w1]) & (idx < w1))].sum())
    if before:
        break
for name, pr in (("top_p 0.95", np.float32(0.95)),
                 ("row at its straddle", np.float32(before / int(m.sum())))):
    p = np.full(rows, 0.95, np.float32)
    p[r] = pr

    def call(p=p):
        plan(x, seed=seed, position=pos, check=False, top_p=p, temperature=1.0)

    call()
    be.synchronize(s)
    buf = rs._pool(be).request(plan.stream, plan.plan.scratch_bytes, rs.PURPOSE)
    how = be.to_host(plan.plan.views(buf)["si"])[:, KF.HS_NUC]
    print(f"{name}: row {r} top_p {float(pr):.9f} decided {names.get(int(how[r]), int(how[r]))};"
          f" rows left {int((how == KF.NUC_NONE).sum())}")
    print("GRAPH", rows, vocab, name, "gpu_us=", time_calls(be, call, s).info()["gpu_us"],
          flush=True)
