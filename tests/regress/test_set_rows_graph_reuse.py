"""A decode step captured once and replayed many times must keep writing the right rows.

Modelled on a reported fault: a single-token decode step was captured as a graph and replayed
thousands of times, changing only device-side inputs between replays (destination row indices,
positions, the new row's values) with stream-ordered copies. The graph holds four set_rows sites
into persistent buffers, each read by a later op of the same graph:

- compressor state rows (f32), row ``state_idx``;
- a score row (f16), row ``score_idx``;
- a raw sliding-window KV ring (q8_0) that wraps, via ``ring_write`` at device ``pos``;
- a compressed-cache row (q4_0), row ``step // EVERY``: a new row every few steps.

After every replay the persistent buffers and the downstream outputs must equal a CPU model of
the same steps, and rebuilding the graph every step must give identical bytes. sim/cpu run a few
dozen tiny steps (emulated capture); cuda runs thousands of replays, at least 3 full ring wraps.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample import graphs
from rocsample.reference import set_rows as ref
from rocsample.reference.quant import BLOCK_BYTES

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

pytestmark = pytest.mark.graph

EVERY = 3


def _sizes(backend):
    if backend.name in ("cuda", "hip"):
        return dict(D=256, n_state=8, n_score=4, n_ring=256, n_comp=64, steps=3 * 256 + 57)
    return dict(D=32, n_state=3, n_score=2, n_ring=4, n_comp=6, steps=3 * 4 + 3)


def _build_copy(cuda):
    @cuda.jit
    def _copy_bytes_kernel(dst, src):
        i = cuda.grid(1)
        if i < dst.size:
            dst[i] = src[i]

    return _copy_bytes_kernel


class Decoder:
    """Device-side state of the decode step, and the ops one step issues."""

    def __init__(self, backend, st, sz, rng):
        self.be, self.st, self.sz = backend, st, sz
        D = sz["D"]
        qb = lambda t: D // 32 * BLOCK_BYTES[t]  # noqa: E731
        host = dict(
            comp_state=rng.standard_normal((sz["n_state"], D)).astype(np.float32),
            score=rng.standard_normal((sz["n_score"], D)).astype(np.float16),
            kv_ring=np.zeros((sz["n_ring"], qb("q8_0")), np.uint8),
            comp_cache=np.zeros((sz["n_comp"], qb("q4_0")), np.uint8),
            out_state=np.zeros((sz["n_state"], D), np.uint16),  # bf16 copy of comp_state
            out_score=np.zeros((sz["n_score"], D), np.float32),
            out_ring=np.zeros((sz["n_ring"], qb("q8_0")), np.uint8),
            out_comp=np.zeros((sz["n_comp"], qb("q4_0")), np.uint8),
            new_state=np.zeros((1, D), np.float32),
            new_score=np.zeros((1, D), np.float32),
            new_kv=np.zeros((1, D), np.float32),
            comp_row=np.zeros((1, D), np.float32),
            state_idx=np.zeros(1, np.int64),
            score_idx=np.zeros(1, np.int64),
            pos=np.zeros(1, np.int64),
            comp_idx=np.zeros(1, np.int64),
            all_state=np.arange(sz["n_state"], dtype=np.int64),
            all_score=np.arange(sz["n_score"], dtype=np.int64),
        )
        self.model = {k: v.copy() for k, v in host.items()}
        if backend.is_device:
            self.dev = {k: backend.as_array(v, k, backend.stream(st)) for k, v in host.items()}
            self.copy = backend.kernels(_build_copy)
        else:
            self.dev = host

    def inputs(self, step, rng):
        """This step's inputs, on the host; the same values drive the device and the model."""
        sz = self.sz
        D = sz["D"]
        return dict(
            new_state=rng.standard_normal((1, D)).astype(np.float32),
            new_score=rng.standard_normal((1, D)).astype(np.float32),
            new_kv=rng.standard_normal((1, D)).astype(np.float32) * np.float32(4),
            comp_row=rng.standard_normal((1, D)).astype(np.float32),
            state_idx=np.array([step % sz["n_state"]], np.int64),
            score_idx=np.array([(step * 7) % sz["n_score"]], np.int64),
            pos=np.array([step], np.int64),
            comp_idx=np.array([(step // EVERY) % sz["n_comp"]], np.int64),
        )

    def upload(self, values):
        for k, v in values.items():
            if self.be.is_device:
                graphs.copy_to_device(self.dev[k], v, self.st)
            else:
                self.be.copy_to_device(self.dev[k], v, self.be.stream(self.st))

    def _bytes_copy(self, dst, src):
        be, st = self.be, self.be.stream(self.st)
        if be.is_device:
            n = dst.size
            be.launch(self.copy, (n + 255) // 256, 256, st, dst.reshape(n), src.reshape(n))
        else:
            be.enqueue(st, lambda: np.copyto(dst, src))

    def step_ops(self):
        d, st = self.dev, self.st
        sr.set_rows(d["comp_state"], d["new_state"], d["state_idx"], stream=st)
        sr.set_rows(d["score"], d["new_score"], d["score_idx"], stream=st)
        sr.ring_write(d["kv_ring"], d["new_kv"], d["pos"], dst_type="q8_0", stream=st)
        sr.set_rows(d["comp_cache"], d["comp_row"], d["comp_idx"], dst_type="q4_0", stream=st)
        # later ops of the same graph read every persistent buffer
        sr.set_rows(d["out_state"], d["comp_state"], d["all_state"], dst_type="bf16", stream=st)
        sr.set_rows(d["out_score"], d["score"], d["all_score"], stream=st)
        self._bytes_copy(d["out_ring"], d["kv_ring"])
        self._bytes_copy(d["out_comp"], d["comp_cache"])

    def model_step(self, v):
        m, n_ring = self.model, self.sz["n_ring"]
        ref.set_rows(m["comp_state"], v["new_state"], v["state_idx"])
        ref.set_rows(m["score"], v["new_score"], v["score_idx"])
        ref.set_rows(m["kv_ring"], v["new_kv"], v["pos"] % n_ring, dst_type="q8_0")
        ref.set_rows(m["comp_cache"], v["comp_row"], v["comp_idx"], dst_type="q4_0")
        ref.set_rows(m["out_state"], m["comp_state"], m["all_state"], dst_type="bf16")
        ref.set_rows(m["out_score"], m["score"], m["all_score"])
        m["out_ring"][...] = m["kv_ring"]
        m["out_comp"][...] = m["comp_cache"]

    def snapshot(self):
        names = ["comp_state", "score", "kv_ring", "comp_cache", "out_state", "out_score", "out_ring", "out_comp"]
        if self.be.is_device:
            return {k: self.be.to_host(self.dev[k], self.be.stream(self.st)) for k in names}
        return {k: self.dev[k].copy() for k in names}

    def check(self, step, label):
        snap = self.snapshot()
        for k, got in snap.items():
            want = self.model[k]
            if not np.array_equal(np.ascontiguousarray(got).view(np.uint8), want.view(np.uint8)):
                rows = np.flatnonzero((got.view(np.uint8).reshape(len(got), -1)
                                       != want.view(np.uint8).reshape(len(want), -1)).any(axis=1))
                pytest.fail(f"{label}: step {step}: {k} differs from the CPU model in rows {rows[:8].tolist()}")
        return snap


def _prewarm(backend, st, sz):
    sr.prewarm(st, n_rows_total=max(sz["n_state"], sz["n_score"]), ring_rows=1)


def test_decode_graph_replayed_matches_model_and_rebuilt(backend, new_stream):
    sz = _sizes(backend)
    st_a, st_b = new_stream(), new_stream()
    rng_inputs = np.random.default_rng(1234)
    a = Decoder(backend, st_a, sz, np.random.default_rng(7))
    b = Decoder(backend, st_b, sz, np.random.default_rng(7))
    _prewarm(backend, st_a, sz)
    _prewarm(backend, st_b, sz)

    # warm-up step, eager, on both (it also sizes scratch and the error records)
    v = a.inputs(0, rng_inputs)
    for dec in (a, b):
        dec.upload(v)
        dec.step_ops()
        dec.model_step(v)
    a.check(0, "eager warm-up")

    with graphs.capture(st_a) as g:
        a.step_ops()
    try:
        for step in range(1, sz["steps"]):
            v = a.inputs(step, rng_inputs)
            a.upload(v)
            g.replay(st_a)
            a.model_step(v)
            snap_a = a.check(step, "captured once, replayed")

            b.upload(v)
            with graphs.capture(st_b) as gb:
                b.step_ops()
            gb.replay(st_b)
            gb.release()
            b.model_step(v)
            snap_b = b.check(step, "rebuilt every step")
            for k in snap_a:
                assert np.array_equal(snap_a[k].view(np.uint8), snap_b[k].view(np.uint8)), (step, k)
        sr.check_errors(st_a)  # nothing recorded

        # a bad index inside the replayed graph: that call writes nothing, the flag reports it
        before = a.snapshot()
        v = a.inputs(sz["steps"], rng_inputs)
        v["score_idx"] = np.array([sz["n_score"] + 5], np.int64)
        a.upload(v)
        g.replay(st_a)
        after = a.snapshot()
        assert np.array_equal(after["score"].view(np.uint8), before["score"].view(np.uint8))
        with pytest.raises(IndexError, match=rf"got {sz['n_score'] + 5} at position 0"):
            sr.check_errors(st_a)
        sr.check_errors(st_a)  # cleared
    finally:
        g.release()
    wraps = sz["steps"] // sz["n_ring"]
    assert wraps >= 3
