"""A real client: a decode loop around a transformers Llama forward (issue #17 item 5).

``LlamaForCausalLM`` built from a config with random weights (vocab 151936, 2 layers, hidden 512,
8 heads; bfloat16; no download), a ``StaticCache`` (so the step is capturable), a 16-token prompt
prefilled, then ``STEPS`` = 64 decode steps at batch 1, 8 and 64. Each step is what a client does:

    logits = model(tok, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
    logits = logits[:, -1, :].float()        # a fresh float32 tensor each step (as HF generate)
    tok.copy_(sample(logits))

with ``sample`` (T=0.8, top_k=50, top_p=0.9) one of: ``torch`` (transformers' own
Temperature -> TopK -> TopP logits warpers, softmax, ``torch.multinomial``: the pipeline HF
``generate`` runs), ``rocsample`` (a ``Sampler`` bound to the loop's stream; device seed/position,
``advance_position=True``, ``out=`` a static int32 tensor) and ``flashinfer-<version>``
(``top_k_top_p_sampling_from_logits(logits / T, 50, 0.9)``, where importable; seed/offset tensors
where the version takes them). ``none`` is the loop without sampling (the previous tokens fed
back): the forward-only baseline the sampling share is measured against.

Two modes: ``eager`` (the step run op by op on a torch side stream) and ``graph`` (one step
captured with ``torch.cuda.graph`` on that stream after warm-up steps, then replayed STEPS times;
the cache's position is a device tensor that transformers' ``StaticLayer`` advances in place, so
it advances inside the graph too). One case a (batch, mode) builds every sampler's loop and the
``none`` loop, each with its own cache (sized for all its steps), and runs ``ROUNDS`` rounds of
STEPS steps of each, interleaved round by round (the peers' order rotating each round): eager
steps are host-bound and the host drifts between cases by up to 40%, so loops timed in turn in
one case are compared, never cases minutes apart. pytest-benchmark times rocsample's rounds to a
finished result. ``extra_info["samplers"]``, per sampler: ``step_us`` (device events around the
STEPS steps, per step, median of its rounds: host gaps included in eager mode; each round's in
``round_step_us``, in the order run),
``wall_step_us`` (host clock, same span), ``sampling_us`` = ``step_us - forward_us`` and
``sampling_share`` = ``sampling_us / step_us``, where ``forward_us`` is the ``none`` loop's
``step_us`` of the same case; ``capture_error`` where a step could not be captured (then no
graph figure); rocsample's figures also at the top level. Needs torch with CUDA, transformers
(the ``bench`` extra) and the cuda backend; skips otherwise, saying which is missing.
"""

from __future__ import annotations

import functools
import statistics
import time

import numpy as np
import pytest

import rocsample

from .common import torch_cuda
from .peers import flashinfer

CONFIG = dict(vocab_size=151936, hidden_size=512, intermediate_size=1408, num_hidden_layers=2,
              num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024,
              tie_word_embeddings=False)
BATCHES = [1, 8, 64]
STEPS = 64
PROMPT = 16
WARM_STEPS = 3
ADDRESS_STEPS = 16  # eager warm-up steps that also count the logits' addresses
ROUNDS = 9  # rounds of STEPS steps each loop runs, the loops' rounds interleaved
# every step a Loop runs (the eager warm-up is the longer one), with a margin
MAX_CACHE = PROMPT + max(WARM_STEPS + 1, ADDRESS_STEPS) + ROUNDS * STEPS + 8
SAMPLING = dict(temperature=0.8, top_k=50, top_p=0.9)
IMPLS = ["torch", "rocsample", "flashinfer"]
DEVICE = "cuda"


def _needs(backend):
    """(torch, transformers) or skip with the reason."""
    torch = torch_cuda()
    if torch is None:
        pytest.skip("needs torch with a CUDA device")
    try:
        import transformers
    except Exception as e:
        pytest.skip(f"needs transformers (the bench extra): {type(e).__name__}")
    if backend.name != "cuda":
        pytest.skip("needs --backend cuda (the loop's tensors are torch CUDA tensors)")
    return torch, transformers


@functools.lru_cache(maxsize=1)
def _model(torch, transformers):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**CONFIG)
    with torch.device(DEVICE):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    return model.eval()


def _rocsample_sampler(torch, batch, vocab, stream):
    """The rocsample side of the step: one helper, so the call adapts as the torch-native API
    lands (today: numba launches on the torch stream, tokens written into a torch tensor)."""
    plan = rocsample.Sampler(batch, vocab, "float32", stream=stream)
    seed = torch.arange(batch, dtype=torch.int64, device=DEVICE)
    pos = torch.zeros(batch, dtype=torch.int64, device=DEVICE)
    out = torch.empty(batch, dtype=torch.int32, device=DEVICE)

    def sample(logits):
        plan(logits, seed=seed, position=pos, advance_position=True, check=False, out=out,
             **SAMPLING)
        return out
    return sample


