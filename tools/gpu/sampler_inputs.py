"""The inputs the H200 timing scripts (floor.py, kprofile.py, split_sweep.py) sample from.

``logits(rows, vocab)``: float32 normal logits; by default scaled by 3 and drawn from a
generator seeded by the shape (``rows * 7 + vocab``), so every script and run times the same
values at a shape. ``device_inputs(be, st, host)``: those logits, per-row seeds ``0 .. rows - 1``
and positions 0 as backend arrays on stream ``st``. ``CHAIN``: the full chain's values (the
benchmark's); ``device_params(be, st, rows)``: those values as per-row device arrays (the
per-row device parameter case, chain_dev); ``shapes_arg(default)``: the command line's ``--shapes
1x151936,64x151936`` as (rows, vocab) pairs, else ``default``. Imported as a sibling module (the scripts
run as ``python3 tools/gpu/<script>.py``, which puts this folder on ``sys.path``).
"""

from __future__ import annotations

import sys

import numpy as np

#: The full chain of bench/test_sampling.py (top_k 50, top_p 0.9, min_p 0.05, temperature 0.8).
CHAIN = dict(top_k=50, top_p=0.9, min_p=0.05, temperature=0.8)


def logits(rows: int, vocab: int, scale: float = 3.0, rng=None) -> np.ndarray:
    """A (rows, vocab) float32 array of N(0, scale**2) logits (``rng``: the shape's own)."""
    if rng is None:
        rng = np.random.default_rng(rows * 7 + vocab)
    return (rng.standard_normal((rows, vocab)) * scale).astype(np.float32)


def device_inputs(be, st, host: np.ndarray):
    """(logits, seed, position) on backend ``be``'s stream ``st`` for ``host`` logits."""
    rows = host.shape[0]
    x = be.as_array(host, "logits", st)
    seed = be.as_array(np.arange(rows, dtype=np.int64), "seed", st)
    pos = be.as_array(np.zeros(rows, np.int64), "position", st)
    return x, seed, pos


def device_params(be, st, rows: int, values: dict = CHAIN) -> dict:
    """``values`` as per-row device arrays on stream ``st`` (top_k int64, the others float32)."""
    return {k: be.as_array(np.full(rows, v, np.int64 if k == "top_k" else np.float32), k, st)
            for k, v in values.items()}


def shapes_arg(default: list) -> list:
    """``--shapes 1x151936,64x151936`` of the command line as [(rows, vocab)], else ``default``."""
    if "--shapes" not in sys.argv:
        return default
    return [tuple(int(v) for v in a.split("x"))
            for a in sys.argv[sys.argv.index("--shapes") + 1].split(",")]
