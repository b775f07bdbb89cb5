"""The inputs the H200 timing scripts (floor.py, kprofile.py, split_sweep.py) sample from.

``logits(rows, vocab)``: float32 normal logits; by default scaled by 3 and drawn from a
generator seeded by the shape (``rows * 7 + vocab``), so every script and run times the same
values at a shape. ``device_inputs(be, st, host)``: those logits, per-row seeds ``0 .. rows - 1``
and positions 0 as backend arrays on stream ``st``. Imported as a sibling module (the scripts
run as ``python3 tools/gpu/<script>.py``, which puts this folder on ``sys.path``).
"""

from __future__ import annotations

import numpy as np


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