def _torch_sampler(torch, transformers):
    from transformers.generation.logits_process import (
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    warp = LogitsProcessorList([TemperatureLogitsWarper(SAMPLING["temperature"]),
                                TopKLogitsWarper(SAMPLING["top_k"]),
                                TopPLogitsWarper(SAMPLING["top_p"])])

    def sample(logits):
        probs = torch.softmax(warp(None, logits), dim=-1)
        return torch.multinomial(probs, 1).squeeze(1)
    return sample


def _flashinfer_sampler(fi, batch):
    t = SAMPLING["temperature"]

    def sample(logits):
        tok = fi.top_k_top_p_from_logits(logits / t, SAMPLING["top_k"], SAMPLING["top_p"])
        fi.advance_rng(batch)
        return tok
    return sample


class Loop:
    """A prefilled static-cache decode loop of one batch, run on ``stream``."""

    def __init__(self, torch, transformers, model, batch, sample, stream, cache_len=MAX_CACHE):
        self.torch, self.model, self.batch, self.sample, self.stream = torch, model, batch, sample, stream
        self.cache_len = cache_len
        self.used = PROMPT  # cache positions written (a step past the cache is a device assert)
        self.graph = None
        self.seen = None  # a set: the logits' data addresses step() met (eager warm-up only)
        g = torch.Generator(device=DEVICE).manual_seed(batch)
        with torch.cuda.stream(stream), torch.no_grad():
            prompt = torch.randint(0, CONFIG["vocab_size"], (batch, PROMPT), device=DEVICE, generator=g)
            self.cache = transformers.StaticCache(config=model.config,
                                                  max_cache_len=cache_len)
            out = model(input_ids=prompt, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
            self.tok = out.logits[:, -1, :].argmax(-1, keepdim=True)  # static: the step's input
        stream.synchronize()

    def _room(self, steps):
        """Refuse, before any launch, steps that would write past the static cache (the
        model's cache update would trip a device-side assert, which poisons the process)."""
        if self.used + steps > self.cache_len:
            raise RuntimeError(f"decode loop: {self.used} + {steps} steps exceed the static cache "
                               f"of {self.cache_len} positions (raise MAX_CACHE)")
        self.used += steps

    def step(self):
        t = self.torch
        self._room(1)
        out = self.model(input_ids=self.tok, past_key_values=self.cache, use_cache=True,
                         logits_to_keep=1)
        logits = out.logits[:, -1, :].float()  # a new float32 tensor each step, as HF generate
        if self.seen is not None:
            self.seen.add(logits.data_ptr())
        nxt = self.sample(logits) if self.sample is not None else self.tok
        self.tok.copy_(nxt.view(self.batch, 1).to(t.int64))

    def capture(self):
        """Warm up eagerly, then capture one step into a graph (None and the error if it fails)."""
        t = self.torch
        with t.cuda.stream(self.stream), t.no_grad():
            for _ in range(WARM_STEPS):
                self.step()
        self.stream.synchronize()
        g = t.cuda.CUDAGraph()
        try:
            with t.no_grad(), t.cuda.graph(g, stream=self.stream):
                self.step()
        except Exception as e:
            t.cuda.synchronize()
            return f"{type(e).__name__}: {e}".splitlines()[0][:300]
        self.graph = g
        return None

    def run(self):
        """STEPS more steps; (device-event seconds, host seconds) per step."""
        t = self.torch
        e0, e1 = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        if self.graph is not None:
            self._room(STEPS)  # (eager steps count themselves)
        with t.cuda.stream(self.stream), t.no_grad():
            h0 = time.perf_counter()
            e0.record(self.stream)
            for _ in range(STEPS):
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self.step()
            e1.record(self.stream)
            e1.synchronize()
            h1 = time.perf_counter()
        return e0.elapsed_time(e1) / 1e3 / STEPS, (h1 - h0) / STEPS


def _sampler(impl, torch, transformers, batch, stream):
    if impl == "none":
        return None, "none"
    if impl == "torch":
        return _torch_sampler(torch, transformers), "torch"
    if impl == "rocsample":
        return _rocsample_sampler(torch, batch, CONFIG["vocab_size"], stream), "rocsample"
    fi = flashinfer()
    if isinstance(fi, str):
        pytest.skip(fi)
    return _flashinfer_sampler(fi, batch), fi.label


def _loop(torch, transformers, impl, batch, mode, stream, info):
    """A Loop of ``impl`` ready to run: captured (``mode`` graph) or warmed eagerly (counting
    the logits' addresses); None, with ``capture_error`` in ``info``, if it could not be."""
    sample, label = _sampler(impl, torch, transformers, batch, stream)
    loop = Loop(torch, transformers, _model(torch, transformers), batch, sample, stream)
    if mode == "graph":
        err = loop.capture()
        if err is not None:
            info["capture_error"] = err
            return None, label
        return loop, label
    loop.seen = set()
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(ADDRESS_STEPS):
            loop.step()
    stream.synchronize()
    # how many allocator blocks the step's fresh logits tensor came from (the host-overhead
    # benchmark's "alternating" kind is two)
    info["logits_addresses"] = len(loop.seen)
    loop.seen = None
    return loop, label


def _measure(torch, transformers, batch, mode, benchmark=None):
    """Every sampler's loop (and the forward-only one) at ``batch`` in ``mode``, each its own
    cache, run ``ROUNDS`` rounds each, interleaved round by round (the peers' order rotating a
    round): the figures (dict). Eager steps are host-bound and the host drifts (the same loop
    measured minutes apart differs by up to 40%), so each sampler's rounds sit between every
    other's, and the forward-only figure is the same case's. pytest-benchmark times
    rocsample's rounds; the others run in its setup."""
    import gc

    gc.collect()
    torch.cuda.empty_cache()
    stream = torch.cuda.Stream()
    info = dict(batch=batch, mode=mode, steps=STEPS, vocab=CONFIG["vocab_size"], rounds=ROUNDS,
                impl="rocsample", interleaved=True)
    loops, samplers = {}, {}
    for impl in ["none", *IMPLS]:
        got = {}
        try:
            loop, label = _loop(torch, transformers, impl, batch, mode, stream, got)
        except pytest.skip.Exception as e:  # (a peer that is not importable)
            info.setdefault("skipped", {})[impl] = str(e)
            continue
        if loop is None:
            samplers[label] = dict(capture_error=got["capture_error"])
            continue
        loops[label] = loop
        samplers[label] = {k: v for k, v in got.items() if k == "logits_addresses"}
    assert "rocsample" in loops, samplers.get("rocsample")
    runs = {label: [] for label in loops}
    order = [label for label in loops if label != "rocsample"]

    def others():
        for label in order:
            runs[label].append(loops[label].run())
        order.append(order.pop(0))

    ours = loops["rocsample"]
    if benchmark is not None:
        benchmark.pedantic(lambda: runs["rocsample"].append(ours.run()), setup=others,
                           rounds=ROUNDS, iterations=1)
    else:
        for _ in range(ROUNDS):
            others()
            runs["rocsample"].append(ours.run())
    for label, r in runs.items():
        samplers[label].update(step_us=statistics.median(x[0] for x in r) * 1e6,
                               wall_step_us=statistics.median(x[1] for x in r) * 1e6,
                               round_step_us=[round(x[0] * 1e6, 1) for x in r])
    fwd = samplers.get("none", {}).get("step_us")
    for label, e in samplers.items():
        if fwd is not None and label != "none" and "step_us" in e:
            e.update(sampling_us=e["step_us"] - fwd,
                     sampling_share=(e["step_us"] - fwd) / e["step_us"])
    info.update(samplers=samplers, forward_us=fwd, **{
        k: samplers["rocsample"][k] for k in ("step_us", "wall_step_us", "sampling_us",
                                              "sampling_share") if k in samplers["rocsample"]})
    return info


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("batch", BATCHES)
def test_decode_loop(benchmark, backend, batch, mode):
    torch, transformers = _needs(backend)
    benchmark.group = f"decode loop batch {batch} {mode}"
    benchmark.extra_info.update(_measure(torch, transformers, batch, mode, benchmark))


def test_decode_tokens_in_range(backend):
    """The loop runs and every sampler returns in-vocabulary tokens (a check, not a timing)."""
    torch, transformers = _needs(backend)
    for impl in IMPLS:
        stream = torch.cuda.Stream()
        try:
            sample, _ = _sampler(impl, torch, transformers, 8, stream)
        except pytest.skip.Exception:
            continue
        loop = Loop(torch, transformers, _model(torch, transformers), 8, sample, stream)
        with torch.cuda.stream(stream), torch.no_grad():
            for _ in range(4):
                loop.step()
        stream.synchronize()
        tok = loop.tok.cpu().numpy()
        assert tok.shape == (8, 1) and np.all((tok >= 0) & (tok < CONFIG["vocab_size"])), impl
