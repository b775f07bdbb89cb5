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
