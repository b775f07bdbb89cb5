"""Property-based fuzzing of graphs.capture / copy_to_device and scratch.prewarm / request.

- copy_to_device: random dtypes and shapes, the right ones copied byte for byte, the wrong ones
  refused by name with dst untouched;
- a random decode-step *program* (set_rows / ring_write sites into persistent buffers, a
  Sampler step, reads of the buffers by later ops) captured once and replayed with refilled
  device inputs, compared with a host model after every replay; a call that must not run inside
  a capture (check_errors) ends it cleanly and the stream captures again;
- the scratch pool as a state machine: requests, prewarms, trims and captures on a few streams,
  with the pool's invariants, the capacity model and SPEC §4's capture rule checked at each step.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import rocsample
from rocsample import CaptureError, ScratchNotWarmed, graphs, scratch
from rocsample.reference import sampling as R
from rocsample.reference import set_rows as ref
from rocsample.reference.quant import BLOCK_BYTES

from . import harness as H

sr = importlib.import_module("rocsample.set_rows")  # the module (rocsample.set_rows is the function)

LIM = H.limits()


# ---- copy_to_device --------------------------------------------------------------------------
DTYPES = [np.float32, np.float16, np.int64, np.int32, np.uint8, np.uint16, np.float64]


@st.composite
def copy_cases(draw):
    dt = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    kind = draw(st.sampled_from(["ok", "ok", "ok", "dtype", "shape", "list", "scalar", "dst"]))
    return dict(dt=dt, shape=shape, kind=kind,
                other_dt=draw(st.sampled_from([d for d in DTYPES if d is not dt])),
                other_shape=draw(st.sampled_from([shape + (1,), shape[:-1] + (shape[-1] + 1,),
                                                  (int(np.prod(shape)),) if len(shape) > 1 else (1, shape[0])])),
                seed=draw(st.integers(0, 2**32 - 1)), transpose=draw(st.booleans()))


@H.fuzz_settings("copy_to_device")
@given(c=copy_cases())
def test_fuzz_copy_to_device(backend, c):
    rng = np.random.default_rng(c["seed"])
    s = backend.runtime.new_stream()
    init = rng.integers(0, 256, int(np.prod(c["shape"])) * np.dtype(c["dt"]).itemsize,
                        dtype=np.uint8).view(c["dt"]).reshape(c["shape"])
    dst = H.place(backend, init, "device", "dst", s)
    new = rng.integers(0, 256, init.nbytes, dtype=np.uint8).view(c["dt"]).reshape(c["shape"])
    if c["transpose"] and new.ndim > 1:
        new = np.ascontiguousarray(new.T).T  # a non-contiguous view of the right shape
    host, target = new, None
    if c["kind"] == "dtype":
        host, target = np.zeros(c["shape"], c["other_dt"]), "host"
    elif c["kind"] == "shape":
        host, target = np.zeros(c["other_shape"], c["dt"]), "host"
    elif c["kind"] == "list":
        host, target = new.tolist(), "host"
    elif c["kind"] == "scalar":
        host, target = new.reshape(-1)[0].item(), "host"
    elif c["kind"] == "dst":
        dst, target = init.tolist(), "dst"

    def call():
        graphs.copy_to_device(dst, host, s)
        backend.synchronize(s)
        return {"dst": H.host_of(backend, dst, s)}

    out = H.run(call, backend)
    H.log("copy_to_device", c["kind"], out)
    H.check_hygiene(out, c)
    if target:
        H.check_named_refusal(out, {target}, c, allowed=(TypeError, ValueError))
        if target == "host":
            after = H.host_of(backend, dst, s)
            if not np.array_equal(after.view(np.uint8), init.view(np.uint8)):
                H.fail("a refused copy changed dst", c)
        return
    if not out.ok:
        H.fail(f"a valid copy raised {out.brief()}", c)
    if not np.array_equal(out.values["dst"].view(np.uint8), np.ascontiguousarray(new).view(np.uint8)):
        H.fail("dst bytes differ from the host array copied in", c)


# ---- a captured decode-step program ------------------------------------------------------------
TYPES = ["f32", "f16", "bf16", "q4_0", "q8_0", "iq4_nl", "q5_1"]


def _storage(t):
    return {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}.get(t, np.uint8)


@st.composite
def programs(draw):
    n_sites = draw(st.integers(1, 3))
    sites = []
    for _ in range(n_sites):
        t = draw(st.sampled_from(TYPES))
        ne0 = 32 * draw(st.integers(1, LIM.ne0_blocks))
        sites.append(dict(t=t, ne0=ne0, n_rows=draw(st.integers(1, LIM.set_rows)),
                          n_src=draw(st.integers(1, 3)), ring=draw(st.booleans())))
    sampler = draw(st.booleans())
    rows, vocab = draw(st.integers(1, LIM.rows)), draw(st.integers(2, LIM.vocab))
    temp = draw(st.sampled_from([0.0, 0.7, 1.0]))
    top_k = draw(st.sampled_from([0, 1, 5]))
    return dict(sites=sites, sampler=sampler, rows=rows, vocab=vocab, temp=temp, top_k=top_k,
                replays=draw(st.integers(1, 4)), seed=draw(st.integers(0, 2**32 - 1)),
                refused=draw(st.sampled_from([None, None, None, "check_errors"])),
                mode=draw(st.sampled_from(["thread_local", "global", "relaxed"])))


def _program_run(be, p):
    rng = np.random.default_rng(p["seed"])
    p["_ring"] = {}  # the model's ring positions (site -> position)

    def body():
        s = be.runtime.new_stream()
        st_ = be.stream(s)
        stats0 = scratch.stats()
        dev, model = {}, {}
        for i, site in enumerate(p["sites"]):
            W = site["ne0"] // 32 * BLOCK_BYTES[site["t"]] if site["t"] in BLOCK_BYTES else site["ne0"]
            init = np.zeros((site["n_rows"], W), _storage(site["t"]))
            model[f"dst{i}"] = init.copy()
            dev[f"dst{i}"] = H.place(be, init, "device", "dst", s)
            dev[f"src{i}"] = H.place(be, np.zeros((site["n_src"], site["ne0"]), np.float32), "device", "src", s)
            dev[f"all{i}"] = H.place(be, np.arange(site["n_rows"], dtype=np.int64), "device", "idx", s)
            if site["ring"]:
                dev[f"pos{i}"] = H.place(be, np.zeros(1, np.int64), "device", "position", s)
            else:
                dev[f"idx{i}"] = H.place(be, np.zeros(site["n_src"], np.int64), "device", "idx", s)
            if site["t"] in ("f32", "f16"):  # a later op of the same graph reads the buffer
                model[f"out{i}"] = init.copy()
                dev[f"out{i}"] = H.place(be, init, "device", "dst", s)
        plan = None
        if p["sampler"]:
            blk = {"_block": be.warp_size(), "_splits": 1} if be.name == "sim" else {}
            plan = rocsample.Sampler(p["rows"], p["vocab"], "float32", stream=s, **blk)
            dev["x"] = H.place(be, np.zeros((p["rows"], p["vocab"]), np.float32), "device", "logits", s)
            dev["seeds"] = H.place(be, np.arange(p["rows"], dtype=np.int64), "device", "seed", s)
            dev["pos"] = H.place(be, np.zeros(p["rows"], np.int64), "device", "position", s)
        sr.prewarm(s, n_rows_total=max(x["n_rows"] for x in p["sites"]),
                   ring_rows=max(x["n_src"] for x in p["sites"]))

        def ops():
            for i, site in enumerate(p["sites"]):
                dt = None if site["t"] in ("f32", "f16") else site["t"]
                if site["ring"]:
                    rocsample.ring_write(dev[f"dst{i}"], dev[f"src{i}"], dev[f"pos{i}"], dst_type=dt,
                                         stream=s, advance=True)
                else:
                    rocsample.set_rows(dev[f"dst{i}"], dev[f"src{i}"], dev[f"idx{i}"], dst_type=dt,
                                       stream=s)
                if site["t"] in ("f32", "f16"):  # the reading op: every row of dst{i} into out{i}
                    rocsample.set_rows(dev[f"out{i}"], dev[f"dst{i}"], dev[f"all{i}"], stream=s)
            if plan is not None:
                return plan(dev["x"], temperature=p["temp"], top_k=p["top_k"], seed=dev["seeds"],
                            position=dev["pos"], advance_position=True, check=False)
            return None

        # eager warm-up (sizes scratch, binds error records), then the model follows it
        inputs0 = _inputs(rng, p, 0)
        _upload(be, dev, inputs0, s)
        res0 = ops()
        _model_step(p, model, inputs0)
        be.synchronize(st_)
        pos_rows = np.ones(p["rows"], np.uint64)  # the eager step advanced the positions once
        if plan is not None:
            plan.prewarm()
        refused = None
        if p["refused"]:
            try:
                with graphs.capture(s, mode=p["mode"]):
                    rocsample.check_errors(s)
            except CaptureError as e:
                refused = e
        with graphs.capture(s, mode=p["mode"]) as g:
            res = ops()
        got = []
        try:
            for k in range(p["replays"]):
                inputs = _inputs(rng, p, k + 1)
                _upload(be, dev, inputs, s)
                g.replay(s)
                _model_step(p, model, inputs)
                snap = {name: H.host_of(be, dev[name], s) for name in model}
                if plan is not None:
                    toks = H.host_of(be, res[0], s)
                    want, _, _, near = H.quiet(R.sample_with_margin)(
                        inputs["x"], temperature=p["temp"], top_k=p["top_k"],
                        seed=np.arange(p["rows"]), position=pos_rows)
                    snap["tokens"] = (toks, want, near)
                    pos_rows = pos_rows + np.uint64(1)
                got.append(snap)
                for name, want in model.items():
                    if not np.array_equal(snap[name].view(np.uint8), want.view(np.uint8)):
                        return {"mismatch": f"replay {k}: {name} differs from the host model"}
            rocsample.check_errors(s)
        finally:
            g.release()
        del res0
        return {"replays": got, "refused": refused, "stats0": stats0, "stats1": scratch.stats(),
                "stream": st_}

    return body


def _inputs(rng, p, step):
    v = {}
    for i, site in enumerate(p["sites"]):
        v[f"src{i}"] = (rng.standard_normal((site["n_src"], site["ne0"])) * 3).astype(np.float32)
        if not site["ring"]:
            v[f"idx{i}"] = rng.integers(0, site["n_rows"], site["n_src"]).astype(np.int64)
    if p["sampler"]:
        v["x"] = rng.standard_normal((p["rows"], p["vocab"])).astype(np.float32)
    return v


def _upload(be, dev, inputs, s):
    for k, v in inputs.items():
        graphs.copy_to_device(dev[k], v, s)


def _model_step(p, model, inputs):
    for i, site in enumerate(p["sites"]):
        dt = None if site["t"] in ("f32", "f16") else site["t"]
        if site["ring"]:
            pos = p["_ring"].get(i, 0)
            idx = (pos + np.arange(site["n_src"])) % site["n_rows"]
            p["_ring"][i] = pos + site["n_src"]
        else:
            idx = inputs[f"idx{i}"]
        ref.set_rows(model[f"dst{i}"], inputs[f"src{i}"], idx.astype(np.int64), dst_type=dt)
        if site["t"] in ("f32", "f16"):
            model[f"out{i}"][...] = model[f"dst{i}"]


@H.fuzz_settings("graph_program")
@given(p=programs())
def test_fuzz_captured_program_replays_match_the_model(backend, p):
    out = H.run(_program_run(backend, p), backend)
    H.log("graph_program", f"sites={len(p['sites'])} sampler={p['sampler']} refused={p['refused']}", out)
    H.check_hygiene(out, p)
    if not out.ok:
        H.fail(f"the program raised {out.brief()}", p)
    v = out.values
    if "mismatch" in v:
        H.fail(v["mismatch"], p)
    for k, snap in enumerate(v["replays"]):
        if "tokens" in snap:
            got, want, near = snap["tokens"]
            bad = np.flatnonzero((got != want) & ~near)
            if bad.size:
                H.fail(f"replay {k}: sampled tokens {got.tolist()}, want {want.tolist()}", p)
    if p["refused"] and not isinstance(v["refused"], CaptureError):
        H.fail(f"check_errors inside a capture: want CaptureError, got {v['refused']!r}", p)
    for k in ("live_graphs", "pinned_buffers"):
        if v["stats1"][k] > v["stats0"][k]:
            H.fail(f"{k} grew over the program: {v['stats0'][k]} -> {v['stats1'][k]}", p)


# ---- the scratch pool as a state machine --------------------------------------------------------
PURPOSES = ["fz.a", "fz.b"]
SIZES = st.one_of(st.integers(0, 3000), st.sampled_from([0, 1, 255, 256, 257, 511, 512, 4096]))


class ScratchMachine(RuleBasedStateMachine):
    """Requests, prewarms, trims and captures on three fresh streams of the session's backend."""

    @initialize()
    def setup(self):
        self.be = rocsample.get_backend()
        self.pool = scratch.get_pool()
        # two streams of the current device and one of the second (emulated on cpu/sim), when
        # there is one: a buffer of one device is never handed out on another (SPEC §4)
        last = 1 if self.be.runtime.device_count() > 1 else 0
        self.streams = [self.be.runtime.new_stream(d) for d in (0, 0, last)]
        self.cap = {}  # (stream index, purpose) -> capacity in bytes (the model)
        self.capturing = None  # (stream index, context manager, graph)
        self.graphs = []

    def _capacity(self, i, p):
        return self.pool.capacity(self.streams[i], p)

    @rule(i=st.integers(0, 2), p=st.sampled_from(PURPOSES), n=SIZES)
    def request(self, i, p, n):
        s = self.streams[i]
        have = self.cap.get((i, p), 0)
        before = self.pool.buffers(s).get(p)
        # SPEC §4: no growth on the capturing stream; none anywhere from this thread while a
        # thread-local or global capture is open (the allocation would invalidate it)
        blocked = self.capturing is not None and (
            self.capturing[0] == i or self.capturing[3] in ("thread_local", "global"))
        if blocked and max(n, 1) > have:
            with pytest.raises(ScratchNotWarmed):
                scratch.request(s, n, p)
            assert self._capacity(i, p) == have  # refused before anything changed
            return
        # On a real driver a relaxed capture on these (blocking) streams also fails the
        # legacy-stream probe rocsample asks, which cannot tell the mode (an H200 refused such a
        # request): a refusal is then allowed, never a partial change (the emulation allows it)
        maybe = (self.capturing is not None and not self.be.runtime.emulated
                 and max(n, 1) > have)
        try:
            buf = scratch.request(s, n, p)
        except ScratchNotWarmed:
            if not maybe:
                raise
            assert self._capacity(i, p) == have
            return
        assert buf.shape[0] >= max(n, 1) and str(buf.dtype) == "uint8"
        if max(n, 1) <= have:
            assert self.pool.buffers(s)[p] == before  # served from what was there
        else:
            self.cap[(i, p)] = max(256, -(-max(n, 1) // 256) * 256)
        assert self._capacity(i, p) == self.cap[(i, p)]

    @rule(i=st.integers(0, 2), sizes=st.one_of(
        SIZES, st.dictionaries(st.sampled_from(PURPOSES), SIZES, max_size=2)))
    def prewarm(self, i, sizes):
        if self.capturing is not None:
            return
        scratch.prewarm(self.streams[i], sizes)
        items = sizes.items() if isinstance(sizes, dict) else [("default", sizes)]
        for p, n in items:
            want = max(256, -(-max(n, 1) // 256) * 256)
            self.cap[(i, p)] = max(self.cap.get((i, p), 0), want)
            assert self._capacity(i, p) == self.cap[(i, p)]

    @rule(i=st.integers(0, 2), bad=st.sampled_from([-1, 1.5, "8", None, True, {"fz.a": -3},
                                                    {"fz.a": 2.0}]))
    def refused_sizes(self, i, bad):
        s = self.streams[i]
        before = dict(self.pool.buffers(s))
        if isinstance(bad, dict) or bad is None or isinstance(bad, (str, bool)):
            with pytest.raises((TypeError, ValueError), match=r"^sizes(\[[^\]]+\])?: expected "):
                scratch.prewarm(s, bad)
        else:
            with pytest.raises((TypeError, ValueError), match=r"^nbytes: expected "):
                scratch.request(s, bad, "fz.a")
        assert self.pool.buffers(s) == before

    @precondition(lambda self: self.capturing is None)
    @rule(i=st.integers(0, 2))
    def trim(self, i):
        self.pool.trim(self.streams[i])
        for k in [k for k in self.cap if k[0] == i]:
            del self.cap[k]
        assert self.pool.buffers(self.streams[i]) == {}

    @precondition(lambda self: self.capturing is None)
    @rule(i=st.integers(0, 2), mode=st.sampled_from(["thread_local", "global", "relaxed"]))
    def begin_capture(self, i, mode):
        ctx = graphs.capture(self.streams[i], mode=mode)
        g = ctx.__enter__()
        self.capturing = (i, ctx, g, mode)

    @precondition(lambda self: self.capturing is not None)
    @rule(replay=st.booleans())
    def end_capture(self, replay):
        i, ctx, g, _ = self.capturing
        self.capturing = None
        ctx.__exit__(None, None, None)
        assert g.ready
        if replay:
            g.replay(self.streams[i])
        self.graphs.append(g)
        # the graph took the buffers it used; the stream was given fresh ones of the same size
        for (j, p), n in self.cap.items():
            if j == i:
                assert self._capacity(i, p) in (n, 0)
                if self._capacity(i, p) == 0:
                    self.cap[(j, p)] = 0

    @precondition(lambda self: self.graphs)
    @rule()
    def release(self):
        self.graphs.pop(0).release()

    @invariant()
    def pool_is_consistent(self):
        if not hasattr(self, "pool"):
            return
        self.pool.check_invariants()
        ptrs = [ptr for s in self.streams for ptr in self.pool.buffers(s).values()]
        assert len(ptrs) == len(set(ptrs)), "two (stream, purpose) entries share a buffer"
        if self.be.runtime.emulated:  # the emulated runtime knows each allocation's device
            for s in self.streams:
                for ptr in self.pool.buffers(s).values():
                    assert self.be.runtime.pointer_device(ptr) == self.be.stream(s).device

    def teardown(self):
        if getattr(self, "capturing", None) is not None:
            self.capturing[1].__exit__(None, None, None)
        for g in getattr(self, "graphs", []):
            g.release()
        for s in getattr(self, "streams", []):
            self.pool.trim(s)


TestScratchMachine = ScratchMachine.TestCase
TestScratchMachine.settings = H.fuzz_settings("scratch", stateful_step_count=25)
