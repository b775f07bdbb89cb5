"""Which kernels a sampling call needs, and their argument lists (the one place they live).

Interface, two functions (the Sampler calls nothing else of this module):

``route(plan, host) -> Route``
    Decides from the host parameter values alone (``host``: a :class:`Host` of four per-row
    arrays, ``None`` for a parameter given as a device array, whose values the host cannot read)
    and the plan. Raises the named ``ValueError`` of a call no kernel serves (a filter on a
    ``filters=False`` plan, top_p past ``MAX_VOCAB_TOP_P``, a forced ``_path`` that cannot serve
    the rows). The ``Route`` is hashable: the binder keys bound launches by the host values that
    decided it, so it is never recomputed on a bound call.

``launches(plan, kernels, route, ops) -> [(kernel, grid, block, args), ...]``
    The launches in stream order; ``kernels`` is the backend's namespace of
    ``rocsample.kernels.sampling.build`` and ``ops`` an :class:`Operands` of device arrays. Every
    array a kernel takes must come from ``ops`` (or be a view of one): the binder re-points the
    caller's arrays by their addresses, whatever the argument lists here are.

Two paths today (both give the same tokens): **fast** (``kernels.sampling_fast``: phase 1, one
launch, plus the tile finalize when some row has top-k) when every parameter is a host value and
every row is greedy, temperature-only, or has ``0 < top_k <= KCAP`` (any top_p, min_p, order);
**general** (``kernels.sampling``, radix selects over the whole row) for everything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocsample import _validate as V
from rocsample.kernels import sampling as K
from rocsample.kernels import sampling_fast as KF

__all__ = ["Host", "Operands", "Route", "check_filters", "launches", "route"]

#: The kernels' namespace per logits dtype (rocsample.kernels.sampling.build): float16 and
#: bfloat16 logits reach the kernels as uint16 bit patterns, widened there exactly.
_KERNEL_VARIANT = {"float32": "float", "float16": "f16", "bfloat16": "bf16"}


@dataclass(frozen=True)
class Host:
    """Host values of the four filter parameters (length-n_rows arrays; None: a device array)."""

    temperature: Any
    top_k: Any
    top_p: Any
    min_p: Any


@dataclass
class Operands:
    """The device arrays of one call (kernel arguments come from here only)."""

    x: Any  # logits (n_rows, n_vocab), float16 and bfloat16 as uint16 bits
    temperature: Any  # float32 (n_rows,)
    top_k: Any  # int64 (n_rows,)
    top_p: Any  # float32 (n_rows,)
    min_p: Any  # float32 (n_rows,)
    seed: Any  # uint64 (n_rows,)
    position: Any  # uint64 (n_rows,)
    tokens: Any  # int32 (n_rows,)
    logprobs: Any  # float32 (n_rows,)
    status: Any  # int32 (n_rows,)
    w: dict  # scratch views by name (SamplingPlan.layout)
    want_lp: bool
    advance_position: bool
    counts: Any  # int32 (n_rows,): the plan's per-row counts of finished phase-1 splits


@dataclass(frozen=True)
class Route:
    """What a call launches. ``fast``: the two-kernel path with ``draw`` (some row draws without
    top-k) and ``any_topk``; else the general path with the passes ``need_k``, ``need_p``,
    ``need_mp`` asks for."""

    fast: bool
    draw: bool = False
    any_topk: bool = False
    need_k: bool = True
    need_p: bool = True
    need_mp: bool = True
    vllm: bool = False


def check_filters(filters: bool, n_vocab: int, top_k, top_p) -> tuple[bool, bool]:
    """(need_k, need_p) of host values (None: a device array); a plan built with
    ``filters=False`` refuses rows that need them."""
    need_k = top_k is None or bool(((top_k > 0) & (top_k < n_vocab)).any())
    need_p = top_p is None or bool((top_p < 1).any())
    if (need_k or need_p) and not filters:
        V.fail("top_k/top_p", "no top-k/top-p on a plan built with filters=False",
               "an active filter")
    return need_k, need_p


def route(plan, host: Host, order: str = "llama") -> Route:
    """The launches a call with these host values needs (see the module docstring)."""
    nv = plan.n_vocab
    need_k, need_p = check_filters(plan.filters, nv, host.top_k, host.top_p)
    need_mp = host.min_p is None or bool((host.min_p > 0).any())
    if need_p and nv > K.MAX_VOCAB_TOP_P:
        V.fail("logits", f"n_vocab <= {K.MAX_VOCAB_TOP_P} with top_p < 1 (fixed-point mass)", nv)
    vllm = order == "vllm"
    fast = _fast_rows(plan, host)
    if fast is not None:
        return Route(True, draw=fast[0], any_topk=fast[1], vllm=vllm)
    return Route(False, need_k=need_k, need_p=need_p, need_mp=need_mp, vllm=vllm)


def _fast_rows(plan, host: Host):
    """(draw, any_topk) when the two-kernel fast path serves every row, else None.

    Needs host parameters (the kernels are chosen from them) and each row greedy,
    temperature-only, or with ``0 < top_k <= KCAP`` (any top_p / min_p / order).
    """
    temp, k, p, mp = host.temperature, host.top_k, host.top_p, host.min_p
    if not plan.fast_ok or temp is None or k is None or p is None or mp is None:
        if plan.path == "fast":
            V.fail("_path", "host parameters for the fast path", "a device parameter array")
        return None
    greedy = temp == 0
    kon = (k > 0) & (k < plan.n_vocab)
    topk = ~greedy & kon & (k <= KF.KCAP)
    race = ~greedy & ~kon & (p >= 1) & (mp <= 0)
    if not bool((greedy | topk | race).all()):
        if plan.path == "fast":
            V.fail("_path", "rows the fast path serves", "a top_p/min_p row without top_k")
        return None
    return bool(race.any()), bool(topk.any())


def launches(plan, kn, r: Route, o: Operands) -> list:
    """The launches of route ``r`` in stream order: [(kernel, grid, block, args)]."""
    n, nv = plan.n_rows, plan.n_vocab
    S, B = plan.splits, plan.block
    w = o.w
    vllm = 1 if r.vllm else 0
    want_lp = 1 if o.want_lp else 0
    rows_grid = max(1, -(-n // B))
    kern = getattr(kn, _KERNEL_VARIANT[plan.dtype])
    L: list = []
    if r.fast:
        # without top-k rows, phase 1's last block per row finishes it (one launch)
        L.append((kern.fast.partials(r.draw, want_lp), (S, n), B,
                  (o.x, nv, plan.chunk, o.temperature, o.top_k, o.seed, o.position, plan.tpt,
                   w["pf"], w["pi"], w["tm"], 0 if r.any_topk else 1, o.counts, o.tokens,
                   o.logprobs, o.status)))
        if r.any_topk:
            L.append((kern.fast._sample_finalize_fast_kernel, n, plan.fast_final_block,
                      (o.x, nv, S, plan.chunk, plan.tpt, plan.cap, o.temperature, o.top_k,
                       o.top_p, o.min_p, vllm, o.seed, o.position, want_lp, w["pf"], w["pi"],
                       w["tm"], o.tokens, o.logprobs, o.status)))
    else:
        _general(L, plan, kern, r, o, rows_grid, vllm, want_lp)
    if o.advance_position:
        L.append((kn._advance_position_kernel, rows_grid, B, (o.position, n)))
    return L


def _general(L, plan, kn, r: Route, o: Operands, rows_grid, vllm, want_lp) -> None:
    """The general path's launches (stats, radix selects, draw) appended to ``L``."""
    n, nv = plan.n_rows, plan.n_vocab
    S, B, FB = plan.splits, plan.block, plan.final_block
    w = o.w
    chunk = plan.chunk
    x = o.x
    L.append((kn._sample_partials_kernel, (S, n), B,
              (x, nv, chunk, o.temperature, o.top_k, o.top_p, o.min_p, o.seed, o.position,
               want_lp, w["pf"], w["pi"])))
    need_sel = r.need_k or r.need_p
    hn = w["hist_n"] if need_sel else w["si"]
    hq = w["hist_q"] if need_sel else w["si"]
    L.append((kn._sample_finalize_kernel, n, FB,
              (x, nv, S, o.temperature, o.top_k, o.top_p, o.min_p, vllm, w["pf"], w["pi"],
               o.tokens, o.logprobs, o.status, w["si"], w["sf"],
               plan.nbins if need_sel else 0, hn, hq)))
    if need_sel:
        phases = ([False] if r.need_k else []) + ([True] if r.need_p else [])
        for is_p in phases:
            if is_p:
                L.append((kn._select_begin_kernel, rows_grid, B, (o.top_p, nv, w["si"])))
            for pi_, (shift, width) in enumerate(plan.radix):
                first = pi_ == 0
                last = pi_ == len(plan.radix) - 1
                L.append((kn._select_hist_kernel, (S, n), B,
                          (x, nv, chunk, shift, width, first, w["si"], w["sf"], hn, hq)))
                L.append((kn._select_step_kernel, n, FB,
                          (nv, width, first, last, o.top_p, w["si"], w["sf"], hn, hq)))
            L.append((kn._tie_cut_kernel, n, FB, (x, nv, w["si"], w["sf"])))
    if r.need_k or r.need_p or r.need_mp:
        L.append((kn._draw_partials_kernel, (S, n), B,
                  (x, nv, chunk, o.seed, o.position, w["si"], w["sf"], w["pf"], w["pi"])))
        L.append((kn._draw_finalize_kernel, n, FB,
                  (x, nv, S, w["si"], w["sf"], w["pf"], w["pi"], o.tokens, o.logprobs,
                   o.status)))
