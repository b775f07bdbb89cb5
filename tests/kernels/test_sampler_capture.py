"""Sampler.capture: a decode step as a graph whose inputs are refilled between replays (issue #6)."""

from __future__ import annotations

import numpy as np
import pytest

import rocsample
from rocsample import graphs
from rocsample.reference import sampling as ref


def _host(backend, a, s):
    return backend.to_host(a, backend.stream(s)) if backend.is_device else np.asarray(a)


@pytest.mark.graph
def test_captured_step_replays_with_new_logits_and_advancing_positions(backend, new_stream, rng):
    rows, vocab = (2, 64) if backend.name == "sim" else (4, 2048)
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    s = new_stream()
    st = backend.stream(s)
    plan = rocsample.Sampler(rows, vocab, "float32", stream=s, **small)
    x_host = rng.standard_normal((rows, vocab)).astype(np.float32)
    x = backend.as_array(x_host.copy(), "logits", st)
    seeds = backend.as_array(np.arange(rows, dtype=np.int64) + 77, "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)
    params = dict(temperature=0.7, top_k=10, top_p=0.9)
    g = plan.capture(x, seed=seeds, position=pos, **params)
    tokens = g.outputs[0]
    steps = 3 if backend.name == "sim" else 20
    for step in range(steps):
        step_logits = rng.standard_normal((rows, vocab)).astype(np.float32)
        graphs.copy_to_device(x, step_logits, s)
        g.replay(s)
        got = _host(backend, tokens, s)
        want, _, _, near = ref.sample_with_margin(step_logits, seed=np.arange(rows) + 77,
                                                  position=step, **params)
        bad = (got != want) & ~near
        assert not bad.any(), f"step {step}: got {got}, want {want}"
    np.testing.assert_array_equal(_host(backend, pos, s), np.full(rows, steps))
    g.release()


def test_capture_needs_device_inputs(backend):
    plan = rocsample.Sampler(1, 8, "float32")
    with pytest.raises(TypeError, match="seed: expected a device array"):
        x = np.zeros((1, 8), np.float32)
        x = backend.as_array(x, "logits") if backend.is_device else x
        plan.capture(x, seed=3, position=np.zeros(1, np.int64))
