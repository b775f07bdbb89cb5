"""Regression (issue #17, the decode-loop benchmark): a warm-up ran past the loop's static cache.

What broke (H200, cd75d19): the eager warm-up of bench/test_decode_loop.py grew from 3 to 16
steps (it now counts the logits' addresses) while the static KV cache was still sized for 3, so
the last rounds wrote past the cache: a device-side assert in the model's cache update, which
poisons the CUDA context, and every later case of the process failed with
``CUDA_ERROR_ASSERT`` from an unrelated call. Now the cache is sized from the longest warm-up,
and a ``Loop`` counts the positions it writes and refuses, before any launch, a step that would
not fit (a named RuntimeError; the process stays usable). Needs torch with CUDA and transformers.
"""

from __future__ import annotations

import pytest


def test_the_cache_holds_every_step_a_measurement_runs():
    from bench import test_decode_loop as D

    eager = D.ADDRESS_STEPS + D.ROUNDS * D.STEPS
    graph = D.WARM_STEPS + 1 + D.ROUNDS * D.STEPS
    assert D.PROMPT + max(eager, graph) <= D.MAX_CACHE


@pytest.mark.gpu
def test_a_step_past_the_cache_is_refused_before_it_runs(backend):
    from bench import test_decode_loop as D

    torch, transformers = D._needs(backend)
    stream = torch.cuda.Stream()
    model = D._model(torch, transformers)
    loop = D.Loop(torch, transformers, model, 1, None, stream, cache_len=D.PROMPT + 2)
    with torch.cuda.stream(stream), torch.no_grad():
        loop.step()
        loop.step()
        with pytest.raises(RuntimeError, match="exceed the static cache"):
            loop.step()
    torch.cuda.synchronize()  # no device-side assert: the context is still usable
    assert int(torch.ones(3, device="cuda").sum()) == 3
