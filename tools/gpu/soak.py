"""Soak: the captured decode step of tests/regress/test_set_rows_graph_reuse.py plus a full-chain
Sampler step, one graph, replayed 10^5 times with stream-ordered input updates; compared with a
CPU model every 1000 steps. Issue #12, item 4.

Per step: the four set_rows sites of the test's ``Decoder`` (f32 state row, f16 score row, a q8_0
KV ring written by ``ring_write`` at a device position, a q4_0 compressed row every 3 steps), its
four reading ops, and ``Sampler.__call__`` (temperature 0.8, top_k 50, top_p 0.9, min_p 0.05,
device seeds, device positions advanced in the graph). Between replays the step's inputs are
refilled with ``graphs.copy_to_device`` on the graph's stream (new rows, indices, ring position,
logits), drawn from fixed pools by the step number, so the CPU model can rebuild any buffer at a
checkpoint from the last write of each row alone (no per-step model work). At each checkpoint:
every persistent buffer and downstream output byte for byte, the sampled tokens against the
reference (its rounding-margin rule), and the scratch pool's bytes, pinned buffers, live graphs
and the runtime's allocation count against their values right after capture.

    python tools/gpu/soak.py [--steps 100000] [--check-every 1000] [--backend cuda]

On the H200 (source tools/gpu/env.sh; it writes $OUT/soak.json and prints one summary line per
checkpoint decade). Exit status 1 on any mismatch or growth, 0 otherwise. ``--backend sim``
runs the same loop at the test's small sizes (for measuring the loop's speed without a GPU).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
EVERY = 3  # the test's compressed-row period


def _load_decoder_module():
    spec = importlib.util.spec_from_file_location(
        "graph_reuse", ROOT / "tests" / "regress" / "test_set_rows_graph_reuse.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Inputs:
    """The inputs of step s, as functions of s: rows from fixed pools, indices from the test's
    formulas. The same values drive the device (uploads) and the model (checkpoints)."""

    def __init__(self, sz, rows, vocab, k=61, kl=17, seed=2024):
        rng = np.random.default_rng(seed)
        D = sz["D"]
        self.sz = sz
        self.k, self.kl = k, kl
        self.state = rng.standard_normal((k, 1, D)).astype(np.float32)
        self.score = rng.standard_normal((k, 1, D)).astype(np.float32)
        self.kv = (rng.standard_normal((k, 1, D)) * 4).astype(np.float32)
        self.comp = rng.standard_normal((k, 1, D)).astype(np.float32)
        self.logits = (rng.standard_normal((kl, rows, vocab))
                       * rng.uniform(0.5, 3, (kl, rows, 1))).astype(np.float32)

    # which pool entry / destination row step s uses
    def i_state(self, s):
        return (3 * s) % self.k

    def i_score(self, s):
        return (5 * s + 1) % self.k

    def i_kv(self, s):
        return (11 * s + 2) % self.k

    def i_comp(self, s):
        return (13 * s + 3) % self.k

    def row_state(self, s):
        return s % self.sz["n_state"]

    def row_score(self, s):
        return (7 * s) % self.sz["n_score"]

    def row_ring(self, s):
        return s % self.sz["n_ring"]

    def row_comp(self, s):
        return (s // EVERY) % self.sz["n_comp"]

    def values(self, s):
        return dict(
            new_state=self.state[self.i_state(s)], new_score=self.score[self.i_score(s)],
            new_kv=self.kv[self.i_kv(s)], comp_row=self.comp[self.i_comp(s)],
            state_idx=np.array([self.row_state(s)], np.int64),
            score_idx=np.array([self.row_score(s)], np.int64),
            pos=np.array([s], np.int64),
            comp_idx=np.array([self.row_comp(s)], np.int64),
        )


def model_at(dec_init, inp: Inputs, n: int, ref):
    """Every persistent buffer and output after steps 0..n, from the last write of each row."""
    sz = inp.sz
    m = {k: v.copy() for k, v in dec_init.items()}
    window = max(sz["n_state"], sz["n_score"] * 7, sz["n_ring"], sz["n_comp"] * EVERY) + 8
    last = {"state": {}, "score": {}, "ring": {}, "comp": {}}
    for s in range(n, max(-1, n - window), -1):
        last["state"].setdefault(inp.row_state(s), s)
        last["score"].setdefault(inp.row_score(s), s)
        last["ring"].setdefault(inp.row_ring(s), s)
        last["comp"].setdefault(inp.row_comp(s), s)
    for key, dst, pool, ix, t in (("state", "comp_state", inp.state, inp.i_state, None),
                                  ("score", "score", inp.score, inp.i_score, None),
                                  ("ring", "kv_ring", inp.kv, inp.i_kv, "q8_0"),
                                  ("comp", "comp_cache", inp.comp, inp.i_comp, "q4_0")):
        rows = np.array(sorted(last[key]), np.int64)
        src = np.concatenate([pool[ix(last[key][r])] for r in rows]) if rows.size else None
        if rows.size:
            ref.set_rows(m[dst], src, rows, dst_type=t)
    ref.set_rows(m["out_state"], m["comp_state"], m["all_state"], dst_type="bf16")
    ref.set_rows(m["out_score"], m["score"], m["all_score"])
    m["out_ring"][...] = m["kv_ring"]
    m["out_comp"][...] = m["comp_cache"]
    return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--check-every", type=int, default=1000)
    ap.add_argument("--backend", default=os.environ.get("ROCSAMPLE_BACKEND", "cuda"))
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--sizes", choices=["auto", "small", "gpu"], default="auto",
                    help="the test's sizes: small (cpu/sim) or gpu; auto picks by backend")
    ap.add_argument("--budget-s", type=float, default=75.0,
                    help="stop at the first checkpoint after this many seconds of loop (reported)")
    ap.add_argument("--fault-step", type=int, default=-1,
                    help="self-test: upload a wrong KV row at this step (the soak must then FAIL)")
    args = ap.parse_args(argv)
    os.environ["ROCSAMPLE_BACKEND"] = args.backend
    if args.backend == "sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    sys.path.insert(0, str(ROOT))
    import rocsample
    from rocsample import graphs, scratch
    from rocsample.reference import sampling as R
    from rocsample.reference import set_rows as ref

    t_start = time.perf_counter()
    be = rocsample.use_backend(args.backend)
    gr = _load_decoder_module()
    sz = gr._sizes(be)
    if args.sizes != "auto":
        sz = dict(D=256, n_state=8, n_score=4, n_ring=256, n_comp=64) if args.sizes == "gpu" else \
            dict(D=32, n_state=3, n_score=2, n_ring=4, n_comp=6)
    rows, vocab = (2, 64) if be.name == "sim" else (4, 8192)
    chain = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
    s = be.runtime.new_stream()
    st = be.stream(s)
    dec = gr.Decoder(be, s, sz, np.random.default_rng(7))
    init = {k: v.copy() for k, v in dec.model.items()}
    inp = Inputs(sz, rows, vocab)
    blk = {"_block": be.warp_size(), "_splits": 2} if be.name == "sim" else {}
    plan = rocsample.Sampler(rows, vocab, "float32", stream=s, **blk)
    x = be.as_array(inp.logits[0].copy(), "logits", st)
    seeds = be.as_array(np.arange(rows, dtype=np.int64) * 7919 + 3, "seed", st)
    pos0 = np.full(rows, 10**9, np.int64)
    pos = be.as_array(pos0.copy(), "position", st)
    gr._prewarm(be, s, sz)

    def step_ops():
        dec.step_ops()
        return plan(x, **chain, seed=seeds, position=pos, advance_position=True, check=False)

    # step 0 eager (sizes scratch, binds the error records), then one capture for all the rest
    dec.upload(inp.values(0))
    graphs.copy_to_device(x, inp.logits[0], s)
    step_ops()
    plan.prewarm()
    be.synchronize(st)
    with graphs.capture(s) as g:
        res = step_ops()
    tokens = res[0]
    t_ready = time.perf_counter()
    stats0 = scratch.stats()
    allocs0 = (be.runtime.alloc_calls, be.runtime.free_calls)

    def pool_figures(stats):
        return dict(bytes=sum(stats["bytes_by_stream"].values()), pinned=stats["pinned_buffers"],
                    live_graphs=stats["live_graphs"], pending_frees=stats["pending_frees"])

    base = pool_figures(stats0)
    mismatches, growth, checkpoints, boundary_rows = [], [], 0, 0
    t_loop = time.perf_counter()
    done = 0
    for step in range(1, args.steps + 1):
        vals = inp.values(step)
        if step == args.fault_step:
            vals["new_kv"] = vals["new_kv"] + np.float32(1)
        dec.upload(vals)
        graphs.copy_to_device(x, inp.logits[step % inp.kl], s)
        g.replay(s)
        if step % args.check_every and step != args.steps:
            continue
        checkpoints += 1
        snap = dec.snapshot()  # synchronizes the stream
        want = model_at(init, inp, step, ref)
        for k, got in snap.items():
            if not np.array_equal(np.ascontiguousarray(got).view(np.uint8), want[k].view(np.uint8)):
                mismatches.append({"step": step, "buffer": k})
        tok = be.to_host(tokens, st)
        w_tok, _, _, near = R.sample_with_margin(
            inp.logits[step % inp.kl], **chain, seed=np.arange(rows, dtype=np.int64) * 7919 + 3,
            position=pos0 + step)
        boundary_rows += int(near.sum())
        for r in np.flatnonzero((tok != w_tok) & ~near):
            mismatches.append({"step": step, "buffer": "tokens", "row": int(r),
                               "got": int(tok[r]), "want": int(w_tok[r])})
        p_now = be.to_host(pos, st)
        if not np.array_equal(p_now, pos0 + step + 1):
            mismatches.append({"step": step, "buffer": "positions"})
        fig = pool_figures(scratch.stats())
        allocs = (be.runtime.alloc_calls, be.runtime.free_calls)
        if fig != base or allocs != allocs0:
            growth.append({"step": step, "pool": fig, "alloc_free_calls": allocs})
        done = step
        el = time.perf_counter() - t_loop
        if checkpoints % 10 == 0 or step == args.steps:
            print(f"soak: step {step}: {len(mismatches)} mismatches, {len(growth)} growth events, "
                  f"{step / el:.0f} steps/s, pool {fig}", flush=True)
        if el > args.budget_s:
            print(f"soak: stopping at step {step} of {args.steps}: the loop passed --budget-s "
                  f"{args.budget_s:g}", flush=True)
            break
    sr = importlib.import_module("rocsample.set_rows")
    sr.check_errors(s)  # no bad index was ever recorded
    t_end = time.perf_counter()
    g.release()
    loop_s = t_end - t_loop
    report = {
        "backend": be.name, "device": be.device_name(), "steps": done, "steps_asked": args.steps,
        "check_every": args.check_every, "checkpoints": checkpoints,
        "ring_rows": sz["n_ring"], "ring_wraps": done // sz["n_ring"],
        "sampler": {"rows": rows, "vocab": vocab, **chain, "boundary_rows_skipped": boundary_rows},
        "mismatches": len(mismatches), "first_mismatches": mismatches[:20],
        "growth_events": len(growth), "first_growth": growth[:5],
        "pool_after_capture": base, "runtime_alloc_free_calls": list(allocs0),
        "seconds": {"setup_incl_jit": round(t_ready - t_start, 2), "loop": round(loop_s, 2),
                    "total": round(t_end - t_start, 2)},
        "steps_per_s": round(done / loop_s, 1),
        "us_per_step": round(1e6 * loop_s / max(done, 1), 1),
        "verdict": ("FAIL" if mismatches or growth else "PASS" if done == args.steps
                    else "PASS (partial: budget)"),
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "soak.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"soak: {report['verdict']}: {done} replays ({report['ring_wraps']} ring wraps), "
          f"{checkpoints} checkpoints, {len(mismatches)} mismatches, {len(growth)} growth events; "
          f"setup {report['seconds']['setup_incl_jit']} s, loop {report['seconds']['loop']} s "
          f"({report['us_per_step']} us/step)", flush=True)
    return 0 if report["verdict"].startswith("PASS") else 1


if __name__ == "__main__":
    sys.exit(main())
