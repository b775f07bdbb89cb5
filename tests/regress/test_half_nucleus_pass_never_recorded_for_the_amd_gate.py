"""Regression: no sim test launched the plain nucleus pass with float16 or bfloat16 logits, so
CI's AMD register test had nothing to compile.

What broke (CI on c6badf9, ``make test``'s last step): tests/regress/
test_fold_round_grew_the_nucleus_pass_on_amd.py holds the plain nucleus pass
(``hist._sample_nucleus_kernel``) of every logits type to its gfx1151 and gfx942 registers,
compiling the signatures that the sim run recorded (``ROCSAMPLE_RECORD_KERNELS``). The sim suite
ran half-precision top-p rows only through the pass's finishing form (rows of at most
``NUC_FINISH_VOCAB`` logits), so only the float32 plain pass was recorded and the test failed on
both targets. It had passed where it was written because it read a signature file recorded by
hand.

Half-precision rows now go through both forms here, on sim and on a GPU, against the reference;
the plain form's launches are the records that the AMD test compiles. Top-k-only rows do the same
for the pass's rank form (``_sample_rank_kernel``, ``_sample_rank_finish_kernel`` and the plain
pass over four best, ``_sample_rank4_kernel``), whose signatures the AMD gate compiles only where
a sim test launched them.
"""

from __future__ import annotations

import numpy as np
import pytest

from rocsample import sampling_router as router
from rocsample.kernels import sampling_fast as KF
from tests.kernels.test_sampling import compare
from tests.kernels.test_sampling_nucleus import (  # noqa: F401 (fixtures)
    _STRIDED,
    _call,
    _nucleus_on,
    shape,
)
from tests.regress.test_argmax_kernel_missing_from_the_kernel_record import _kernel_sigs


def _names(backend, launched):
    """The launched kernels' paths in their build namespaces (``f16.hist._sample_nucleus_kernel``),
    as the kernel recorder (tools/kernel_sigs.py) names them."""
    paths = _kernel_sigs()._paths
    where = {id(obj): path for ns in list(backend._kernel_cache.values())
             for path, obj in paths(ns)}
    return {where.get(id(k)) for k in launched}


@pytest.mark.parametrize("kind,geometry", [
    ("top_p", _STRIDED), ("top_p", None), ("top_k", _STRIDED), ("top_k", None),
    ("top_k4", _STRIDED)],   # (the finishing rank form always takes four: the top_k case)
    ids=["top_p-plain", "top_p-finishing", "top_k-plain", "top_k-finishing", "top_k4-plain"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_rows_through_both_forms_of_the_pass(backend, shape, rng, launches,  # noqa: F811
                                                             dtype, geometry, kind, monkeypatch):
    monkeypatch.setattr(router, "TILE_KMAX", 1)   # (top_k rows past the tile path)
    # (the plain rank pass over phase 1's four best with top_k4, over two with top_k: its
    # default for six rows is four)
    monkeypatch.setattr(router, "NUC_RANK_PLAIN_TOP2_ROWS", 0 if kind == "top_k4" else 1 << 30)
    rows, vocab = 6, shape["vocab"]
    f = (rng.normal(size=(rows, vocab)) * rng.uniform(0.5, 4, (rows, 1))).astype(np.float32)
    f[0, 5] = np.nan
    if dtype == "float16":
        x, kw = f.astype(np.float16), {}
    else:
        x, kw = (f.view(np.uint32) >> 16).astype(np.uint16), {"dtype": "bfloat16"}
    seed = rng.integers(0, 2**63, rows)
    params = dict(temperature=0.9, top_p=np.linspace(0.1, 0.98, rows).astype(np.float32))
    if kind != "top_p":
        params = dict(temperature=0.9, top_k=np.linspace(2, vocab - 1, rows).astype(np.int64))
    tok, lps, how = _call(backend, shape, x, lp=True, seed=seed, position=3, geometry=geometry,
                          dtype=dtype, **params)
    compare(backend, x, tok, lps, seed=seed, position=3, **params, **kw)
    assert (how == KF.NUC_W1).any()   # the pass decided rows itself
    t = "f16" if dtype == "float16" else "bf16"
    names = _names(backend, launches)
    form = {"top_p": "nucleus", "top_k": "rank", "top_k4": "rank4"}[kind]
    plain = f"{t}.hist._sample_{form}_kernel" in names
    finishing = f"{t}.hist._sample_{form}_finish_kernel" in names
    assert (plain, finishing) == ((True, False) if geometry else (False, True))
