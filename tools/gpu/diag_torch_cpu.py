"""On the H200: which torch CPU argument makes rocsample.sample differ from the reference
(tests/regress/test_torch_cpu_tensors_backend_dependent.py::...[real] failed there once).
Prints one line per variant: the tokens of two calls in a row and the reference's."""
import numpy as np
import torch

import rocsample as rs
from rocsample.reference import sampling as R

rs.use_backend("cuda")
rng = np.random.default_rng(0)
lg = rng.standard_normal((3, 40)).astype(np.float32)
temps = np.array([0.7, 1.0, 0.0], np.float32)
pos0 = np.array([5, 2**63 - 1, 9], np.int64)
want = R.sample(lg, temperature=temps, top_k=[5, 0, 3], seed=np.arange(3), position=pos0)
names = ["x", "temperature", "top_k", "seed", "position", "out"]


def run(torch_args, advance):
    vals = dict(x=lg, temperature=temps, top_k=np.array([5, 0, 3]), seed=np.arange(3),
                position=pos0.copy(), out=np.full(3, -7, np.int32))
    args = {k: (torch.tensor(v) if k in torch_args else v) for k, v in vals.items()}
    res = rs.sample(args["x"], temperature=args["temperature"], top_k=args["top_k"],
                    seed=args["seed"], position=args["position"], advance_position=advance,
                    out=args["out"])
    return np.asarray(res.numpy() if hasattr(res, "numpy") else res).tolist()


print("want", want.tolist())
for adv in (False, True):
    for torch_args in [(), tuple(names)] + [(n,) for n in names]:
        print(f"advance={adv} torch={','.join(torch_args) or '-'}:",
              run(torch_args, adv), run(torch_args, adv), flush=True)

# Stress: one-off temperature-only samples of fresh shapes (the fuzz's flaky case: float16
# 2 x 1175, T=1, seed 0, position 0, device logits), first and repeated calls against the reference
from numba import cuda  # noqa: E402

bad = {"first": 0, "repeat": 0}
cases = 0
for it in range(240):
    rows = int(rng.integers(1, 5))
    vocab = int(rng.integers(64, 6000))
    dt = [np.float16, np.float32][it % 2]
    x = rng.standard_normal((rows, vocab)).astype(dt)
    ref = R.sample(x.astype(np.float32) if dt == np.float16 else x, temperature=1.0, seed=0,
                   position=0)
    d = cuda.to_device(x)
    for kind in ("first", "repeat"):
        got = np.asarray(rs.sample(d, temperature=1.0, seed=0, position=0).copy_to_host())
        cases += 1
        if not np.array_equal(got, ref):
            bad[kind] += 1
            if sum(bad.values()) <= 8:
                print(f"stress {it} {kind}: {rows}x{vocab} {np.dtype(dt).name}: got {got.tolist()} "
                      f"want {ref.tolist()}", flush=True)
print(f"stress: {cases} calls, mismatches {bad}", flush=True)
