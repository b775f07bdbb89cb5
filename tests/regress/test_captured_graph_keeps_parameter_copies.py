"""Regression: a captured graph could read parameter copies its Sampler had already freed.

What broke: a Sampler caches the device copies of host parameter values (``_param_cache``, at
most ``_PARAM_CACHE`` entries) and clears the cache when it is full. A graph captured with host
parameters keeps only the *addresses* of those copies, so after enough new host values the next
replay read freed memory (on a GPU; the emulated runtime cannot show the read, but it shows the
arrays going away). Graphs now hold every array a captured call launched with
(``rocsample.graphs.hold``) until they are released.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import rocsample as rs
import rocsample.sampling as S


def _ids(obj, out=None):
    """ids of every object inside nested lists / tuples (the launches a graph holds)."""
    out = set() if out is None else out
    out.add(id(obj))
    if isinstance(obj, (list, tuple)):
        for o in obj:
            _ids(o, out)
    return out


@pytest.mark.parametrize("how", ["Sampler.capture", "graphs.capture"])
def test_graph_keeps_the_parameter_copies_it_was_captured_with(backend, rng, new_stream, how,
                                                               monkeypatch):
    if not backend.is_device:
        pytest.skip("device parameter copies: a device backend (sim emulates one)")
    from rocsample import graphs

    monkeypatch.setattr(S, "_PARAM_CACHE", 4)  # a small cache: few calls fill it (sim is slow)
    s = new_stream()
    st = backend.stream(s)
    x = backend.as_array((rng.standard_normal((2, 64)) * 3).astype(np.float32), "logits", st)
    seed = backend.as_array(np.array([1, 2], np.int64), "seed", st)
    pos = backend.as_array(np.array([0, 0], np.int64), "position", st)
    plan = rs.Sampler(2, 64, "float32", stream=s)
    kw = dict(temperature=0.7, top_k=5, seed=seed, position=pos)
    if how == "Sampler.capture":
        g = plan.capture(x, **kw)
    else:
        plan(x, check=False, **kw)  # outside the capture: host values copied and cached
        with graphs.capture(s) as g:
            plan(x, check=False, **kw)
    params = list(plan._param_cache.values())
    assert params, "the plan cached no parameter copy"
    # the emulated runtime's graph keeps its launches' Python arguments anyway; a driver graph
    # keeps only their addresses, so the Graph itself must hold them
    held = _ids(g._held)
    assert all(id(a) in held for a in params), "the graph does not hold its parameter copies"
    assert all(id(a) in held for a in plan._outputs), "the graph does not hold its outputs"
    refs = [weakref.ref(a) for a in params]
    for i in range(S._PARAM_CACHE + 2):  # new host values: the cache is cleared at least once
        plan(x, check=False, temperature=0.5 + i / 1000, seed=seed, position=pos)
    gc.collect()
    assert all(r() is not None for r in refs), "a captured parameter copy was freed"
    g.replay()
    g.release()
    gc.collect()
    assert g._held == [], "a released graph still holds its arrays"
