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

A call whose every row is greedy and wants no logprob is one launch of phase 1's argmax kernel
(``kernels.sampling_fast``'s ``argmax()``, at the plan's ``splits_argmax`` x ``block_argmax``).
Otherwise one path serves every row: phase 1 (``kernels.sampling_fast``), then the kernels the rows'
modes need (:func:`modes`: the tile finalize for ``0 < top_k <= TILE_KMAX`` chains, or its
large form for chains up to ``KF.KCAP_L`` where the plan's tile maxima make the candidates fit
(:func:`tile_large_fits`; host parameters only), after its tau (``KF.tau()``, a block a
row) and its candidate gather (``KF.gather()``, at phase 1's grid), the histogram pass of ``kernels.sampling_hist`` for min_p-only and every other filtered row, its
select pass for the filtered rows but min_p-only ones, with the nucleus pass before them where
host parameters have top-p-only rows (:data:`NUCLEUS`: phase 1 draws those rows and the pass
finishes most of them; where they are the only histogram-path rows and a row has at most
:data:`NUC_FINISH_VOCAB` logits, phase 1 keeps four best scores (two in batches of at most
:data:`NUC_FINISH_TOP2_ROWS`) and the pass's finishing form finishes the rest too, and neither
pass is launched: ``Route.finish``); top-k-only rows (top_k past the tile path's limit) take
the nucleus pass's routes the same way in calls without top-p-only rows, through its rank form
(:data:`NUC_TOPK`, ``Route.rank``); with a device parameter array all of them but the nucleus
pass, each row deciding on the device by the same rule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from rocsample import _validate as V
from rocsample.kernels import sampling as K
from rocsample.kernels import sampling_fast as KF

__all__ = ["Host", "Operands", "Route", "TILE_KMAX", "TILE_LARGE", "after", "check_filters",
           "conditional", "large_room", "launches", "modes", "route", "tile_large_fits"]

#: Largest top_k the tile finalize serves (``kernels.sampling_fast.KCAP``); larger ones take the
#: histogram path. Tests lower it to reach that path at small vocabularies.
TILE_KMAX = KF.KCAP
#: The tile finalize's large form (top_k up to ``KF.KCAP_L``, ``KF.finalize(True)``): None, for
#: host parameters with a row's top_k in (TILE_KMAX, KCAP_L] in a batch of at least
#: ``_LARGE_MIN_ROWS`` rows where :func:`tile_large_fits`;
#: True, for every call with a top-k row up to KCAP_L (tests: the large form at small shapes);
#: False, never (those rows take the histogram path). ``ROCSAMPLE_TILE_LARGE=1`` / ``0`` sets
#: True / False at import (device timings).
TILE_LARGE = {"1": True, "0": False}.get(os.environ.get("ROCSAMPLE_TILE_LARGE", ""))
#: The share of the large form's candidate list the expected candidates may fill (the rest is
#: room for rows whose largest tokens crowd into fewer tiles than random ones; past the list,
#: the radix fallback, exact but one block reading the row five times).
_LARGE_FILL = 0.7
#: Fewest rows for the large form: one block a row sorts and draws about 1.3K candidates, which
#: a batch of rows spreads over the device and a few rows do not (H200, top_k 1000,
#: graph-timed, bench/results/nvidia-h200-75ef497+large-t1.json against the histogram path's
#: b1a5c3c run: 64 x 151936 102.2 us against 137.1, 64 x 262144 119.3 against 205.6; but
#: 1 x 151936 86.1 against 35.4, 8 x 151936 88.8 against 50.1). With its candidates gathered
#: by a launch of their own (H100, forty-third session, bench/results/
#: nvidia-h100-s43-gather-ab.txt): 64 x 151936 75.9 us against the rank route's 87.9,
#: 64 x 262144 116.0 against 133.6; 8 x 151936 49.8 against 30.9, 8 x 262144 52.8 against 34.0.
_LARGE_MIN_ROWS = 64


#: The large form's FINE layout (phase 1's FINE variants: tiles of ``SamplingPlan.tile_len``
#: consecutive tokens, ``gather(fine=True)``) for rows wider than ``_FINE_MIN_VOCAB``: from
#: ``_FINE_MIN_ROWS`` rows, and at fewer where phase 1's strided tiles are not expected to hold
#: the form's largest top_k (:func:`fine_rule`); else phase 1's strided tiles. H100, top_k 1000
#: alone, graph-timed, the bench's inputs (bench/results/nvidia-h100-s47-fine-ab.txt, one
#: machine): 128 x 151936 93.0 us with it against 98.2 strided; 256 x 151936 144.1 against the
#: rank route's 202.5 (the strided tiles' expected candidates overflow the list there); but 64 x
#: 151936 63.8 against 53.7 strided and 64 x 262144 93.3 against 89.7. At 32000 logits the rank
#: route's finishing form is faster (forty-sixth session: 64 x 32000 25.0 against 35.9, 256 x
#: 32000 48.5 against 59.6); so is it at 8 x 151936 (30.8 against 39.2). (Phase 1's FINE
#: variants at one unit a round, ``KF.FINE_UNITS``, were no faster at any of these shapes.)
#: ``ROCSAMPLE_TILE_FINE`` (1: wherever the large form runs; 0: never; read at import, for
#: timings and tests; a plan reads it when made).
TILE_FINE = {"1": True, "0": False}.get(os.environ.get("ROCSAMPLE_TILE_FINE", ""))
_FINE_MIN_ROWS = 128
_FINE_MIN_VOCAB = 32768


def fine_rule(n_rows: int, n_vocab: int, tiles: int) -> bool:
    """Whether a plan of this shape whose phase 1 writes ``tiles`` strided tile maxima a row (at
    the fewer of its two split counts) gives the large form the FINE layout
    (:data:`TILE_FINE`, else rows wider than :data:`_FINE_MIN_VOCAB` logits, from
    :data:`_FINE_MIN_ROWS` rows or where the strided tiles would not hold ``KF.KCAP_L``'s
    expected candidates: :func:`tile_large_fits`). Before the rule's second half, 129-255 rows of
    151936 logits (5 splits on 132 SMs: 1280 strided tiles) took neither layout and top_k 1000
    fell to the rank route; with it, on an H100 (forty-eighth session, bench/results/
    nvidia-h100-s48-route-ab.txt): 192 x 151936 121.0 us against the rank route's 144.6, 192 x
    262144 194.4 against 276.5, 128 x 151936 91.8 against 140.5."""
    if TILE_FINE is not None:
        return TILE_FINE
    return n_vocab > _FINE_MIN_VOCAB and (n_rows >= _FINE_MIN_ROWS
                                          or not tile_large_fits(tiles, KF.KCAP_L))


def large_room(n_rows: int) -> bool:
    """Whether a plan of ``n_rows`` rows needs the large tile finalize's scratch (``gc``,
    ``gt``): where :data:`TILE_LARGE` (read when the plan is made) lets the router take that
    form at that row count. A plan without it never takes the form."""
    return TILE_LARGE is True or (TILE_LARGE is None and n_rows >= _LARGE_MIN_ROWS)


#: The nucleus pass for top-p-only rows of host-parameter calls: phase 1 draws them too (its
#: TOP2 variant: the row's two best Gumbel scores), then one more read
#: (``sampling_hist._sample_nucleus_kernel``) decides whether either survives top-p and finishes
#: the row; rows it cannot decide take the histogram and select passes as before.
#: ``ROCSAMPLE_NUCLEUS=0`` turns it off (those rows take the histogram path from phase 1 on).
NUCLEUS = os.environ.get("ROCSAMPLE_NUCLEUS", "1") != "0"
#: Top-k-only rows (top_k past the tile path's limit, no top_p or min_p) on the nucleus pass's
#: routes, in calls without top-p-only rows: phase 1 draws them (its TOP2 / TOP4 variants draw
#: both kinds) and the pass's rank form (``sampling_hist._sample_rank_kernel`` and its finishing
#: form) counts the tokens before each of the best, exactly, so the first of them with fewer
#: than top_k before it is the token; a row none of them is goes on through the histogram path
#: as a top-p row does. ``ROCSAMPLE_NUC_TOPK=0`` leaves them to the histogram path (timings).
NUC_TOPK = os.environ.get("ROCSAMPLE_NUC_TOPK", "1") != "0"
#: Fewest drawing splits a row for the nucleus pass (``ROCSAMPLE_NUC_MIN_SPLITS``, for timings).
#: A row the pass leaves used to be finished by the histogram and select passes at the drawing
#: splits, at one row's latency: with a single split (one block over the whole row) as much as
#: those passes over the whole batch (H200, 256 x 32000, top_p 0.95: 217.6 us with one such
#: row, against 139.0 for the histogram path alone). Routes whose histogram-path rows are all
#: top-p-only rows now finish them row-strided (``Route.strided``) in short splits, and the pass
#: serves one split too: 256 x 32000 120.2 us against the histogram path's 134.2 (H200,
#: graph-timed, bench/results/nvidia-h200-d0eed4d-variants.txt).
_NUC_MIN_SPLITS = int(os.environ.get("ROCSAMPLE_NUC_MIN_SPLITS") or 1)
#: Widest rows whose nucleus routes finish every row in the nucleus pass (``Route.finish``):
#: phase 1 keeps four best scores of each top-p-only row (its TOP4 form; two up to
#: NUC_FINISH_TOP2_ROWS rows), a row the pass's bounds still leave (about 0.05**4 of rows at
#: top_p 0.95 with four, 0.05**2 with two) is finished by the row's last block alone, by the
#: histogram and select passes' code over the whole row (``sampling_hist.
#: _sample_nucleus_finish_kernel``), and neither pass is launched: two launches fewer every
#: call. One block finishing a left row costs about 145 us at 32000 logits (H200), five times as
#: much at 151936, hence the bound. ``ROCSAMPLE_NUC_FINISH_VOCAB`` (0: never; timings).
NUC_FINISH_VOCAB = int(os.environ.get("ROCSAMPLE_NUC_FINISH_VOCAB") or 32768)
#: Most rows whose finishing route keeps phase 1's TOP2 form (two best scores a row; more rows:
#: the TOP4 form, ``Route.top4``). The TOP4 form's merges cost a fixed 2-2.6 us (H200, top_p
#: 0.95 alone, kprofile graph-timed: 1 x 32000 16.4 -> 18.4 us, 8 x 32000 17.3 -> 19.9) against
#: about 145 us for each row two best scores leave, 0.1-0.4% of rows at top_p 0.95: less on
#: average up to about 8 rows; at 64 x 32000 35.2 -> 32.4, 256 x 32000 105.5 -> 76.1
#: (bench/results/nvidia-h200-s26-top4-ab.txt). ``ROCSAMPLE_NUC_FINISH_TOP2_ROWS`` (timings).
NUC_FINISH_TOP2_ROWS = int(os.environ.get("ROCSAMPLE_NUC_FINISH_TOP2_ROWS") or 8)
#: The same for the rank form's finishing routes (top-k-only rows): 0, the TOP4 form at every
#: row count. A top-k row's best scores fall outside the top k far more often than a top-p row's
#: outside the nucleus: on the benchmark's N(0, 3**2) logits at temperature 1, the drawn token's
#: logit is about N(9, 3**2), so W1 lies outside the top 1000 of 32000 (logits above 5.6) in
#: about 12-14% of rows, outside the top 300 in 27-28%: with two best scores about 2% and 7-8%
#: of rows would be left to the finish in one block, with four about 0.05% and 0.3-0.8%
#: (tools/rank_left_rate.py; untimed, docs/PERF_NOTES.md "Thirty-first session").
#: ``ROCSAMPLE_NUC_RANK_TOP2_ROWS`` (timings).
NUC_RANK_TOP2_ROWS = int(os.environ.get("ROCSAMPLE_NUC_RANK_TOP2_ROWS") or 0)
#: Most rows whose plain rank pass (rows wider than NUC_FINISH_VOCAB) keeps phase 1's TOP2
#: form (two best scores a row); more rows: its TOP4 form and the pass over four
#: (``sampling_hist._sample_rank4_kernel``, ``Route.top4``). At 151936-262144 logits a top-k
#: row's two best leave the top 1000 in 10-15% of rows, its four in about 1.6%
#: (tools/rank_left_rate.py), and each row left costs the histogram and select passes; the
#: TOP4 merges and the two more sums cost about 3 us every call. H200, the benchmark's top_k
#: 1000 alone (its inputs, graph-timed; bench/results/nvidia-h200-s33-rank-ab.txt), two against
#: four: 1 x 151936 20.9 / 23.8 us, 1 x 262144 21.2 / 24.2, 8 x 151936 56.1 / 31.8 (one row
#: left by two best), 8 x 262144 34.3 / 37.5 (none left), 256 x 151936 349.3 / 335.5, 256 x
#: 262144 555.4 / 515.0. With two best a one-row call has a row left in about an eighth of
#: calls, an eight-row call in about two thirds (1 - 0.87**8): two best up to one row, four
#: past it. ``ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS`` (0: every row count; timings).
NUC_RANK_PLAIN_TOP2_ROWS = int(os.environ.get("ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS") or 1)


def tile_large_fits(tiles: int, k: int) -> bool:
    """Whether a row of ``tiles`` tile maxima is expected to gather its top ``k`` within the
    large form's candidate list: the tau of the tile finalize (the k-th largest tile maximum)
    admits about ``-tiles * log(1 - k / tiles)`` tokens when the largest tokens fall in tiles at
    random (the tiles that many random tokens hit number k); lowering tau to its bin's edge (16
    bins an octave of key distance) adds half a bin's tokens on average, which the list's
    unfilled share (``1 - _LARGE_FILL``) holds. 64 x 151936 (2560 tiles), k = 1000: about 1270
    (the third session counted about 1140 candidates at 4096 tiles, where this says 1146)."""
    if k >= tiles:
        return False
    expect = -tiles * float(np.log1p(-k / tiles))
    return expect <= _LARGE_FILL * KF.CAND_MAX_L
#: The kernels' namespace per logits dtype (rocsample.kernels.sampling.build): float16 and
#: bfloat16 logits reach the kernels as uint16 bit patterns, widened there exactly.
_KERNEL_VARIANT = {"float32": "float", "float16": "f16", "bfloat16": "bf16"}
#: Fewest rows for the histogram lane of device parameter routes as a conditional node under a
#: capture (:func:`conditional`). Its blocks, launched beside the tile finalize's, leave at once
#: where no row needs them, but they hold the SMs the finalize's 1024-thread blocks wait for; the
#: node (a one-thread gate, then the node itself) costs more than the two empty launches where
#: the finalize is short. H200, chain_dev graph-timed (bench/results/nvidia-h200-s21-*.txt): 64 x
#: 151936 32.7 us against 34.8, 64 x 32000 20.9 against 20.8, 1 x 151936 20.5 against 20.1,
#: 1 x 32000 19.1 against 18.2. ``ROCSAMPLE_COND_MIN_ROWS`` (timings).
COND_MIN_ROWS = int(os.environ.get("ROCSAMPLE_COND_MIN_ROWS") or 32)
#: Most rows for which the histogram and select passes of a nucleus route that launches them
#: row-strided (``Route.strided``: every histogram-path row is the pass's, so every row left
#: asks for them: ``need_lane`` in the pass's last block) become a conditional node under a
#: capture (:func:`conditional`), run only when the pass left a row. Where it leaves none (most
#: calls: top_p 0.95 alone leaves about 0.05**2 of rows, top_k 1000 alone over four best about
#: 1.6% at 151936-262144 logits), the two launches cost their empty blocks: about 4.5 us each
#: on an H100 at 8 x 151936 and 8 x 262144 (ncu, bench/results/nvidia-h100-s33-ncu-rank.csv),
#: against one one-thread gate launch. In a graph that saved nothing: H100, the bench's top_k
#: 1000 and top_p 0.95 alone at 1 and 8 rows (bench/results/nvidia-h100-s34-cond-ab.md), the
#: same within 0.3 us either way (1 x 151936 top_p 21.3 us off, 21.6 on; 8 x 151936 top_k 31.4
#: off, 31.2 on); 64 and 256 rows untimed. So off by default (0: no row count);
#: ``ROCSAMPLE_NUC_COND_MAX_ROWS`` (timings).
NUC_COND_MAX_ROWS = int(os.environ.get("ROCSAMPLE_NUC_COND_MAX_ROWS") or 0)


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
    # launch with ``plan.splits``, three for the drawing routes' ``plan.splits_draw`` (the same
    # arrays where the two counts are equal), two for the row-strided histogram and select passes
    # (``plan.splits_fin``), one for phase 1's argmax kernel (``plan.splits_argmax``), one for
    # the nucleus pass (``plan.splits_nuc``)): each counter only ever sees one split count
    counts: Any
    # int32 (1,): a launch's requests for its conditional lane (``kernels.graph_cond``; the
    # plan's own, 0 between launches)
    cflag: Any = None
    # uint64 (n_rows,): phase 1's argmax kernel's per-row slot (the plan's own, 0 between
    # launches)
    gslot: Any = None


@dataclass(frozen=True)
class Route:
    """What a call launches: phase 1 (``draw``: its variant for unfiltered rows), and the tile
    finalize (``tile``), the nucleus pass (``nuc``, with phase 1's TOP2 variant), the histogram
    pass (``hist``) and the select pass (``select``) as some row needs them, with ``kcap`` the
    tile path's top_k limit; ``dev``: the rows decide their modes on the device (a parameter
    given as a device array)."""

    draw: bool = False
    tile: bool = False
    hist: bool = False
    select: bool = False
    kcap: int = KF.KCAP
    vllm: bool = False
    dev: bool = False
    # the tile finalize's large form (kcap is then KF.KCAP_L), its candidates listed by the
    # gather kernel launched before it
    large: bool = False
    # (large) phase 1's FINE variant and the gather's FINE form (tiles of plan.tile_len
    # consecutive tokens: the plan's ``fine``, which fine_rule set when it was made)
    fine: bool = False
    nuc: bool = False  # phase 1's TOP2 variant and the nucleus pass (top-p-only rows)
    # the histogram and select passes row-strided at the plan's splits_fin x rows_fin (routes
    # with the nucleus pass whose histogram-path rows are all top-p-only, no min_p-only rows)
    strided: bool = False
    # such a route of rows of at most NUC_FINISH_VOCAB logits: the nucleus pass finishes every
    # row (its finishing form), and neither the histogram nor the select pass is launched
    finish: bool = False
    # (finish) phase 1 keeps four best scores of each of the pass's rows (its TOP4 form): more
    # than NUC_FINISH_TOP2_ROWS rows (NUC_RANK_TOP2_ROWS for the rank form); (rank, not
    # finish) more than NUC_RANK_PLAIN_TOP2_ROWS rows, with the plain rank pass over four
    top4: bool = False
    # (nuc) the pass's rank form: its rows are top-k-only (a call with no top-p-only row)
    rank: bool = False


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
    kcap, large = tile_limit(plan, host)
    m = modes(plan, host, kcap)
    fine = large and plan.fine
    if m is None:
        return Route(True, True, True, True, kcap, vllm, dev=True, large=large, fine=fine)
    select = bool((m == KF.MODE_HIST).any())
    tile = bool((m == KF.MODE_TILE).any())
    hrow = m == KF.MODE_HIST
    # the pass's rows: the top-p-only ones, or where there are none the top-k-only ones (its
    # rank form); the others go on through the histogram path
    nrow = nuc_rows(plan, host) & hrow
    rank = not bool(nrow.any())
    if rank:
        nrow = rank_rows(plan, host) & hrow
    nuc = nucleus_on(plan) and bool(nrow.any())
    rank = rank and nuc
    # (the rows the pass leaves, row-strided: a few blocks a row in short splits, each looping
    # over the rows left; the rank pass's too, at any row count: with four best past one row
    # (NUC_RANK_PLAIN_TOP2_ROWS) about 1.6% of wide top-k rows are left, and top_k 1000 alone
    # on an H100 took 230.6 us at 256 x 151936 and 407.2 at 256 x 262144 against about 361 and
    # 551 with those rows at phase 1's splits, 4 blocks a row (bench/results/
    # nvidia-h100-s33-rank-variants.txt, nvidia-h100-s33-ncu-rank.csv; with two best, 27 and 38
    # rows left, the thirty-second session had measured the reverse)
    strided = nuc and bool((nrow == hrow).all()) and not bool((m == KF.MODE_MINP).any())
    if strided and nv <= NUC_FINISH_VOCAB:
        return Route(draw=True, tile=tile, kcap=kcap, vllm=vllm, large=large and tile,
                     fine=fine and tile, nuc=True, finish=True, rank=rank,
                     top4=plan.n_rows > (NUC_RANK_TOP2_ROWS if rank else NUC_FINISH_TOP2_ROWS))
    return Route(draw=nuc or bool((m == KF.MODE_RACE).any()), tile=tile,
                 hist=select or bool((m == KF.MODE_MINP).any()), select=select, kcap=kcap,
                 vllm=vllm, large=large and tile, fine=fine and tile, nuc=nuc, strided=strided,
                 rank=rank,
                 top4=rank and plan.n_rows > NUC_RANK_PLAIN_TOP2_ROWS)


def nucleus_on(plan) -> bool:
    """Whether routes of this plan take the nucleus pass for top-p-only rows (:data:`NUCLEUS`,
    and rows split in at least ``_NUC_MIN_SPLITS`` for the drawing variant)."""
    return NUCLEUS and plan.splits_draw >= _NUC_MIN_SPLITS


def nuc_rows(plan, host: Host):
    """The top-p-only rows of host values (``kernels.sampling_fast.row_nuc`` of a MODE_HIST
    row, top_k off): temperature > 0, top_p < 1, neither top_k nor min_p."""
    t, k, p, mp = host.temperature, host.top_k, host.top_p, host.min_p
    return (t > 0) & (p < 1) & ~((k > 0) & (k < plan.n_vocab)) & ~(mp > 0)


def rank_rows(plan, host: Host):
    """The top-k-only rows of host values the rank pass may serve (``row_nuc`` of a MODE_HIST
    row, top_k on: past the tile path's limit): temperature > 0, top_k in (0, n_vocab),
    neither top_p nor min_p; none where :data:`NUC_TOPK` is off."""
    t, k, p, mp = host.temperature, host.top_k, host.top_p, host.min_p
    return (t > 0) & (k > 0) & (k < plan.n_vocab) & ~(p < 1) & ~(mp > 0) & NUC_TOPK


def tile_limit(plan, host: Host) -> tuple[int, bool]:
    """(the tile finalize's top_k limit, whether its large form serves the call)."""
    small = int(min(TILE_KMAX, KF.KCAP))
    t, k = host.temperature, host.top_k
    if TILE_LARGE is False or not plan.large:
        return small, False
    if t is None or k is None:  # device arrays: the rows decide on the device
        return (KF.KCAP_L, True) if TILE_LARGE else (small, False)
    ks = k[(t > 0) & (k > 0) & (k < plan.n_vocab) & (k <= KF.KCAP_L)]
    if ks.size == 0:
        return small, False
    if TILE_LARGE:
        return KF.KCAP_L, True
    kmax = int(ks.max())
    if plan.n_rows < _LARGE_MIN_ROWS:
        return small, False
    # the tile maxima of the route's phase 1 (strided, or its FINE layout of plan.tile_len
    # tokens a tile: plan.fine): the drawing variant's splits where a row is
    # temperature-only (the route launches that variant then)
    race = True
    if host.top_p is not None and host.min_p is not None:
        race = bool(((t > 0) & ~((k > 0) & (k < plan.n_vocab)) & ~(host.top_p < 1)
                     & ~(host.min_p > 0)).any()) or (nucleus_on(plan)
                                                      and bool(nuc_rows(plan, host).any()))
    if plan.fine:
        tiles = (plan.splits_draw * plan.fine_tiles(plan.chunk_draw) if race
                 else plan.splits * plan.fine_tiles(plan.chunk))
    else:
        tiles = (plan.splits_draw if race else plan.splits) * plan.tpt
    if kmax > small and tile_large_fits(tiles, kmax):
        return KF.KCAP_L, True
    return small, False


def modes(plan, host: Host, kcap: int | None = None):
    """Each row's mode (``kernels.sampling_fast.row_mode``, the kernels' own rule) from host
    values; None when a parameter is a device array (the kernels then decide per row). ``kcap``:
    the tile limit :func:`tile_limit` gives (computed here when not given)."""
    t, k, p, mp = host.temperature, host.top_k, host.top_p, host.min_p
    if t is None or k is None or p is None or mp is None:
        return None
    greedy = ~(t > 0)
    kon = (k > 0) & (k < plan.n_vocab)
    if kcap is None:
        kcap = tile_limit(plan, host)[0]
    tile = ~greedy & kon & (k <= kcap)
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
    top-k <= TILE_KMAX rows with others): they serve disjoint rows (a block leaves a row that
    is not its mode's: the tile finalize's after its split reduction, whose values it then
    drops, so what it read there of the other lane's scratch is never used) and only use phase
    1's work, so the histogram and select passes (lane 1) run beside the tile finalize (lane 0)
    instead of after it. A position advance follows both. None where the launches are a
    chain."""
    if not (r.tile and r.hist):
        return None
    deps = [(0, ())]  # phase 1
    if r.large:
        deps.append((0, (0,)))  # the large finalize's tau
        deps.append((0, (1,)))  # its gather
    deps.append((0, (len(deps) - 1,)))  # the tile finalize
    fin = len(deps) - 1
    deps.append((1, (0,)))  # the nucleus or histogram pass
    if r.nuc:
        deps.append((1, (len(deps) - 1,)))  # the histogram pass
    if r.select:
        deps.append((1, (len(deps) - 1,)))
    if advance_position:
        deps.append((0, (fin, len(deps) - 1)))
    return tuple(deps)


def conditional(plan, r: Route):
    """The launch indices (of :func:`launches`) of the histogram and select passes of a device
    parameter route (each row decides its mode on the device; phase 1 asks for the passes,
    ``kernels.graph_cond.need_lane``) in a batch of at least :data:`COND_MIN_ROWS` rows, or of a
    nucleus route that launches them row-strided (the pass asks for each row it leaves) in a
    batch of at most :data:`NUC_COND_MAX_ROWS`. Under a stream capture on CUDA they become the
    body of a conditional node, after one launch of ``_lane_gate_kernel`` that runs it only when
    some row asked (``GpuBackend.conditional``); everywhere else they are launched as before.
    None: launched as before (other host-value routes, where the host knows whether they are
    needed, or a batch outside those bounds)."""
    if not (r.hist and r.select):
        return None
    if r.dev:
        if plan.n_rows < COND_MIN_ROWS:
            return None
    elif not (r.nuc and r.strided and plan.n_rows <= NUC_COND_MAX_ROWS):
        # (only where every histogram-path row is the pass's: phase 1 asks for none of the
        # rows it draws for the pass, which the pass of the other kind would leave unasked)
        return None
    first = 1 + int(r.tile) + 2 * int(r.tile and r.large) + int(r.nuc)
    return (first, first + 1)


def _fast(L, plan, kn, r: Route, o: Operands, vllm, want_lp) -> None:
    """Phase 1, then the tile finalize, histogram and select passes the route asks for."""
    n, nv = plan.n_rows, plan.n_vocab
    if KF.ARGMAX and not (r.draw or r.tile or r.hist or r.dev or o.want_lp):
        # every row greedy, no logprob: the argmax kernel at its own launch shape
        L.append((kn.fast.argmax(), (plan.splits_argmax, n), plan.block_argmax,
                  (o.x, nv, plan.chunk_argmax, o.gslot, o.counts[3], o.tokens, o.logprobs,
                   o.status)))
        return
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
    # (its three-quad form where they stream FAST3_MIN_QUADS or more, unless FAST3 is off; not
    # with logprobs, whose three-quad forms spill 16-28 bytes on sm_90)
    q3 = fast and KF.FAST3 and not want_lp and chunk >= 4 * KF.FAST3_MIN_QUADS * B
    # the large form's FINE routes: phase 1's FINE layout (tiles of plan.tile_len consecutive
    # tokens, fine_tiles(chunk) a split; its tpt argument is then the tile's length)
    tpt = plan.fine_tiles(chunk) if r.fine else plan.tpt
    L.append((kn.fast.partials(r.draw, want_lp, fast, r.nuc, r.top4, q3, r.fine), (S, n), B,
              (o.x, nv, chunk, temp, topk, topp, minp, o.seed, o.position,
               plan.tile_len if r.fine else tpt, r.kcap, w["pf"], w["pi"], w["tm"], c1,
               w["si"], w["sf"], hc, hm, o.tokens, o.logprobs, o.status, o.cflag)))
    if r.tile:
        cap = plan.cap_large if r.large else plan.cap
        if r.large:
            # its tau, a block a row, then its gather (at phase 1's grid and block: the tile
            # maxima's layout)
            L.append((kn.fast.tau(), n, plan.fast_final_block,
                      (nv, S, tpt, r.kcap, temp, topk, topp, minp, vllm, w["pf"], w["pi"],
                       w["tm"], w["gt"])))
            L.append((kn.fast.gather(r.fine), (S, n), B,
                      (o.x, nv, chunk, plan.tile_len if r.fine else tpt, temp, vllm, w["tm"],
                       w["gt"], w["gc"])))
        # (the small form reads no gc, which plans below the large form's rows lack: it is
        # given pi, an int64 array of the same rank, so its signature is one in every plan)
        L.append((kn.fast.finalize(r.large), n, plan.fast_final_block,
                  (o.x, nv, S, chunk, tpt, cap, r.kcap, temp, topk, topp, minp,
                   vllm, o.seed, o.position, want_lp, w["pf"], w["pi"], w["tm"], o.tokens,
                   o.logprobs, o.status, w["gc"] if r.large else w["pi"])))
    # the count of phase 1's tile maxima a row (top-k rows' tile bound in the histogram code,
    # at whatever split count the pass that runs it has: row-strided, one block); none where
    # the large form's FINE phase 1 also draws the nucleus pass's rows (its drawing rows write
    # no FINE tiles: the pass's top-k rows then go without the bound)
    tiles = 0 if r.fine and r.nuc else S * tpt
    if r.nuc:  # (at its own split count, with its own counter: it reads nothing per split)
        h = kn.hist
        nk = ((h._sample_rank_finish_kernel if r.finish else h._sample_rank4_kernel if r.top4
               else h._sample_rank_kernel) if r.rank
              else h._sample_nucleus_finish_kernel if r.finish else h._sample_nucleus_kernel)
        L.append((nk, (plan.splits_nuc, n), B,
                  (o.x, nv, plan.chunk_nuc, temp, topk, topp, minp, vllm, o.seed, o.position,
                   want_lp, tiles, r.kcap, w["tm"], w["pi"], w["si"], w["sf"], hc, hm, cand,
                   plan.cap, o.counts[4], o.tokens, o.logprobs, o.status, o.cflag)))
    grid = (S, n)
    if r.strided:  # (only the pass's rows need them: nothing of phase 1's splits is read)
        grid, chunk = (plan.splits_fin, plan.rows_fin), plan.chunk_fin
        c2, c3 = o.counts[2]
    if r.hist:
        # (no HIST rows: every row it serves is MINP, which a kernel of their own streams at
        # twice the histogram kernel's occupancy)
        hk = kn.hist._sample_hist_kernel if r.select else kn.hist._sample_minp_kernel
        L.append((hk, grid, B,
                  (o.x, nv, chunk, temp, topk, topp, minp, vllm, o.seed, o.position,
                   want_lp, tiles, r.kcap, w["tm"], w["pi"], w["si"],
                   w["sf"], hc, hm, cand,
                   plan.cap, c2, o.tokens, o.logprobs, o.status, o.cflag)))
    if r.select:
        L.append((kn.hist._sample_select_kernel, grid, B,
                  (o.x, nv, chunk, temp, topk, topp, minp, vllm, o.seed, o.position,
                   want_lp, r.kcap, w["pi"], w["si"], w["sf"], hc, hm, cand, plan.cap, c3,
                   o.tokens, o.logprobs, o.status)))
