"""``Sampler.capture`` takes ``dtype=`` as ``sample`` and ``Sampler.__call__`` do.

What broke (found by the fuzzer, issue #12 defect 7's family): ``capture`` had no ``dtype``
argument, so a bfloat16 plan could not capture uint16 bit patterns at all: its warm-up call
refused them ("logits: expected ... or uint16 with dtype='bfloat16'"). Now ``dtype`` is passed
to the warm-up and the captured call, on every backend; a dtype that does not name the logits'
is refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample import graphs
from rocsample.reference import sampling as R

ROWS, VOCAB = 2, 40


def _blk(backend):
    return {"_block": backend.warp_size(), "_splits": 1} if backend.name == "sim" else {}


def _bits(seed):
    x = np.random.default_rng(seed).standard_normal((ROWS, VOCAB)).astype(np.float32)
    return (x.view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def _dev(backend, a, st):
    return backend.as_array(a, "x", st) if backend.is_device else a


def _host(backend, a, st):
    return backend.to_host(a, st) if backend.is_device else np.array(a)


def test_a_bfloat16_plan_captures_uint16_bits(backend, new_stream):
    s = new_stream()
    st = backend.stream(s)
    plan = rs.Sampler(ROWS, VOCAB, "bfloat16", stream=s, **_blk(backend))
    x = _dev(backend, _bits(1), st)
    seed = _dev(backend, np.array([5, 6], np.int64), st)
    pos = _dev(backend, np.array([9, 2**63 - 1], np.int64), st)
    g = plan.capture(x, seed=seed, position=pos, top_p=0.9, temperature=0.7, dtype="bfloat16")
    try:
        p = np.array([9, 2**63 - 1], np.uint64)
        for i in range(2):
            bits = _bits(10 + i)
            graphs.copy_to_device(x, bits, s)
            g.replay(s)
            want = R.sample(bits, seed=[5, 6], position=p, top_p=0.9, temperature=0.7,
                            dtype="bfloat16")
            np.testing.assert_array_equal(_host(backend, g.outputs[0], st), want)
            p = p + np.uint64(1)
    finally:
        g.release()


def test_a_capture_dtype_must_name_the_logits_dtype(backend, new_stream):
    s = new_stream()
    st = backend.stream(s)
    plan = rs.Sampler(ROWS, VOCAB, "float32", stream=s, **_blk(backend))
    x = _dev(backend, np.zeros((ROWS, VOCAB), np.float32), st)
    seed = _dev(backend, np.zeros(ROWS, np.int64), st)
    with pytest.raises(TypeError, match=r"^logits: expected float16 logits"):
        plan.capture(x, seed=seed, position=seed, dtype="float16")
