"""Which kernels a sampling call needs, and their argument lists (the one place they live).

Interface, two functions (the Sampler calls nothing else of this module):

``route(plan, host) -> Route``
    Decides from the host parameter values alone (``host``: a :class:`Host` of four per-row
    arrays, ``None`` for a parameter given as a device array, whose values the host cannot read)
    and the plan. Raises the named ``ValueError`` of a call no kernel serves (a filter on a
    ``filters=False`` plan, top_p past ``MAX_VOCAB_TOP_P``). The ``Route`` is hashable: the binder keys bound launches by the host values that
    decided it, so it is never recomputed on a bound call.

``launches(plan, kernels, route, ops) -> [(kernel, grid, block, args), ...]``, and
``after(route, advance_position)``, their branches (None: a chain)
    The launches in stream order; ``kernels`` is the backend's namespace of
    ``rocsample.kernels.sampling.build`` and ``ops`` an :class:`Operands` of device arrays. Every
    array a kernel takes must come from ``ops`` (or be a view of one): the binder re-points the
    caller's arrays by their addresses, whatever the argument lists here are.

One path serves every row: phase 1 (``kernels.sampling_fast``), then the kernels the rows'
modes need (:func:`modes`: the tile finalize for ``0 < top_k <= TILE_KMAX`` chains, the
histogram pass of ``kernels.sampling_hist`` for min_p-only and every other filtered row, its
select pass for the filtered rows but min_p-only ones); with a device parameter array all of
them, each row deciding on the device by the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rocsample import _validate as V
from rocsample.kernels import sampling as K
from rocsample.kernels import sampling_fast as KF

__all__ = ["Host", "Operands", "Route", "TILE_KMAX", "after", "check_filters", "launches", "modes",
           "route"]

#: Largest top_k the tile finalize serves (``kernels.sampling_fast.KCAP``); larger ones take the
#: histogram path. Tests lower it to reach that path at small vocabularies.
TILE_KMAX = KF.KCAP

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
    # the plan's per-row counts of finished splits: (three int32 (n_rows,) for the routes that
    # launch with ``plan.splits``, three for the drawing routes' ``plan.splits_draw``; the same
    # arrays where the two counts are equal): each counter only ever sees one split count
    counts: Any


@dataclass(frozen=True)
class Route:
    """What a call launches: phase 1 (``draw``: its variant for unfiltered rows), and the tile
    finalize (``tile``), the histogram pass (``hist``) and the select pass (``select``) as some
    row needs them, with ``kcap`` the tile path's top_k limit; ``dev``: the rows decide their
    modes on the device (a parameter given as a device array)."""

    draw: bool = False
    tile: bool = False
    hist: bool = False
    select: bool = False
    kcap: int = KF.KCAP
    vllm: bool = False
    dev: bool = False


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
    _need_k, need_p = check_filters(plan.filters, nv, host.top_k, host.top_p)
    if need_p and nv > K.MAX_VOCAB_TOP_P:
        V.fail("logits", f"n_vocab <= {K.MAX_VOCAB_TOP_P} with top_p < 1 (fixed-point mass)", nv)
    vllm = order == "vllm"
    kcap = int(min(TILE_KMAX, KF.KCAP))
    m = modes(plan, host)
    if m is None:
        return Route(True, True, True, True, kcap, vllm, dev=True)
    select = bool((m == KF.MODE_HIST).any())
    return Route(draw=bool((m == KF.MODE_RACE).any()), tile=bool((m == KF.MODE_TILE).any()),
                 hist=select or bool((m == KF.MODE_MINP).any()), select=select, kcap=kcap,
                 vllm=vllm)


def modes(plan, host: Host):
    """Each row's mode (``kernels.sampling_fast.row_mode``, the kernels' own rule) from host
    values; None when a parameter is a device array (the kernels then decide per row)."""
    t, k, p, mp = host.temperature, host.top_k, host.top_p, host.min_p
    if t is None or k is None or p is None or mp is None:
        return None
    greedy = ~(t > 0)
    kon = (k > 0) & (k < plan.n_vocab)
    tile = ~greedy & kon & (k <= min(TILE_KMAX, KF.KCAP))
    hist = ~greedy & ~tile & (kon | (p < 1))
    minp = ~greedy & ~tile & ~hist & (mp > 0)
    m = np.full(t.shape, KF.MODE_RACE, np.int64)
    m[greedy] = KF.MODE_GREEDY
    m[tile] = KF.MODE_TILE
    m[hist] = KF.MODE_HIST
    m[minp] = KF.MODE_MINP
    return m


def launches(plan, kn, r: Route, o: Operands) -> list:
    """The launches of route ``r`` in stream order: [(kernel, grid, block, args)]."""
    n, B = plan.n_rows, plan.block
    vllm = 1 if r.vllm else 0
    want_lp = 1 if o.want_lp else 0
    rows_grid = max(1, -(-n // B))
    kern = getattr(kn, _KERNEL_VARIANT[plan.dtype])
    L: list = []
    _fast(L, plan, kern, r, o, vllm, want_lp)
    if o.advance_position:
        L.append((kn._advance_position_kernel, rows_grid, B, (o.position, n)))
    return L


def after(r: Route, advance_position: bool):
    """Per launch of :func:`launches`, ``(lane, the launches it must follow)``, where a route has
    both the tile finalize and the histogram path (device parameter arrays, or a batch mixing
    top-k <= TILE_KMAX rows with others): they serve disjoint rows (each block leaves at once on
    a row that is not its mode's) and only read phase 1's work, so the histogram and select
    passes (lane 1) run beside the tile finalize (lane 0) instead of after it. A position
    advance follows both. None where the launches are a chain."""
    if not (r.tile and r.hist):
        return None
    deps = [(0, ()), (0, (0,)), (1, (0,))]  # phase 1, tile finalize, histogram pass
    if r.select:
        deps.append((1, (2,)))
    if advance_position:
        deps.append((0, (1, len(deps) - 1)))
    return tuple(deps)


def _fast(L, plan, kn, r: Route, o: Operands, vllm, want_lp) -> None:
    """Phase 1, then the tile finalize, histogram and select passes the route asks for."""
    n, nv = plan.n_rows, plan.n_vocab
    B = plan.block
    # one split count for every launch of the route (phase 1's per-split work is what the
    # others read): the drawing variant's where the route launches it
    S, chunk = (plan.splits_draw, plan.chunk_draw) if r.draw else (plan.splits, plan.chunk)
    w = o.w
    temp, topk, topp, minp = o.temperature, o.top_k, o.top_p, o.min_p
    # a plan without filters has no histograms: its rows never reach the code using them
    hc, hm, cand = (w["hist_n"], w["hist_q"], w["cand"]) if plan.filters else (w["si"],) * 3
    c1, c2, c3 = o.counts[1 if r.draw else 0]
    # the drawing variant's fast pass where each thread streams FAST_MIN_QUADS quads or more
    fast = r.draw and chunk >= 4 * KF.FAST_MIN_QUADS * B
    L.append((kn.fast.partials(r.draw, want_lp, fast), (S, n), B,
              (o.x, nv, chunk, temp, topk, topp, minp, o.seed, o.position, plan.tpt, r.kcap,
               w["pf"], w["pi"], w["tm"], c1, w["si"], w["sf"], hc, hm, o.tokens, o.logprobs,
               o.status)))
    if r.tile:
        L.append((kn.fast._sample_finalize_fast_kernel, n, plan.fast_final_block,
                  (o.x, nv, S, chunk, plan.tpt, plan.cap, r.kcap, temp, topk, topp, minp,
                   vllm, o.seed, o.position, want_lp, w["pf"], w["pi"], w["tm"], o.tokens,
                   o.logprobs, o.status)))
    if r.hist:
        L.append((kn.hist._sample_hist_kernel, (S, n), B,
                  (o.x, nv, chunk, temp, topk, topp, minp, vllm, o.seed, o.position,
                   want_lp, plan.tpt, r.kcap, w["tm"], w["pi"], w["si"], w["sf"], hc, hm, cand,
                   plan.cap, c2, o.tokens, o.logprobs, o.status)))
    if r.select:
        L.append((kn.hist._sample_select_kernel, (S, n), B,
                  (o.x, nv, chunk, temp, topk, topp, minp, vllm, o.seed, o.position,
                   want_lp, r.kcap, w["pi"], w["si"], w["sf"], hc, hm, cand, plan.cap, c3,
                   o.tokens, o.logprobs, o.status)))
