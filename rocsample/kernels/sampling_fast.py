"""Device code for phase 1 of every sampling call and the tile finalize of small top-k chains.

``make(cuda, load, h)`` compiles, for one logits loader, phase 1 (every row: one read) and the
tile finalize (rows with ``0 < top_k <= KCAP``, any top_p, min_p and order). ``row_mode`` decides
each row's path, the same rule as the host's (``rocsample.sampling_router.modes``): greedy and
unfiltered rows end in phase 1, tile rows in the finalize, min_p-only and every other filtered
row in the histogram path (``rocsample.kernels.sampling_hist``), for which phase 1's last block
leaves the row's state. Every path gives the reference's tokens.

1. ``_sample_partials_fast_kernel`` (grid splits x rows, one read of each row slice). Per split:
   the maximum finite logit and its lowest index, the online (max, sum exp) pair for the
   log-sum-exp (``LP`` variant), the best Gumbel score of temperature-only rows (``DRAW``
   variant), and for top-k rows the *tile maxima*: the split's threads fall into ``tpt`` tiles
   (thread t in tile ``t % tpt``) and each tile's largest finite logit is written to scratch.
   Rows that do not draw stream the slice strided (thread t: tokens t + u * block), eight loads
   per thread per round, whole rounds without a bounds test and one predicated round. In the
   launches of the large form (FINE variants, ``partials(..., fine=True)``) they stream it by
   runs of ``FINE_UNIT`` (16) consecutive tokens (thread t: runs t, t + block, ..., four
   16-byte loads a run where the row's address allows) and write the maxima of tiles of
   ``tpt`` = 4, 8 or 16 consecutive tokens instead (``SamplingPlan.tile_len``), so that the
   gather reads only its selected tiles' bytes.
   Temperature-only rows stream it by quads: a thread takes four consecutive tokens 4c .. 4c + 3
   and one Philox call (``quad_gumbel``: SPEC §2's words x0..x3 at counter c) draws for all four;
   a split's partial first quad is folded first by thread 0, its partial last quad last by the
   last thread, so every thread still folds its tokens in index order. (The fast pass keeps such
   a row's maximum without its index, one ``FMNMX`` a token on numba-cuda, and the split's
   partial names its first token: the row's tail reads only the maximum's value.)
   TOP2 variants (``partials(draw, lp, fast, top2=True)``; routes with the nucleus pass) also
   draw top-p-only and top-k-only rows (``row_nuc``) and keep each thread's, block's and
   split's two best scores (``merge_top2``; the fast pass settles a thread on its second best,
   and bounds the block's second best); the row's last block leaves the two best tokens in
   ``HS_W1``, ``HS_W2`` for ``sampling_hist._sample_nucleus_kernel`` (or its rank form).
   A launch without top-k rows (``fuse``) ends here: each block counts itself done in the row's
   counter (``ctr``, after a fence that publishes its partial); the block that counts the row's
   last split (mod the split count) folds every split partial (a tree over its threads, after a
   fence), writes token, logprob and status, and takes the split count off the counter, which
   is 0 again for the next launch. The counter belongs to the plan, so a plan's launches must
   be stream-ordered (as its scratch and outputs already are).
2. ``_sample_finalize_fast_kernel`` (one block per row; launches with top-k rows). It first folds
   the split partials into
   (key, -index) composites: per thread, then 16 block slots per folder thread, then the 32
   folder results by thread 0 (always in the same order, so the float64 log-sum-exp is
   reproducible). Greedy and temperature rows are then done. A top-k row (``0 < k <= KCAP``)
   continues; its parameters and tile maxima were loaded before the fold, to overlap it:

   a. ``tau`` from a histogram of the tile maxima by key distance to the row maximum (keys are
      order-preserving integers of the filter value: raw logit for llama, scaled for vllm;
      ``dist_bin`` is monotone with 16 bins per octave of distance). Counting tiles from the
      maximum down, the first bin B where the count reaches k gives tau = the lowest key of bin
      B: at least k tiles have a maximum >= tau, so at least k tokens do, and every token of the
      top k has key >= tau. (Fewer than k finite tiles: tau = 0, every finite token.)
   b. gathers the finite tokens with key >= tau from the tiles of bins <= B (a list compacted in
      shared memory; about k tiles of ``n / tiles`` tokens, a few percent of the row) into a
      candidate list, and ranks the candidates by (key desc, index asc): by counting the larger
      composites, the count of each candidate spread over several threads (a bitonic sort above
      RANK_MAX candidates). The first K = min(k, candidates) get their filter value (the key's
      float: no second read), their integer mass ``floor(exp(float64(x) - float64(x_max)) *
      2**40 + 0.5)`` and their min-p test in the same step;
   c. applies the filters on that sorted prefix exactly as the reference does (top-k; top-p as
      the first position where the running integer mass reaches ``ceil(p * total)``, each
      position summing the masses before it; min-p with the float64 threshold; llama or vllm
      order: min-p survivors are a prefix of the sorted list), and
   d. draws the Gumbel-max over the survivors (Philox only for them), folded like the split
      partials, and writes token, logprob (when asked) and status.

   Its large form (``finalize(True)``, top_k up to ``KCAP_L``) takes the same steps over a
   longer list, its candidates (b) from ``gather()``, a launch before it at phase 1's grid:
   every block of a tile row lists the tokens from tau up of its own split's tiles (``gc``: a
   count, then the composites, per split; the row's tau and B found once, as (a) does, by
   ``tau()``, a launch of a block a row before it), so the row's tiles are read by all its
   splits' blocks at once, not by the finalize's one block; the finalize copies the lists into
   its candidate list. From 128 rows (``sampling_router.fine_rule``) its tiles are phase 1's
   FINE ones (contiguous, 4-16 tokens) and ``gather(True)`` lists a window's selected tiles in
   shared memory, then loads their tokens four at a time.

   A top-k-only row (no top-p, no min-p) with more than RANK_MAX candidates, in either form,
   skips (b)'s sort and masses and (c): the K-th largest candidate (the cut) from a histogram
   of the candidates' key distances (the bin where the count reaches K) and a count within
   that bin, then (d) over the candidates >= cut. A bin holding more than the form's KCAP
   candidates: the sort.

   When the candidates overflow the list (``cap``) or the qualifying tiles overflow their list
   (``TLMAX``), adversarial rows such as sorted or constant logits, the same block finds the
   k-th key exactly by a radix select over the row (four 8-bit digit passes) and gathers the top
   k in index order (ties to the lower index), then continues at (c): slower (one block reads
   the row five times) but exact.

Reads of the logits: greedy and temperature 1 (one launch); top-k chains 1 plus the gathered
tiles (about ``k * n / tiles`` tokens, from L2 at small batch). Every choice is an exact
comparison or an integer sum, so tokens do not depend on split count, tile count or block size.
"""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import numpy as np

from rocsample.kernels import JIT_CACHE, _numba_cuda, register_cap, warp_parts
from rocsample.kernels import philox as _ph

#: Largest top_k served by the fast path (one survivor per thread slot of the filter steps).
KCAP = 256
#: The mass array: KCAP plus the three slots the unrolled prefix sums read past the end.
MASS_N = KCAP + 4
#: Largest top_k of the tile finalize's large form (``finalize(True)``), with its candidate
#: list (``gather()``'s lists a split past it send the row to the radix fallback; the router
#: takes it where the tiles make the candidates fit: ``rocsample.sampling_router.
#: tile_large_fits``).
KCAP_L = 1024
CAND_MAX_L = 2048
#: Candidate list capacity per row (shared memory); the gather overflows past it.
CAND_MAX = 1024
#: Tile maxima per row the finalize block can select over (shared memory).
GMAX = 4096
#: The large tile form's tiles (phase 1's FINE variants, ``tau()`` and ``gather()``): runs of
#: consecutive tokens from each split's start, FINE_UNIT at a time a thread (four loads of four),
#: cut into tiles of 4, 8 or 16 tokens (``rocsample.sampling_plan.SamplingPlan.tile_len``), so a
#: selected tile's tokens lie together and the gather reads 16-64 bytes of it, where a strided
#: tile (a thread's tokens t + u * block) shares every sector of the row with seven others.
FINE_UNIT = 16
#: Tiles of its split a gather thread tests a window (the window's selected tiles are listed in
#: shared memory, then their tokens loaded four at a time by the whole block).
GWIN = 4
#: Units of FINE_UNIT tokens a thread of phase 1's FINE variants loads a round without
#: logprobs (with them: one). Two hold 62 registers on sm_90 (4 blocks of 256 threads an SM),
#: one 34 (tools/sass_stats.py), yet one was no faster at any shape of the forty-seventh
#: session's H100 A/B (top_k 1000 alone, 8-256 rows: 0.4-7% slower; bench/results/
#: nvidia-h100-s47-fine-ab.txt), so its setting is gone.
FINE_UNITS = 2
#: (the sizes of their arrays: numba takes a constant, not an expression of constants)
FINE_VALS = 2 * FINE_UNIT
#: Fewest tokens per tile: above 4 * KCAP tiles per row, the plan halves the tiles per split
#: until a tile has this many (twice this many in splits of at most
#: ``rocsample.sampling_plan._SHORT_CHUNK`` logits).
TILE_MIN = 16
#: Threads per block the shared arrays are sized for.
MAX_BLOCK = 512
#: The gather's list of a window's selected tiles (shared memory).
GWIN_SLOTS = GWIN * MAX_BLOCK
#: Phase 1's register caps, (non-drawing variants, drawing variants, their fast variants);
#: numba-cuda only (``rocsample.kernels.register_cap``; families "partials", "partials_draw",
#: "partials_fast"). Uncapped: the drawing variants hold 56 (64 with logprobs) registers. The
#: fast variants' TOP2 and TOP4 forms took 72 with the block's redraw of unsettled threads (3
#: blocks of 256 threads an SM instead of 4). At the cap of 64 (sm_90, tools/sass_stats.py,
#: which assembles under each cap): every fast loop 673 SASS instructions a round of 8 tokens
#: (681 / 677 / 677 before the redraw), no spill in the temperature variant, 12 and 60 bytes in
#: the TOP2 and TOP4 forms outside the fast loop (the redraw, the row tail); with logprobs 874 /
#: 879 / 878 (889 / 896 / 896), 32 bytes, of which 4-5 local loads a round in the fast loop.
#: Since the thirty-seventh session (Philox's multiplies as mul.wide.u32, the noise's logs with
#: flush-to-zero, int32 indices: docs/PERF_NOTES.md): every fast loop 552, no spill in the
#: three forms; with logprobs 769 / 767 / 767, 4 / 8 / 8 bytes, 3 local accesses a round in the
#: fast loop.
PARTIALS_MAX_REGISTERS = (None, None, 64)
#: Temperature-only rows draw by bounds first (phase 1's fast variant): a token whose noise's
#: cap (``rocsample.kernels.philox.CAP_BASE``'s notes) cannot lift its score to the block's lower
#: bound of its best exact score is skipped; the others' approximate scores
#: (``gumbel_fast``) keep each thread's three best, of which the two best are recomputed exactly,
#: unless the third is within the bound of the first (the TOP2 forms: of the second; then the
#: block draws that thread's quads again exactly, each quad by one thread: ``redraw``).
#: ``ROCSAMPLE_DRAW_FAST=0`` draws every token exactly (the same tokens either way).
DRAW_FAST = os.environ.get("ROCSAMPLE_DRAW_FAST", "1") != "0"
#: Fewest quads each thread of a launch streams for the router to pick the fast variant
#: (fewer: the exact one, whose finish is shorter): on the H200 the fast pass was 1.2-1.7 us
#: slower at 1 x 32000, 8 x 32000 and 1 x 151936 (1-5 quads a thread), 0.8 us faster at
#: 64 x 32000 (6), 9-77 us faster from 64 x 151936 on (15 and more).
FAST_MIN_QUADS = 6
#: Calls whose every row is greedy and wants no logprob take phase 1's argmax kernel
#: (``argmax()``): ARGMAX_V loads of four logits a round (``rocsample.kernels.vload``), each
#: round folded by a tree of fmax with its index found once at the end, at the plan's own launch
#: shape (``SamplingPlan.splits_argmax``).
#: ``ROCSAMPLE_ARGMAX=0`` keeps them on the general phase 1 (timings; the same tokens).
ARGMAX = os.environ.get("ROCSAMPLE_ARGMAX", "1") != "0"
#: Vectors of four logits a thread loads per round in the argmax kernel (``vload.raw4``).
ARGMAX_V = 8
#: Quads a thread of a drawing row loads per round (``ROCSAMPLE_DRAW_QUADS``, for timings).
DRAW_QUADS = int(os.environ.get("ROCSAMPLE_DRAW_QUADS") or 2)
#: The fast pass's three-quad form (``partials(..., q3=True)``: 12 loads in flight a round, the
#: bound published a third less often; sm_90: 718 instructions a round of 12 tokens against 490
#: a round of 8) for launches whose threads stream FAST3_MIN_QUADS quads or more. On an H100
#: (forty-first session, every fast launch in three quads): temperature 256 x 151936 -5.5%,
#: 64 x 151936 -3.8%, top_p alone 256 x 151936 -1.7%, but 64 x 32000 (7.8 quads a thread)
#: +1.8% / +2.8%: hence the floor. On by default since the forty-second session
#: (``ROCSAMPLE_FAST3=0`` turns it off, for A/B timings; docs/PERF_NOTES.md). The device
#: parameters' routes keep it too: off, they were level at 64 x 151936 (fifty-seventh session).
FAST3 = os.environ.get("ROCSAMPLE_FAST3", "1") != "0"
FAST3_MIN_QUADS = 16
#: An approximate score a is within EPS_ABS + |a| * EPS_REL of the exact one: the bound of the
#: approximate Gumbel noise, plus two float32 roundings of the score (2**-23 relative each) with
#: room to spare.
_EPS_ABS = np.float32(_ph.GUMBEL_FAST_ERR)
_EPS_REL = np.float32(2.0 ** -20)
#: The noise's cap, CAP_BASE - key * CAP_SLOPE (rocsample.kernels.philox)
_CAP_BASE = _ph.CAP_BASE
_CAP_SLOPE = _ph.CAP_SLOPE
#: publish_bound's int32 order key of -inf (bits 0xff800000 with the low 31 bits flipped)
_LB_NONE = np.int32(-2139095041)
#: Candidates ranked by counting (above: a bitonic sort; but top-k-only rows above it take the
#: tile finalize's selection, the K-th largest candidate by a histogram of their key distances
#: and a count within its bin, then the draw over the candidates from it up, instead of the
#: sort, whose 66 stages took 23 of top_k 1000's 69 us at 64 x 151936: an H100, forty-fourth
#: session, tools/gpu/fin_stages.sh; with the selection 68.6 -> 54.2 us, forty-fifth session).
RANK_MAX = 256
#: Bins of the tile-maxima histogram (key distance to the row maximum, 16 per octave), summed
#: in NGRP groups of GW.
NBIN = 512
GW = 16
NGRP = NBIN // GW
#: Loads in flight per thread in the candidate gather.
GU = 8
#: Tile maxima each finalize thread loads before the split reduction; tau()'s thread loads them
#: this many a round.
TPRE = 8
#: Qualifying tiles the candidate gather takes (more: the overflow path).
TLMAX = 1024
#: Most splits a row (``rocsample.sampling_plan._MAX_SPLITS``): the large finalize's offsets of
#: the gather kernel's split lists.
SPLITS_MAX = 1024
#: Slots per folding thread, and folding threads, of the two-level block reductions
#: (NFOLD * FOLD >= MAX_BLOCK and >= KCAP).
FOLD = 16
NFOLD = 32
#: Radix digit of the in-block selects.
_RBITS = 8
_RBINS = 1 << _RBITS

# What the kernels rely on: the folds cover every block slot and every survivor, the overflow
# histogram fits in the mass array, and NBIN splits into NGRP groups of GW bins.
assert NFOLD * FOLD >= MAX_BLOCK and NFOLD * FOLD >= KCAP
assert _RBINS <= MASS_N and NGRP * GW == NBIN

_MASS_SCALE = np.float64(2.0 ** 40)
#: float64 distances below this have mass 0 (exp(-29) * 2**40 < 0.5).
_MASS_CUT = np.float64(-29.0)
_F64_HALF = np.float64(0.5)
_F32_0 = np.float32(0.0)
_F32_1 = np.float32(1.0)
_F32_NINF = np.float32(-np.inf)
_F32_INF = np.float32(np.inf)
_F32_NAN = np.float32(np.nan)
#: A whole warp's lane mask (the warp forms' shuffles and votes).
_FULL = np.uint32(0xFFFFFFFF)
#: The running best Gumbel score before a thread's first candidate (``sampling._F32_NONE``).
_F32_NONE = np.float32(np.nan)
_MASS_ONE = np.int64(1) << np.int64(40)
_F64_NINF = np.float64(-np.inf)
_F64_NAN = np.float64(np.nan)
_F64_0 = np.float64(0.0)
_F64_1 = np.float64(1.0)
_I64_0 = np.int64(0)
_U64_0 = np.uint64(0)
_I64_1 = np.int64(1)
_I64_M1 = np.int64(-1)
_LOW31 = np.int64(0x7FFFFFFF)
_LOW32 = np.int64(0xFFFFFFFF)
_SIGN31 = np.int64(0x80000000)
#: order_key(-inf): every finite float's key is above it
_KEY_NINF = np.int64(0xFFFFFFFF - 0xFF800000)
_S31 = np.int64(31)

STATUS_OK = 0
STATUS_NO_FINITE = 1

#: Row modes (``row_mode``): where a row's token is decided.
MODE_GREEDY, MODE_RACE, MODE_TILE, MODE_MINP, MODE_HIST = range(5)
#: Row state columns (int64, the plan's ``si`` scratch) for the histogram path, written by phase
#: 1's last block of a MINP / HIST row (rocsample.kernels.sampling_hist reads them).
(HS_KMAX, HS_DONE, HS_NTOT, HS_NC, HS_MCNT, HS_BLO, HS_BHI, HS_BKP, HS_CLO, HS_QLO, HS_K, HS_M,
 HS_Z, HS_CKB, HS_QKB, HS_CA) = range(16)
#: The nucleus pass's columns (top-p-only rows of TOP2 launches): the row's two best tokens by
#: Gumbel score (-1: none), the approximate integer masses of the row and of the tokens before
#: each of the two in the filter order, and its decision (NUC_*); TOP4 launches also the third
#: and fourth best (-1 also where phase 1 cannot certify them: ``partials``' top4) and the
#: masses before them.
HS_W1, HS_W2, HS_NZ, HS_NS1, HS_NS2, HS_NUC, HS_W3, HS_W4, HS_NS3, HS_NS4 = range(16, 26)
#: HS_NUC: not decided by the nucleus pass (the histogram path finishes the row), else which of
#: the best tokens is the first to survive top-p; NUC_EXACT: the finishing form's bounds
#: straddled the target and its exact pass (the integer masses themselves) took one of them.
NUC_NONE, NUC_W1, NUC_W2, NUC_W3, NUC_W4, NUC_EXACT = range(6)
#: float64 row state column (``sf``): the row's log-sum-exp (logprob launches).
HF_LSE = 0
#: Bins of the histogram path (per row, by the filter key's distance below the row maximum).
HB = 2048


def _dist_bin(d):
    # Monotone bin of a key distance d in [0, 2**32): d itself below 16, then 16 bins per
    # octave (the top four bits after the leading one). Bins are at most 1/16 octave wide.
    # Outside the domain: 0 below, NBIN - 1 above (an index into the histogram either way).
    if d < np.int64(16):
        if d < np.int64(0):
            return np.int64(0)  # never for a true row maximum; kept in range regardless
        return d
    if d >= np.int64(1 << 32):
        return np.int64(NBIN - 1)
    e = np.int64(0)   # floor(log2(d)), by halving the search five times
    t_ = d
    for sh in (16, 8, 4, 2, 1):
        if t_ >= (np.int64(1) << np.int64(sh)):
            t_ >>= np.int64(sh)
            e += np.int64(sh)
    b = np.int64(16) * (e - 3) + ((d >> (e - 4)) & np.int64(15))
    return b


def _bin_dlim(b):
    # The largest distance d with _dist_bin(d) <= b.
    if b < np.int64(16):
        return b
    if b >= np.int64(NBIN - 1):
        return np.int64(1) << 40
    e = b // 16 + 3
    m_ = b & np.int64(15)
    return ((np.int64(17) + m_) << (e - 4)) - 1


def make(cuda, load, h):
    """Compile the fast-path kernels for one logits loader.

    Parameters
    ----------
    cuda : module
        numba.cuda, its simulator, or numba.hip posing as cuda.
    load : device function ``load(x, row, i) -> float32``
    h : namespace
        Shared device helpers: ``is_finite``, ``order_key``, ``token_gumbel``, ``quad_gumbel``,
        ``quad_words``, ``uniform_comp``, ``gumbel_fast_ud``, ``gumbel_cap_key``, ``merge_max``,
        ``bits_f32``, ``lse_add32``, ``lse_merge32``, ``lse_merge64``, ``atomic_max``,
        ``atomic_add`` (rocsample.kernels.atomics), ``raw4`` and ``head4``
        (rocsample.kernels.vload) and ``widen`` (a raw logit of ``load``'s array to float32).

    Returns
    -------
    types.SimpleNamespace
        ``partials(draw, lp)`` (a cached factory of ``_sample_partials_fast_kernel`` variants),
        ``argmax()`` (``_argmax_kernel``, greedy-only calls without logprobs) and
        ``finalize(large)``.
    """
    is_finite = h.is_finite
    # the larger of two float32 ignoring NaN: libdevice's fmaxf (one max.f32) where numba has
    # it; the fast pass takes its rows' maximum by it on numba-cuda (one FMNMX a token), by a
    # compare elsewhere (FMAX)
    lib = getattr(cuda, "libdevice", None)
    if lib is not None:
        fmax = lib.fmaxf
    else:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def fmax(a, b):
            # the larger of a and b ignoring NaN (NaN only when both are), as libdevice's fmaxf
            return a if (a >= b or b != b) else b
    FMAX = _numba_cuda(cuda)
    order_key = h.order_key
    token_gumbel = h.token_gumbel
    quad_gumbel = h.quad_gumbel
    quad_words = h.quad_words
    uniform_comp = h.uniform_comp
    gumbel_fast_ud = h.gumbel_fast_ud
    gumbel_cap_key = h.gumbel_cap_key
    atomic_max = h.atomic_max
    need_lane = h.need_lane
    merge_max = h.merge_max
    bits_f32 = h.bits_f32
    lse_add32 = h.lse_add32
    lse_merge32 = h.lse_merge32
    lse_merge64 = h.lse_merge64
    atomic_add = h.atomic_add
    raw4 = h.raw4
    head4 = h.head4
    widen = h.widen

    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_topk(t, k, n):
        return t > _F32_0 and k > 0 and k < n

    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_mode(t, k, p, mp, n, kcap):
        # Which path finishes the row (the same decision on the host, for host parameters):
        # greedy and unfiltered rows in phase 1, top-k <= kcap chains in the tile finalize,
        # min-p-only rows in the histogram pass, every other filtered row through the histogram
        # and select passes (rocsample.kernels.sampling_hist).
        if not t > _F32_0:
            return MODE_GREEDY
        kon = k > 0 and k < n
        if kon and k <= kcap:
            return MODE_TILE
        if kon or p < _F32_1:
            return MODE_HIST
        if mp > _F32_0:
            return MODE_MINP
        return MODE_RACE

    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_nuc(k, p, mp, n):
        # Whether a MODE_HIST row is top-p only or top-k only (no min-p, not both): the rows
        # the nucleus pass can finish from phase 1's best scores (TOP2 launches), by their
        # masses (top-p) or their ranks (top-k: the pass's rank form).
        return not ((k > 0 and k < n) and p < _F32_1) and not mp > _F32_0

    @cuda.jit(device=True, cache=JIT_CACHE)
    def filter_key(v, inv_t, vllm):
        # The order key of the filter value: raw logit (llama) or scaled logit (vllm).
        if vllm:
            return order_key(np.float32(v * inv_t))
        return order_key(v)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def fold_slots(arr, base, lim):
        # The largest of arr[base : base + FOLD] below index lim (-1 if none): a fixed trip
        # count, so the loads are issued together.
        best = _I64_M1
        for q in range(FOLD):
            o = base + q
            c = _I64_M1
            if o < lim:
                c = arr[o]
            if c > best:
                best = c
        return best

    @cuda.jit(device=True, cache=JIT_CACHE)
    def fold_all(arr):
        # The largest of arr[0 : NFOLD] (the per-folder results).
        best = _I64_M1
        for q in range(NFOLD):
            c = arr[q]
            if c > best:
                best = c
        return best

    @cuda.jit(device=True, cache=JIT_CACHE)
    def comp(key, i):
        # The (key, -index) composite of token i (int64): a larger key first, then the lower
        # index.
        return (key << _S31) | (_LOW31 - i)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def comp_of(fv, i):
        # The composite of token i with float32 value fv (its order key).
        return comp(order_key(fv), i)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def comp_token(c):
        # The token index of a (key, -index) composite.
        return _LOW31 - (c & _LOW31)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def pick4(w0, w1, w2, w3, j):
        # Word j (0..3) of a Philox call's four (or of their noises), by selects: a dynamic
        # index into a local array would spill.
        w = w0
        if j == 1:
            w = w1
        elif j == 2:
            w = w2
        elif j == 3:
            w = w3
        return w

    @cuda.jit(device=True, cache=JIT_CACHE)
    def score_from_scaled(s, sd, ps, i):
        # The (Gumbel score key, -index) composite of a drawn token i whose scaled logit is s.
        return comp_of(s + token_gumbel(sd, ps, i), i)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def split_fold(pf, pi, row, n, nsplit, draw, lp, tid, bs):
        # This thread's fold of the row's split partials tid, tid + bs, ...: the (key, -index)
        # composite of the maximum, (draw != 0) that of the best Gumbel score, ties to the lower
        # index, and (lp != 0) the float64 (max, sum exp) pair. A composite < 0: no finite
        # logit. No barrier.
        cv = _I64_M1
        cg = _I64_M1
        lm = _F64_NINF
        ls = _F64_0
        # (A split's words are loaded together before any of them is tested: a value load
        # behind its index test was a second dependent round trip to L2 at one row.)
        s = tid
        while s < nsplit:
            vi = pi[row, s, 0]
            vf = pf[row, s, 0]
            gi = n
            gf = _F32_0
            if draw != 0:
                gi = pi[row, s, 1]
                gf = pf[row, s, 1]
            if vi < n:
                c = comp_of(vf, vi)
                if c > cv:
                    cv = c
            if gi < n:
                c = comp_of(gf, gi)
                if c > cg:
                    cg = c
            if lp != 0:
                lm, ls = lse_merge64(lm, ls, np.float64(pf[row, s, 2]), np.float64(pf[row, s, 3]))
            s += bs
        return cv, cg, lm, ls

    @cuda.jit(device=True, cache=JIT_CACHE)
    def reduce_splits(pf, pi, row, n, nsplit, lp, tid, bs, sm_c, sm_lm, sm_ls, f1c, f1m, f1s,
                      res, sm_r):
        # The row's split partials folded into the (key, -index) composite of the maximum
        # (returned to every thread), ties to the lower index, and (lp != 0) the float64
        # (max, sum exp) pair (res[0], res[1]): per thread, then FOLD slots per thread of the
        # first NFOLD, then by thread 0, always in the same order (the log-sum-exp is
        # reproducible for a launch shape). The tile finalize draws from its own candidates, so
        # the splits' best Gumbel scores are not read. Every thread of the block calls it;
        # sm_lm / sm_ls are only touched when lp != 0. A composite < 0: no finite logit.
        cv, _cg, lm, ls = split_fold(pf, pi, row, n, nsplit, 0, lp, tid, bs)
        if lp != 0:
            sm_lm[tid] = lm
            sm_ls[tid] = ls
        cv = fold_max(cv, tid, bs, sm_c, f1c, sm_r)
        if lp != 0:
            # (fold_max's barriers published sm_lm / sm_ls)
            bsw = np.int64(bs)
            if tid < NFOLD:
                base = np.int64(tid) * FOLD
                am = _F64_NINF
                as_ = _F64_0
                for q in range(FOLD):
                    o = base + q
                    if o < bsw:
                        am, as_ = lse_merge64(am, as_, sm_lm[o], sm_ls[o])
                f1m[tid] = am
                f1s[tid] = as_
            cuda.syncthreads()
        if tid == 0:
            am = _F64_NINF
            as_ = _F64_0
            if lp != 0:
                for q in range(NFOLD):
                    am, as_ = lse_merge64(am, as_, f1m[q], f1s[q])
            res[0] = am
            res[1] = as_
        cuda.syncthreads()
        return cv

    @cuda.jit(device=True, cache=JIT_CACHE)
    def tail_reduce(pf, pi, row, n, nsplit, draw, lp, tid, bs, sm_c, sm_cg, sm_lm, sm_ls):
        # reduce_splits for phase 1's fused tail, by a tree over the block's slots (bs a power
        # of two): fewer values live at once than the two-level fold, so the streaming kernel
        # keeps its register count. Results in slot 0 (sm_cg only when draw != 0, sm_lm / sm_ls
        # only when lp != 0).
        cv, cg, lm, ls = split_fold(pf, pi, row, n, nsplit, draw, lp, tid, bs)
        sm_c[tid] = cv
        if draw != 0:
            sm_cg[tid] = cg
        if lp != 0:
            sm_lm[tid] = lm
            sm_ls[tid] = ls
        cuda.syncthreads()
        step = bs // 2
        while step > 0:
            if tid < step:
                o = tid + step
                if sm_c[o] > sm_c[tid]:
                    sm_c[tid] = sm_c[o]
                if draw != 0 and sm_cg[o] > sm_cg[tid]:
                    sm_cg[tid] = sm_cg[o]
                if lp != 0:
                    sm_lm[tid], sm_ls[tid] = lse_merge64(sm_lm[tid], sm_ls[tid], sm_lm[o],
                                                         sm_ls[o])
            cuda.syncthreads()
            step //= 2

    @cuda.jit(device=True, cache=JIT_CACHE)
    def merge_top2(g, gi, g2, gi2, tid, o):
        # Slot o's two best scores into slot tid's (each pair sorted: g >= g2), ties to the
        # lower index: the two best of the four.
        a = g[tid]
        ai = gi[tid]
        b = g[o]
        bi = gi[o]
        if b > a or (b == a and bi < ai):
            # o's best leads; the second is the better of tid's best and o's second
            c = g2[o]
            ci = gi2[o]
            if a > c or (a == c and ai < ci):
                c = a
                ci = ai
            g[tid] = b
            gi[tid] = bi
            g2[tid] = c
            gi2[tid] = ci
        else:
            c = g2[tid]
            ci = gi2[tid]
            if b > c or (b == c and bi < ci):
                g2[tid] = b
                gi2[tid] = bi

    @cuda.jit(device=True, cache=JIT_CACHE)
    def second_best(pf, pi, row, n, nsplit, c1, tid):
        # This thread's best (score, -index) composite below c1 over the two best of its splits
        # tid, tid + bs, ... (phase 1's TOP2 partials: slots 1 and 4 / 1 and 3); -1: none.
        best = _I64_M1
        s = tid
        bs = cuda.blockDim.x
        while s < nsplit:
            i1 = pi[row, s, 1]
            i2 = pi[row, s, 3]
            f1 = pf[row, s, 1]
            f2 = pf[row, s, 4]
            if i1 < n:
                c = comp_of(f1, i1)
                if c < c1 and c > best:
                    best = c
            if i2 < n:
                c = comp_of(f2, i2)
                if c < c1 and c > best:
                    best = c
            s += bs
        return best

    @cuda.jit(device=True, cache=JIT_CACHE)
    def merge4(a0, a1, a2, a3, b0, b1, b2, b3):
        # The four largest of two lists of four int64 composites, each sorted largest first
        # (-1: none), sorted largest first, and the largest of the other four (the fifth): the
        # elementwise larger of a and b reversed is the four largest (bitonic: falling, then
        # rising), sorted by two stages of compare-exchange; the elementwise smaller, the rest.
        t0 = max(a0, b3)
        t1 = max(a1, b2)
        t2 = max(a2, b1)
        t3 = max(a3, b0)
        d = max(max(min(a0, b3), min(a1, b2)), max(min(a2, b1), min(a3, b0)))
        t0, t2 = max(t0, t2), min(t0, t2)
        t1, t3 = max(t1, t3), min(t1, t3)
        t0, t1 = max(t0, t1), min(t0, t1)
        t2, t3 = max(t2, t3), min(t2, t3)
        return t0, t1, t2, t3, d

    @cuda.jit(device=True, cache=JIT_CACHE)
    def merge_top4(l0, l1, l2, l3, lu, tid, o):
        # Slot o's four best composites (and bound lu: at least every composite its slots do
        # not hold) into slot tid's.
        t0, t1, t2, t3, d = merge4(l0[tid], l1[tid], l2[tid], l3[tid], l0[o], l1[o], l2[o],
                                   l3[o])
        l0[tid] = t0
        l1[tid] = t1
        l2[tid] = t2
        l3[tid] = t3
        lu[tid] = max(max(lu[tid], lu[o]), d)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def fast_bound(a3, lb):
        # (TOP4) A composite at least that of every token a settled fast pass did not keep:
        # its third approximate score plus twice the approximation's error (exact(t) <= a3 +
        # eps for every token t outside the two kept), and the skip bound lb (a skipped token's
        # exact score is below it). Index 0: every index of that key.
        u = _I64_M1
        if a3 > _F32_NINF:
            u = comp_of(a3 + np.float32(2.0) * (_EPS_ABS + abs(a3) * _EPS_REL), np.int64(0))
        if lb > _F32_NINF:
            u = max(u, comp_of(lb, np.int64(0)))
        return u

    WARP = warp_parts(cuda)

    # Phase 1's block partial by shuffles ("tree" in WARP; compiled only where a variant calls
    # them): butterflies over the warp, each lane merging its partner's partial into its own
    # (disjoint sets of tokens at every level, so every lane ends with the warp's), by the
    # rules of merge_max and merge_top2.
    @cuda.jit(device=True, cache=JIT_CACHE)
    def warp_top1(v, i):
        # The largest (v, i) over the warp, ties to the lower i, to every lane.
        for off in (16, 8, 4, 2, 1):
            ov = cuda.shfl_xor_sync(_FULL, v, off)
            oi = cuda.shfl_xor_sync(_FULL, i, off)
            if ov > v or (ov == v and oi < i):
                v = ov
                i = oi
        return v, i

    @cuda.jit(device=True, cache=JIT_CACHE)
    def warp_top2(g, gi, g2, gi2):
        # The two best (score, index) pairs over the warp (each lane's sorted), to every lane.
        for off in (16, 8, 4, 2, 1):
            b = cuda.shfl_xor_sync(_FULL, g, off)
            bi = cuda.shfl_xor_sync(_FULL, gi, off)
            c = cuda.shfl_xor_sync(_FULL, g2, off)
            ci = cuda.shfl_xor_sync(_FULL, gi2, off)
            if b > g or (b == g and bi < gi):
                # the partner's best leads; the second the better of ours and its second
                if g > c or (g == c and gi < ci):
                    c = g
                    ci = gi
                g = b
                gi = bi
                g2 = c
                gi2 = ci
            elif b > g2 or (b == g2 and bi < gi2):
                g2 = b
                gi2 = bi
        return g, gi, g2, gi2

    if "max" in WARP:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def warp_max(v):
            # The largest int64 v over the warp, to every lane: a butterfly of shuffles (every
            # lane of the warp calls it).
            for off in (16, 8, 4, 2, 1):
                o = cuda.shfl_xor_sync(_FULL, v, off)
                if o > v:
                    v = o
            return v

        @cuda.jit(device=True, cache=JIT_CACHE)
        def block_max(sm, v, tid, bs):
            # The largest int64 v over the block, to every thread: warp_max in each warp, the
            # warps' maxima through sm[0 : bs / 32] (bs a multiple of 32).
            v = warp_max(v)
            if (tid & 31) == 0:
                sm[tid >> 5] = v
            cuda.syncthreads()
            r = sm[0]
            for q in range(1, MAX_BLOCK // 32):
                if q * 32 < bs:
                    o = sm[q]
                    if o > r:
                        r = o
            cuda.syncthreads()
            return r

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold_max(v, tid, bs, sa, fa, out):
            # The largest int64 v over the block, to every thread (fa, out: the shared-memory
            # form's).
            return block_max(sa, v, tid, bs)

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold_few(v, tid, lim, sm):
            # The largest v of threads 0 .. lim - 1 (lim <= 32; the others hold -1), to thread
            # 0: warp 0's butterfly, no barrier. Every thread of the block calls it.
            if tid < 32:
                v = warp_max(v)
            return v
    else:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def block_max(sm, v, tid, bs):
            # The largest int64 v over the block (bs a power of two), to every thread.
            sm[tid] = v
            cuda.syncthreads()
            step = bs // 2
            while step > 0:
                if tid < step and sm[tid + step] > sm[tid]:
                    sm[tid] = sm[tid + step]
                cuda.syncthreads()
                step //= 2
            r = sm[0]
            cuda.syncthreads()
            return r

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold_max(v, tid, bs, sa, fa, out):
            # The largest int64 v over the block, to every thread: FOLD slots per thread of the
            # first NFOLD (fa), then thread 0 (out[0]).
            sa[tid] = v
            cuda.syncthreads()
            if tid < NFOLD:
                fa[tid] = fold_slots(sa, np.int64(tid) * FOLD, np.int64(bs))
            cuda.syncthreads()
            if tid == 0:
                out[0] = fold_all(fa)
            cuda.syncthreads()
            return out[0]

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold_few(v, tid, lim, sm):
            # The largest v of threads 0 .. lim - 1 (lim <= 32), to thread 0: their values
            # through sm, one barrier, thread 0 folds them. Every thread of the block calls it.
            if tid < lim:
                sm[tid] = v
            cuda.syncthreads()
            r = v
            if tid == 0:
                r = _I64_M1
                for q in range(32):
                    c = _I64_M1
                    if q < lim:
                        c = sm[q]
                    if c > r:
                        r = c
            return r

    if "bin" in WARP:
        assert NGRP == 32

        @cuda.jit(device=True, cache=JIT_CACHE)
        def bin_select(hist, grp, sm_r, kk, tid, bs):
            # sm_r[0] = the first bin where the tile counts from the maximum down reach kk
            # (NBIN - 1 if they never do), to every thread (a barrier at the end): warp 0, lane
            # g summing group g's GW bins, a shuffle scan over the 32 groups, the crossing
            # group's lane walking its bins. grp unused (the shared-memory form's).
            if tid < 32:
                g = np.int64(tid)
                c = np.int32(0)
                for q in range(GW):
                    c += hist[g * GW + q]
                incl = c
                for off in (1, 2, 4, 8, 16):
                    o = cuda.shfl_up_sync(_FULL, incl, off)
                    if tid >= off:
                        incl += o
                tot = cuda.shfl_sync(_FULL, incl, 31)
                run = np.int64(incl - c)
                if np.int64(tot) < kk:
                    if tid == 0:
                        sm_r[0] = np.int64(NBIN - 1)
                elif run < kk and run + np.int64(c) >= kk:
                    for q in range(GW):
                        hb = np.int64(hist[g * GW + q])
                        if run < kk and run + hb >= kk:
                            sm_r[0] = g * GW + q
                        run += hb
            cuda.syncthreads()
    else:
        @cuda.jit(device=True, cache=JIT_CACHE)
        def bin_select(hist, grp, sm_r, kk, tid, bs):
            # sm_r[0] = the first bin where the tile counts from the maximum down reach kk
            # (NBIN - 1 if they never do), to every thread (a barrier at the end): group sums
            # (NGRP groups of GW bins), then each group's thread sums the groups before it and,
            # if the count crosses kk in its group, walks its bins.
            g_ = tid
            while g_ < NGRP:
                c32 = np.int32(0)
                for q in range(GW):
                    c32 += hist[g_ * GW + q]
                grp[g_] = c32
                g_ += bs
            if tid == 0:
                sm_r[0] = np.int64(NBIN - 1)
            cuda.syncthreads()
            g_ = tid
            while g_ < NGRP:
                run = _I64_0
                for q in range(NGRP):
                    gq = np.int64(grp[q])
                    if q < g_:
                        run += gq
                if run < kk and run + np.int64(grp[g_]) >= kk:
                    for q in range(GW):
                        hb = np.int64(hist[g_ * GW + q])
                        if run < kk and run + hb >= kk:
                            sm_r[0] = np.int64(g_ * GW + q)
                        run += hb
                g_ += bs
            cuda.syncthreads()

    @cuda.jit(device=True, cache=JIT_CACHE)
    def row_lse(res):
        # log-sum-exp of the row from reduce_splits' pair (NaN without logprobs or finite logits)
        lse = _F64_NAN
        if res[1] > _F64_0:
            lse = res[0] + math.log(res[1])
        return lse

    @cuda.jit(device=True, cache=JIT_CACHE)
    def split_block(chunk, n):
        # A block of a split kernel (grid: splits x rows): its split, its row, the thread, the
        # block size, the row's split count, and the split's tokens [lo, hi).
        split = cuda.blockIdx.x
        lo = np.int64(split) * chunk
        return (split, cuda.blockIdx.y, cuda.threadIdx.x, cuda.blockDim.x, cuda.gridDim.x, lo,
                min(lo + chunk, n))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def fine_split(chunk, tl):
        # The FINE layout of a split of chunk logits in tiles of tl tokens: its units of
        # FINE_UNIT tokens and the tiles a unit (the split's tile slots are their product:
        # rocsample.sampling_plan.SamplingPlan.fine_tiles on the host)
        return ((chunk + np.int64(FINE_UNIT - 1)) // np.int64(FINE_UNIT),
                np.int64(FINE_UNIT) // tl)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load4(x, row, i):
        # the logits x[row, i : i + 4] by one vector load (``vload.raw4``: i on a 4-logit
        # boundary of the row's address), widened to float32
        a, b, c, d = raw4(x, row, i)
        return widen(a), widen(b), widen(c), widen(d)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def load_round(xr, r, i, hi, step, vals):
        # One predicated round of a strided stream: vals[u] = the logit i + u * step of row r
        # for every slot u, NaN from hi on (skipped like any NaN); the loads are issued together.
        for u in range(len(vals)):
            j = i + np.int64(u) * step
            vu = _F32_NAN
            if j < hi:
                vu = load(xr, r, j)
            vals[u] = vu

    @cuda.jit(device=True, cache=JIT_CACHE)
    def count_done(ctr, row, nsplit, flag):
        # Thread 0 of a split block, after a fence that publishes its block's work: counts the
        # block done in the row's counter (phase 1's tail says why by residues). flag[0] = 1 in
        # the block that counts the row's last split, which takes nsplit off the count again and
        # fences before the block reads the other splits' work; 0 in the others. (The decrement
        # after the fence was timed on the H200 in the sixteenth session: greedy, min_p and
        # temperature 0.5-3.6% slower; not kept. BENCHMARKS.md, "The runs of a8bb59e, 44f2c3a
        # and e143927".)
        done = np.uint32(atomic_add(ctr, row, np.int32(1)))   # >= 0: see phase 1's tail
        flag[0] = 0
        if np.uint32(done % np.uint32(nsplit)) == np.uint32(nsplit - 1):
            flag[0] = 1
            atomic_add(ctr, row, np.int32(-nsplit))
            cuda.threadfence()

    @cuda.jit(device=True, cache=JIT_CACHE)
    def put_token(xr, r, tok, lp, lse, row, tokens, logprobs, status):
        # One thread: row's outputs for token tok (its logit in row r of xr), its logprob
        # against the row's log-sum-exp lse when lp != 0 (NaN otherwise).
        tokens[row] = np.int32(tok)
        if lp != 0:
            logprobs[row] = np.float32(np.float64(load(xr, r, tok)) - lse)
        else:
            logprobs[row] = _F32_NAN
        status[row] = STATUS_OK

    @cuda.jit(device=True, cache=JIT_CACHE)
    def hmass(fv, xm):
        # The reference's integer mass of a filter value fv below the maximum filter value xm
        # (float64): floor(exp(float64(fv) - xm) * 2**40 + 0.5), 0 below _MASS_CUT.
        if np.float64(fv) == xm:
            return _MASS_ONE   # the full unit, also for an infinite scaled maximum (inf - inf)
        d = np.float64(fv) - xm
        if not d > _MASS_CUT:
            return _I64_0
        return np.int64(math.floor(math.exp(d) * _MASS_SCALE + _F64_HALF))

    @cuda.jit(device=True, cache=JIT_CACHE)
    def topp_target(p, z):
        # The reference's top-p target for a total mass z (``reference.sampling.topp_target``):
        # ceil(float64(p) * float64(z)), monotone in z.
        return np.int64(math.ceil(np.float64(p) * np.float64(z)))

    def _partials(DRAW, LP, FAST, TOP2, TOP4, Q3, FINE):
        # DRAW and LP are compile-time constants of each variant. Rows that draw for every token
        # (temperature only: DRAW variants) stream the row by quads (a thread takes four
        # consecutive tokens, one Philox call for them); the others (greedy, top-k, and greedy
        # rows of a DRAW launch) stream it strided (thread t: tokens t + u * block, the layout
        # the tile maxima describe), UNROLL tokens per thread per round; FINE variants (the
        # large tile form's launches) stream them by runs of FINE_UNIT consecutive tokens and
        # write their tiles' maxima as they go (tpt is then the tokens of a tile).
        UNROLL = 8
        QU = 3 if Q3 else DRAW_QUADS   # quads a thread a round (4 * QU loads in flight)
        QV = 4 * QU
        NLP = MAX_BLOCK if LP else 1   # the float64 log-sum-exp slots of the fused tail
        NG2 = MAX_BLOCK if TOP2 and not TOP4 else 1   # the second-best score slots (TOP2)
        NL4 = MAX_BLOCK if TOP4 else 1   # the four-best lists and their bounds (TOP4)
        NUL = MAX_BLOCK if FAST else 1   # the threads the fast pass left unsettled (redraw)
        # the block's partial by warp shuffles ("tree" in warp_parts), not with the log-sum-exp
        # (its pairs merged in another order round differently from the tree's), nor in TOP4
        # forms (on an H100 their four-best butterflies made top_k 1000 at 8 x 151936 9% slower,
        # 12% with "tail": docs/PERF_NOTES.md, "Fifty-third session"); the warps' partials in
        # sm_wf / sm_wi
        WT = "tree" in WARP and not LP and not TOP4
        # the row's last block's tail by block maxima ("tail"), not with the log-sum-exp, in
        # TOP4 forms (as above) nor in the three-quad fast forms (offline on sm_90 it made their
        # temperature and TOP2 forms spill 36 and 12 bytes at 64 registers)
        TL = "tail" in WARP and not LP and not TOP4 and not Q3
        NW = MAX_BLOCK // 32 if WT or TL else 1
        # TOP2 fast variants fold thread 0's partial first quad after the fast pass instead of
        # before it (the late first quad): nothing of the second best is then live across the
        # fast loop, which ptxas then fits in 64 registers (4 blocks an SM, one wave of the
        # drawing splits) instead of 72 (64 x 151936 top_p alone 81.1 -> 75.0 us on the H200).
        # The tokens are the same: the late fold takes the quad's tokens in reverse index order,
        # ties to the token folded (it precedes every token already folded).
        LATE = FAST and TOP2
        # (FINE variants: units of FINE_UNIT tokens a thread loads a round, two; one with the
        # log-sum-exp, whose f16 form spilled 5 VGPRs on gfx1151 with two)
        FU = 1 if LP else FINE_UNITS

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold(v, j, bv, bi, lm, ls):
            # One token of a row that does not draw: the maximum (strict '>' over increasing
            # indices keeps the lowest index; NaN and -inf fail 'v > bv', +inf fails 'v < inf').
            if LP:
                if v > _F32_NINF and v < _F32_INF:
                    if v > bv:
                        bv = v
                        bi = j
                    lm, ls = lse_add32(lm, ls, v)
            elif v > bv and v < _F32_INF:
                bv = v
                bi = j
            return bv, bi, lm, ls

        def drawing_folds(FIRST):
            # The exact fold of one token of a row that draws, and of a split's partial quad
            # through it. FIRST (LATE variants' partial first quad, folded after the fast pass):
            # every token folded precedes those folded before it, so the quad goes from its last
            # token down and ties go to the token folded; otherwise ties keep the earlier one.
            TRACK2 = TOP2 or FIRST

            @cuda.jit(device=True, cache=JIT_CACHE)
            def fold(v, g0, j, inv_t, bv, bi, bg, bgi, bg2, bgi2, lm, ls):
                # One token: the maximum as in fold, and the Gumbel score float32(float32(v *
                # inv_t) + g0), the best kept (see _F32_NONE for the first); TOP2 variants keep
                # the second best too (bg2, bgi2).
                if v > _F32_NINF and v < _F32_INF:
                    if v > bv or (FIRST and v == bv):
                        bv = v
                        bi = j
                    g = np.float32(v * inv_t) + g0
                    if not g <= bg or (FIRST and g == bg):
                        if TRACK2:
                            bg2 = bg
                            bgi2 = bgi
                        bg = g
                        bgi = j
                    elif TRACK2 and (not g <= bg2 or (FIRST and g == bg2)):
                        bg2 = g
                        bgi2 = j
                    if LP:
                        lm, ls = lse_add32(lm, ls, v)
                return bv, bi, bg, bgi, bg2, bgi2, lm, ls

            @cuda.jit(device=True, cache=JIT_CACHE)
            def quad(xr, c, lo, hi, inv_t, sd, ps, bv, bi, bg, bgi, bg2, bgi2, lm, ls):
                # Quad c (tokens 4c .. 4c + 3), only its tokens in [lo, hi): a split's partial
                # first or last quad.
                g0, g1, g2, g3 = quad_gumbel(sd, ps, c)
                j = np.int64(c) << np.int64(2)
                for w in range(4):
                    u = 3 - w if FIRST else w
                    ju = j + np.int64(u)
                    v = _F32_NAN
                    if ju >= lo and ju < hi:
                        v = load(xr, 0, ju)
                    bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold(
                        v, pick4(g0, g1, g2, g3, u), ju, inv_t, bv, bi, bg, bgi, bg2, bgi2, lm,
                        ls)
                return bv, bi, bg, bgi, bg2, bgi2, lm, ls

            return fold, quad

        fold_draw, quad_masked = drawing_folds(False)
        quad_first = drawing_folds(True)[1]

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold_fast(v, x, j, inv_t, lbc, bv, a1, i1, a2, i2, a3, lm, ls):
            # One token of a drawing row on the fast pass (x: its Philox word): the maximum
            # without its index (a race row's tail reads the maximum only for STATUS_NO_FINITE:
            # its token is the Gumbel winner; a nucleus or rank row's histogram state only its
            # value, HS_KMAX's key and whether it is finite) and the LP pair; then, unless even the noise's cap leaves its score
            # below lb (a lower bound of the block's best exact score, so the token cannot win;
            # lbc = float32(lb - CAP_BASE): the test float32(s - key * CAP_SLOPE) < lbc implies
            # s + CAP_BASE - key * CAP_SLOPE < lb as reals, as rounding keeps order, so the
            # token's exact score float32(s + gumbel) <= lb, below the two tokens lb bounds
            # from below with room; one FFMA and a compare a token, the slope its immediate),
            # its approximate score float32(v * inv_t) + gumbel_fast into the
            # thread's three best, a1 >= a2 >= a3 (i1, i2: their tokens). j, i1, i2 are int32
            # (the row's index fits: n < 2**31): with int64 ones every token paid a 64-bit index
            # add and two selects more (sm_90: 571 -> 552 SASS instructions a round of 8 tokens,
            # rocsample/kernels/philox.py's notes have the rest). A score that is
            # not finite (an overflowed scaled logit) sets a3 to NaN: nothing is kept after it
            # and the block draws the thread's quads again exactly (fast_settled, redraw).
            # (d = 1 - u and the cap's key for every token, finite or not: computed inside the
            # test, the Philox call that makes them was duplicated into each token's branch)
            # (is_finite: one compare with |v|, sm_90 one instruction a token fewer; the exact
            # folds above keep their two compares: with is_finite there, ptxas lengthened the
            # temperature variant's fast loop by 9 a round)
            d = uniform_comp(x)
            key = gumbel_cap_key(d)
            if is_finite(v):
                if FMAX:
                    bv = fmax(bv, v)
                elif v > bv:
                    bv = v
                s = np.float32(v * inv_t)
                if not s - key * _CAP_SLOPE < lbc:
                    a = s + gumbel_fast_ud(_F32_1 - d, d)
                    if a > a3:
                        if not a < _F32_INF:
                            a3 = _F32_NAN
                        elif a > a2:
                            a3 = a2
                            if a > a1:
                                a2 = a1
                                i2 = i1
                                a1 = a
                                i1 = j
                            else:
                                a2 = a
                                i2 = j
                        else:
                            a3 = a
                    elif not a > _F32_NINF:
                        a3 = _F32_NAN
                if LP:
                    lm, ls = lse_add32(lm, ls, v)
            return bv, a1, i1, a2, i2, a3, lm, ls

        @cuda.jit(device=True, cache=JIT_CACHE)
        def publish_bound(sm_lb, a1, lb, less):
            # The block's lower bound of its best exact score, raised by this thread's best
            # approximate score less twice its error (exact(i1) >= a1 - eps, with room for the
            # roundings of the tests against it), through an int32 order key in shared memory
            # (a stale read is still a lower bound); returns the bound this thread now knows,
            # less `less` (CAP_BASE: the fast loop's cap test takes lb - CAP_BASE, and only the
            # TOP4 forms need lb itself after the loop), or lb as given where a1 is none.
            if not a1 > _F32_NINF:
                return lb
            lo = a1 - np.float32(2.0) * (_EPS_ABS + abs(a1) * _EPS_REL)
            t = cuda.local.array(1, np.float32)
            t[0] = lo
            b = np.int64(t.view(np.int32)[0])
            k = np.int32(b ^ ((b >> np.int64(31)) & np.int64(0x7FFFFFFF)))
            kk = np.int64(max(np.int32(atomic_max(sm_lb, 0, k)), k))
            w = cuda.local.array(1, np.int32)
            w[0] = np.int32(kk ^ ((kk >> np.int64(31)) & np.int64(0x7FFFFFFF)))
            return w.view(np.float32)[0] - less

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fast_settled(a1, a3):
            # Whether the fast pass's winner is among i1, i2: every other token's exact score
            # is at most a3 + eps (its approximation is at most a3, and a + eps(a) grows with a),
            # below i1's, at least a1 - eps. No third token (a3 = -inf): settled; a3 NaN (a
            # score that was not finite): not. (TOP2 variants pass a2 as a1: then i1 and i2
            # are the thread's two best.)
            if a3 == _F32_NINF:
                return True
            return a3 + (_EPS_ABS + abs(a3) * _EPS_REL) < a1 - (_EPS_ABS + abs(a1) * _EPS_REL)

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold_exact(v, t, n, inv_t, sd, ps, bg, bgi, bg2, bgi2):
            # Token t's exact score (token_gumbel; v its logit) folded into (bg, bgi) (and bg2,
            # bgi2) as fold_draw does; t = n: none.
            if t < n:
                g = np.float32(v * inv_t) + token_gumbel(sd, ps, t)
                if not g <= bg:
                    if TOP2:
                        bg2 = bg
                        bgi2 = bgi
                    bg = g
                    bgi = t
                elif TOP2 and not g <= bg2:
                    bg2 = g
                    bgi2 = t
            return bg, bgi, bg2, bgi2

        @cuda.jit(device=True, cache=JIT_CACHE)
        def fold_any(v, g0, t, inv_t, bg, bgi, bg2, bgi2):
            # Token t's exact score (g0 its noise; v its logit, skipped unless finite) folded
            # into (bg, bgi) (and bg2, bgi2) wherever its index falls among the tokens folded
            # before it: a tie goes to the lower index (redraw's tokens reach a thread in no
            # index order).
            if v > _F32_NINF and v < _F32_INF:
                g = np.float32(v * inv_t) + g0
                if not g <= bg or (g == bg and t < bgi):
                    if TOP2:
                        bg2 = bg
                        bgi2 = bgi
                    bg = g
                    bgi = t
                elif TOP2 and (not g <= bg2 or (g == bg2 and t < bgi2)):
                    bg2 = g
                    bgi2 = t
            return bg, bgi, bg2, bgi2

        @cuda.jit(device=True, cache=JIT_CACHE)
        def redraw(xr, qa, qb, bs1, tid, nun, ul, inv_t, sd, ps, bg, bgi, bg2, bgi2):
            # The exact draw of the quads of the nun threads listed in ul (thread t streamed
            # the whole quads qa + t + m * bs1 below qb, m < mq), spread over the block: work
            # item w = u * mq + m is quad m of listed thread u, and this thread takes w = tid,
            # tid + bs1, ... (w's parts kept by subtraction: no division a step). Each score is
            # folded into this thread's bg, bgi (bg2, bgi2) by fold_any; the block's tree then
            # finds them wherever they went. One unsettled thread costs the block about one
            # quad's draw; every thread unsettled (rows of infinite scores, T 1e-30) what each
            # drawing its own cost before. (An unsettled thread used to draw its own quads
            # again alone, about 400 SASS instructions a quad, behind which the whole block
            # waited: 31 quads at 256 x 32000, where about 2% of the TOP2 form's blocks hold
            # such a thread, tools/settle_emulation.py.)
            mq = np.int64(0)   # the most quads a thread streamed: ceil((qb - qa) / bs1)
            r = qb - qa
            while r > _I64_0:
                r -= bs1
                mq += np.int64(1)
            u = np.int64(0)
            m = np.int64(tid)
            while u < nun:
                if m >= mq:
                    m -= mq
                    u += np.int64(1)
                    continue
                c = qa + np.int64(ul[u]) + m * bs1
                if c < qb:
                    j = c << np.int64(2)
                    g0, g1, g2, g3 = quad_gumbel(sd, ps, c)
                    for k in range(4):
                        bg, bgi, bg2, bgi2 = fold_any(
                            load(xr, 0, j + np.int64(k)), pick4(g0, g1, g2, g3, k),
                            j + np.int64(k), inv_t, bg, bgi, bg2, bgi2)
                m += bs1
            return bg, bgi, bg2, bgi2

        @cuda.jit(cache=JIT_CACHE, **register_cap(
            cuda, ("partials", "partials_draw", "partials_fast")[2 if FAST else int(DRAW)],
            PARTIALS_MAX_REGISTERS[2 if FAST else int(DRAW)]))
        def _sample_partials_fast_kernel(x, n, chunk, temp, topk, topp, minp, seed, pos, tpt,
                                         kcap, pf, pi, tm, ctr, si, sf, hc, hm, tokens, logprobs,
                                         status, cflag):
            split, row, tid, bs, nsplit, lo, hi = split_block(chunk, n)
            sm_v = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_i = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_g = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_gi = cuda.shared.array(MAX_BLOCK, np.int64)
            sm_g2 = cuda.shared.array(NG2, np.float32)
            sm_gi2 = cuda.shared.array(NG2, np.int64)
            sm_l0 = cuda.shared.array(NL4, np.int64)
            sm_l1 = cuda.shared.array(NL4, np.int64)
            sm_l2 = cuda.shared.array(NL4, np.int64)
            sm_l3 = cuda.shared.array(NL4, np.int64)
            sm_lu = cuda.shared.array(NL4, np.int64)
            sm_lm = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_ls = cuda.shared.array(MAX_BLOCK, np.float32)
            sm_dm = cuda.shared.array(NLP, np.float64)
            sm_ds = cuda.shared.array(NLP, np.float64)
            last_blk = cuda.shared.array(1, np.int32)
            sm_lb = cuda.shared.array(1, np.int32)
            sm_nu = cuda.shared.array(1, np.int32)
            sm_ul = cuda.shared.array(NUL, np.int32)
            sm_wf = cuda.shared.array((3, NW), np.float32)
            sm_wi = cuda.shared.array((3, NW), np.int64)
            t = temp[row]
            k = topk[row]
            # (a drawing variant's seed and position with the row's parameters: loaded after
            # the fast pass's barrier, each was a round trip of its own on the critical path)
            sd = _U64_0
            ps = _U64_0
            if DRAW:
                sd = seed[row]
                ps = pos[row]
            tiles = row_topk(t, k, n)
            rp = topp[row]
            rmp = minp[row]
            mode = row_mode(t, k, rp, rmp, n, kcap)
            # TOP2 variants also draw top-p-only and top-k-only rows (row_nuc), their two best
            # scores
            nuc = TOP2 and mode == MODE_HIST and row_nuc(k, rp, rmp, n)
            race = DRAW and (mode == MODE_RACE or nuc)
            # the row as a one-row 2-D view: load(xr, 0, j) addresses from the row's base, with
            # no row-stride multiply per load
            xr = x[row:row + 1]
            bv = _F32_NINF
            bi = np.int64(n)
            bg = _F32_NONE
            bgi = np.int64(n)
            bg2 = _F32_NONE
            bgi2 = np.int64(n)
            lm = _F32_NINF
            ls = _F32_0
            ut = _I64_M1   # (TOP4) a composite bound of the tokens the thread did not keep
            bs1 = np.int64(bs)
            if DRAW and race:
                if FAST:
                    if tid == 0:
                        sm_lb[0] = _LB_NONE   # the order key of -inf: no bound yet
                        sm_nu[0] = 0   # no thread listed for the redraw yet
                    cuda.syncthreads()
                inv_t = _F32_1 / t
                # quads wholly inside [lo, hi) are [qa, qb); a partial first quad (lo not a
                # multiple of 4) is thread 0's, before its others, a partial last quad thread
                # bs - 1's, after its others: every thread folds its tokens in index order.
                qa = (lo + np.int64(3)) >> np.int64(2)
                qb = hi >> np.int64(2)
                if not LATE and tid == 0 and (lo & np.int64(3)) != 0 and lo < hi:
                    bv, bi, bg, bgi, bg2, bgi2, lm, ls = quad_masked(
                        xr, lo >> np.int64(2), lo, hi, inv_t, sd, ps, bv, bi, bg, bgi, bg2, bgi2,
                        lm, ls)
                c = qa + np.int64(tid)
                span = bs1 * np.int64(QU)
                vals = cuda.local.array(QV, np.float32)
                last = span - bs1
                # the fast pass (FAST variants) or the exact loops below: one of the two per
                # variant (with both in one kernel, ptxas made the fast loop 30% longer)
                if FAST:
                    a1 = _F32_NINF
                    a2 = _F32_NINF
                    a3 = _F32_NINF
                    i1 = np.int32(n)
                    i2 = np.int32(n)
                    lb = _F32_NINF
                    lbc = _F32_NINF   # lb - CAP_BASE (fold_fast's cap test)
                    while c + last < qb:
                        for u in range(QU):
                            j = (c + np.int64(u) * bs1) << np.int64(2)
                            for w in range(4):
                                vals[4 * u + w] = load(xr, 0, j + np.int64(w))
                        for u in range(QU):
                            cu = c + np.int64(u) * bs1
                            jj = np.int32(cu << np.int64(2))
                            x0, x1, x2, x3 = quad_words(sd, ps, cu)
                            bv, a1, i1, a2, i2, a3, lm, ls = fold_fast(
                                vals[4 * u], x0, jj, inv_t, lbc, bv, a1, i1, a2, i2, a3, lm,
                                ls)
                            bv, a1, i1, a2, i2, a3, lm, ls = fold_fast(
                                vals[4 * u + 1], x1, np.int32(jj + 1), inv_t, lbc, bv, a1, i1,
                                a2, i2, a3, lm, ls)
                            bv, a1, i1, a2, i2, a3, lm, ls = fold_fast(
                                vals[4 * u + 2], x2, np.int32(jj + 2), inv_t, lbc, bv, a1, i1,
                                a2, i2, a3, lm, ls)
                            bv, a1, i1, a2, i2, a3, lm, ls = fold_fast(
                                vals[4 * u + 3], x3, np.int32(jj + 3), inv_t, lbc, bv, a1, i1,
                                a2, i2, a3, lm, ls)
                        c += span
                        # (TOP2: a bound of the block's second best, from the thread's second)
                        if TOP4:
                            lb = publish_bound(sm_lb, a2 if TOP2 else a1, lb, _F32_0)
                            lbc = lb - _CAP_BASE
                        else:
                            # (lb itself not live across the loop: the logprob variants
                            # spilled 12 bytes with it, 3 local accesses a round more)
                            lbc = publish_bound(sm_lb, a2 if TOP2 else a1, lbc, _CAP_BASE)
                    while c < qb:
                        j = c << np.int64(2)
                        jj = np.int32(j)
                        x0, x1, x2, x3 = quad_words(sd, ps, c)
                        for u in range(4):
                            bv, a1, i1, a2, i2, a3, lm, ls = fold_fast(
                                load(xr, 0, j + np.int64(u)), pick4(x0, x1, x2, x3, u),
                                np.int32(jj + u), inv_t, lbc, bv, a1, i1, a2, i2, a3, lm, ls)
                        c += bs1
                    # (the split's partial names its first token for the maximum: fold_fast)
                    if bv > _F32_NINF:
                        bi = lo
                    # the winner: i1 or i2 by their exact scores, in index order after thread 0's
                    # partial first quad; or, unsettled, every quad of the thread drawn again,
                    # by the whole block (redraw)
                    if fast_settled(a2 if TOP2 else a1, a3):
                        if TOP4:
                            ut = fast_bound(a3, lb)
                        # (both logits loaded before either score: the second load, behind the
                        # first score's Philox call, was a round trip of its own)
                        ia = np.int64(min(i1, i2))
                        ib = np.int64(max(i1, i2))
                        va = _F32_NAN
                        vb = _F32_NAN
                        if ia < n:
                            va = load(xr, 0, ia)
                        if ib < n:
                            vb = load(xr, 0, ib)
                        bg, bgi, bg2, bgi2 = fold_exact(va, ia, n, inv_t, sd, ps, bg, bgi, bg2,
                                                        bgi2)
                        bg, bgi, bg2, bgi2 = fold_exact(vb, ib, n, inv_t, sd, ps, bg, bgi, bg2,
                                                        bgi2)
                    else:
                        sm_ul[atomic_add(sm_nu, 0, np.int32(1))] = np.int32(tid)
                    cuda.syncthreads()
                    nun = np.int64(sm_nu[0])
                    if nun > _I64_0:
                        bg, bgi, bg2, bgi2 = redraw(xr, qa, qb, bs1, tid, nun, sm_ul, inv_t, sd,
                                                    ps, bg, bgi, bg2, bgi2)
                    if LATE and tid == 0 and (lo & np.int64(3)) != 0 and lo < hi:
                        bv, bi, bg, bgi, bg2, bgi2, lm, ls = quad_first(
                            xr, lo >> np.int64(2), lo, hi, inv_t, sd, ps, bv, bi, bg, bgi, bg2,
                            bgi2, lm, ls)
                # whole rounds: QU full quads per thread, their 4 * QU loads issued first
                while not FAST and c + last < qb:
                    for u in range(QU):
                        j = (c + np.int64(u) * bs1) << np.int64(2)
                        for w in range(4):
                            vals[4 * u + w] = load(xr, 0, j + np.int64(w))
                    for u in range(QU):
                        cu = c + np.int64(u) * bs1
                        j = cu << np.int64(2)
                        g0, g1, g2, g3 = quad_gumbel(sd, ps, cu)
                        bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(
                            vals[4 * u], g0, j, inv_t, bv, bi, bg, bgi, bg2, bgi2, lm, ls)
                        bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(
                            vals[4 * u + 1], g1, j + 1, inv_t, bv, bi, bg, bgi, bg2, bgi2, lm, ls)
                        bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(
                            vals[4 * u + 2], g2, j + 2, inv_t, bv, bi, bg, bgi, bg2, bgi2, lm, ls)
                        bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(
                            vals[4 * u + 3], g3, j + 3, inv_t, bv, bi, bg, bgi, bg2, bgi2, lm, ls)
                    c += span
                # the last round: the full quads left, one at a time
                while not FAST and c < qb:
                    j = c << np.int64(2)
                    v0 = load(xr, 0, j)
                    v1 = load(xr, 0, j + 1)
                    v2 = load(xr, 0, j + 2)
                    v3 = load(xr, 0, j + 3)
                    g0, g1, g2, g3 = quad_gumbel(sd, ps, c)
                    bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(v0, g0, j, inv_t, bv, bi,
                                                                   bg, bgi, bg2, bgi2, lm, ls)
                    bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(v1, g1, j + 1, inv_t, bv, bi,
                                                                   bg, bgi, bg2, bgi2, lm, ls)
                    bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(v2, g2, j + 2, inv_t, bv, bi,
                                                                   bg, bgi, bg2, bgi2, lm, ls)
                    bv, bi, bg, bgi, bg2, bgi2, lm, ls = fold_draw(v3, g3, j + 3, inv_t, bv, bi,
                                                                   bg, bgi, bg2, bgi2, lm, ls)
                    c += bs1
                if tid == bs - 1 and (hi & np.int64(3)) != 0 and qb >= qa:
                    bv, bi, bg, bgi, bg2, bgi2, lm, ls = quad_masked(
                        xr, qb, lo, hi, inv_t, sd, ps, bv, bi, bg, bgi, bg2, bgi2, lm, ls)
            elif FINE:
                # The split's tokens in units of FINE_UNIT from lo (unit u: lo + 16 u ..), thread
                # t taking units t, t + bs, ..., FU at a time (4 * FU loads of four logits in
                # flight where the row's address and lo allow them, else single loads, NaN past
                # hi), folded in index order four at a time (the maximum as fold keeps it, and
                # the log-sum-exp pair token by token); a top-k row's tile maxima of tpt tokens (4, 8 or
                # 16; the largest finite logit, -inf for none) go to tm[row, split * tiles a split
                # + the tile's place in the split] as they are folded, every slot of the split
                # written (-inf past hi), so tau() and the histogram code read no stale slot.
                nun, per = fine_split(chunk, np.int64(tpt))
                base = np.int64(split) * nun * per
                vec = (lo & np.int64(3)) == _I64_0 and head4(x, row) == _I64_0
                fvals = cuda.local.array(FINE_VALS, np.float32)
                qm = cuda.local.array(4, np.float32)
                uu = np.int64(tid)
                while uu < nun:
                    for f in range(FU):
                        j0 = lo + (uu + np.int64(f) * bs1) * np.int64(FINE_UNIT)
                        if vec and j0 + np.int64(FINE_UNIT) <= hi:
                            for w in range(FINE_UNIT // 4):
                                a, b, c, d = load4(x, row, j0 + np.int64(4 * w))
                                fvals[FINE_UNIT * f + 4 * w] = a
                                fvals[FINE_UNIT * f + 4 * w + 1] = b
                                fvals[FINE_UNIT * f + 4 * w + 2] = c
                                fvals[FINE_UNIT * f + 4 * w + 3] = d
                        else:
                            for w in range(FINE_UNIT):
                                v = _F32_NAN
                                if j0 + np.int64(w) < hi:
                                    v = load(xr, 0, j0 + np.int64(w))
                                fvals[FINE_UNIT * f + w] = v
                    for f in range(FU):
                        uf = uu + np.int64(f) * bs1
                        j0 = lo + uf * np.int64(FINE_UNIT)
                        for w in range(FINE_UNIT // 4):
                            # the four logits' largest finite one (-inf: none), then fold's
                            # maximum from it: a strictly larger q moves (bv, bi) to the first
                            # of the four equal to it (tokens in index order, as fold)
                            q = _F32_NINF
                            for c in range(4):
                                v = fvals[FINE_UNIT * f + 4 * w + c]
                                if v > q and v < _F32_INF:
                                    q = v
                                if LP and v > _F32_NINF and v < _F32_INF:
                                    lm, ls = lse_add32(lm, ls, v)
                            qm[w] = q
                            if q > bv:
                                bv = q
                                bi = j0 + np.int64(4 * w)   # (its four: the first, below)
                        if tiles and uf < nun:
                            if per == np.int64(4):
                                for w in range(4):
                                    tm[row, base + uf * per + np.int64(w)] = qm[w]
                            elif per == np.int64(2):
                                tm[row, base + uf * per] = max(qm[0], qm[1])
                                tm[row, base + uf * per + _I64_1] = max(qm[2], qm[3])
                            else:
                                tm[row, base + uf] = max(max(qm[0], qm[1]), max(qm[2], qm[3]))
                    uu += bs1 * np.int64(FU)
                # fold's index: the first of the four logits from bi equal to bv (the
                # maximum's four, loaded again once; looking them up in the loop's registers made
                # ptxas hold 160 of them, against 61)
                if bi < np.int64(n):
                    jb = bi
                    for c in range(3, -1, -1):
                        jc = jb + np.int64(c)
                        if jc < hi and load(xr, 0, jc) == bv:
                            bi = jc
            else:
                i = lo + np.int64(tid)
                span = bs1 * np.int64(UNROLL)
                vals = cuda.local.array(UNROLL, np.float32)
                last = span - bs1
                # whole rounds: UNROLL loads per thread, no bounds test, issued before any is
                # used; folded in increasing index order
                while i + last < hi:
                    for u in range(UNROLL):
                        vals[u] = load(xr, 0, i + np.int64(u) * bs1)
                    for u in range(UNROLL):
                        bv, bi, lm, ls = fold(vals[u], i + np.int64(u) * bs1, bv, bi, lm, ls)
                    i += span
                # one predicated round (NaN past the end is skipped like any NaN)
                if i < hi:
                    load_round(xr, 0, i, hi, bs1, vals)
                    for u in range(UNROLL):
                        bv, bi, lm, ls = fold(vals[u], i + np.int64(u) * bs1, bv, bi, lm, ls)
            h1 = _I64_M1
            h2 = _I64_M1
            if TOP4 and nuc:
                # the thread's list for the block's four best: its two best as composites (a
                # token an exact fold put out is below the second), and its bound
                if bgi < np.int64(n):
                    h1 = comp_of(bg, bgi)
                if bgi2 < np.int64(n):
                    h2 = comp_of(bg2, bgi2)
                    ut = max(ut, h2 - _I64_1)
            if DRAW:
                if bgi == np.int64(n):
                    bg = _F32_NINF
                if TOP2 and not TOP4 and bgi2 == np.int64(n):
                    bg2 = _F32_NINF
            base = np.int64(split) * np.int64(tpt)
            if not FINE and tiles and tpt >= bs:
                tm[row, base + tid] = bv
            h3 = _I64_M1
            h4 = _I64_M1
            if WT:
                # the block's partial by warp shuffles: each warp's by a butterfly, then warp
                # 0's over the warps' (one barrier where the tree below takes one a level); a
                # tile maximum (tpt < bs: tile t the threads t + m * tpt) from the threads'
                # maxima in sm_v, read behind the same barrier
                if not FINE and tiles and tpt < bs:
                    sm_v[tid] = bv
                bv, bi = warp_top1(bv, bi)
                if TOP2 and not TOP4:
                    bg, bgi, bg2, bgi2 = warp_top2(bg, bgi, bg2, bgi2)
                elif DRAW:
                    bg, bgi = warp_top1(bg, bgi)
                wp = tid >> 5
                if (tid & 31) == 0:
                    sm_wf[0, wp] = bv
                    sm_wi[0, wp] = bi
                    sm_wf[1, wp] = bg
                    sm_wi[1, wp] = bgi
                    sm_wf[2, wp] = bg2
                    sm_wi[2, wp] = bgi2
                cuda.syncthreads()
                if not FINE and tiles and tpt < bs and tid < tpt:
                    tmx = sm_v[tid]
                    tj = tid + tpt
                    while tj < bs:
                        if sm_v[tj] > tmx:
                            tmx = sm_v[tj]
                        tj += tpt
                    tm[row, base + tid] = tmx
                if tid < 32:
                    # (lanes past the warps: none, -inf at index n)
                    bv = _F32_NINF
                    bi = np.int64(n)
                    bg = _F32_NINF
                    bgi = np.int64(n)
                    bg2 = _F32_NINF
                    bgi2 = np.int64(n)
                    if tid * 32 < bs:
                        bv = sm_wf[0, tid]
                        bi = sm_wi[0, tid]
                        bg = sm_wf[1, tid]
                        bgi = sm_wi[1, tid]
                        bg2 = sm_wf[2, tid]
                        bgi2 = sm_wi[2, tid]
                    bv, bi = warp_top1(bv, bi)
                    if TOP2 and not TOP4:
                        bg, bgi, bg2, bgi2 = warp_top2(bg, bgi, bg2, bgi2)
                    elif DRAW:
                        bg, bgi = warp_top1(bg, bgi)
            else:
                if TOP4 and nuc:
                    sm_l0[tid] = h1
                    sm_l1[tid] = h2
                    sm_l2[tid] = _I64_M1
                    sm_l3[tid] = _I64_M1
                    sm_lu[tid] = ut
                sm_v[tid] = bv
                sm_i[tid] = bi
                if DRAW:
                    sm_g[tid] = bg
                    sm_gi[tid] = bgi
                    if TOP2 and not TOP4:
                        sm_g2[tid] = bg2
                        sm_gi2[tid] = bgi2
                if LP:
                    sm_lm[tid] = lm
                    sm_ls[tid] = ls
                cuda.syncthreads()
                # bs is a power of two on this path: after the steps >= tpt, slot t < tpt holds
                # the maximum over the threads t + m * tpt (tile t).
                step = bs // 2
                while step > 0:
                    if tid < step:
                        o = tid + step
                        merge_max(sm_v, sm_i, tid, o)
                        if TOP2 and not TOP4:
                            merge_top2(sm_g, sm_gi, sm_g2, sm_gi2, tid, o)
                        elif DRAW:
                            merge_max(sm_g, sm_gi, tid, o)
                        if TOP4 and nuc:
                            merge_top4(sm_l0, sm_l1, sm_l2, sm_l3, sm_lu, tid, o)
                        if LP:
                            sm_lm[tid], sm_ls[tid] = lse_merge32(sm_lm[tid], sm_ls[tid],
                                                                 sm_lm[o], sm_ls[o])
                    cuda.syncthreads()
                    if not FINE and tiles and step == tpt and tid < tpt:
                        tm[row, base + tid] = sm_v[tid]
                    step //= 2
                if tid == 0:
                    bv = sm_v[0]
                    bi = sm_i[0]
                    if DRAW:
                        bg = sm_g[0]
                        bgi = sm_gi[0]
                        if TOP2 and not TOP4:
                            bg2 = sm_g2[0]
                            bgi2 = sm_gi2[0]
                    if TOP4 and nuc:
                        h2 = sm_l1[0]
                        h3 = sm_l2[0]
                        h4 = sm_l3[0]
                        ut = sm_lu[0]
                    if LP:
                        lm = sm_lm[0]
                        ls = sm_ls[0]
            if tid == 0:
                pf[row, split, 0] = bv
                pi[row, split, 0] = bi
                if DRAW:
                    pf[row, split, 1] = bg
                    pi[row, split, 1] = bgi
                    if TOP4:
                        # (slot 1 holds the best; its second to fourth as composites, -1 for
                        # none, and the bound of every token the block did not keep)
                        if nuc:
                            pi[row, split, 3] = h2
                            pi[row, split, 4] = h3
                            pi[row, split, 5] = h4
                            pi[row, split, 6] = ut
                    elif TOP2:
                        pf[row, split, 4] = bg2
                        pi[row, split, 3] = bgi2
                else:
                    pf[row, split, 1] = _F32_NINF
                    pi[row, split, 1] = np.int64(n)
                if LP:
                    pf[row, split, 2] = lm
                    pf[row, split, 3] = ls
                else:
                    pf[row, split, 2] = _F32_NINF
                    pf[row, split, 3] = _F32_0
            # Phase 1's tail: the row's last block to finish folds every split's partial and
            # finishes a greedy or unfiltered row (its token), or leaves the row's state for the
            # histogram path (MINP / HIST rows); tile rows go on in the finalize kernel. Each
            # block's partial is made visible (fence) before its count; the block that counts
            # the row's last split reads them after a fence and takes nsplit off the count
            # again. In stream order the count runs 0 .. nsplit - 1 and ends at 0. Counting
            # residues (mod nsplit) keeps it right afterwards even if launches of one plan were
            # ever run concurrently (a race whose tokens are wrong anyway): every launch adds
            # nsplit and takes it off once.
            # Tile rows are not counted: the finalize kernel reads their partials after this
            # launch has ended, so their blocks leave without the fence and the count (two
            # round trips before the finalize can start).
            if mode == MODE_TILE:
                return
            if tid == 0:
                cuda.threadfence()
                count_done(ctr, row, nsplit, last_blk)
            cuda.syncthreads()
            if last_blk[0] == 0:
                return
            if TL:
                # the row's maximum and best score by two block maxima (block_max: a warp's
                # butterfly and one pass over the warps' where "max" is on) instead of the tree
                cv, cg, _lm, _ls = split_fold(pf, pi, row, n, nsplit, 1 if DRAW else 0, 0, tid,
                                              bs)
                cv = block_max(sm_i, cv, tid, bs)
                if DRAW:
                    cg = block_max(sm_gi, cg, tid, bs)
            else:
                tail_reduce(pf, pi, row, n, nsplit, 1 if DRAW else 0, 1 if LP else 0, tid, bs,
                            sm_i, sm_gi, sm_dm, sm_ds)
                cv = sm_i[0]
                cg = _I64_M1
                if DRAW:
                    cg = sm_gi[0]
            lse = _F64_NAN
            if LP and sm_ds[0] > _F64_0:
                lse = sm_dm[0] + math.log(sm_ds[0])
            if nuc and TOP4:
                # the row's four best scores for the nucleus pass: every split's list folded by
                # its thread (one read), then the threads' lists by a tree over the first
                # min(nsplit, bs); the third and fourth only above every bound (see top4)
                c1 = cg
                t0 = _I64_M1
                t1 = _I64_M1
                t2 = _I64_M1
                t3 = _I64_M1
                u = _I64_M1
                s = tid
                while s < nsplit:
                    i1 = pi[row, s, 1]
                    f1 = pf[row, s, 1]
                    b1 = pi[row, s, 3]
                    b2 = pi[row, s, 4]
                    b3 = pi[row, s, 5]
                    u = max(u, pi[row, s, 6])
                    b0 = _I64_M1
                    if i1 < n:
                        b0 = comp_of(f1, i1)
                    t0, t1, t2, t3, d = merge4(t0, t1, t2, t3, b0, b1, b2, b3)
                    u = max(u, d)
                    s += bs
                sm_l0[tid] = t0
                sm_l1[tid] = t1
                sm_l2[tid] = t2
                sm_l3[tid] = t3
                sm_lu[tid] = u
                cuda.syncthreads()
                w = 1
                while w < nsplit and w < bs:
                    w *= 2
                step = w // 2
                while step > 0:
                    if tid < step:
                        merge_top4(sm_l0, sm_l1, sm_l2, sm_l3, sm_lu, tid, tid + step)
                    cuda.syncthreads()
                    step //= 2
                if tid == 0:
                    u = sm_lu[0]
                    c2 = sm_l1[0]
                    c3 = sm_l2[0]
                    c4 = sm_l3[0]
                    si[row, HS_W1] = comp_token(c1) if c1 >= _I64_0 else _I64_M1
                    si[row, HS_W2] = comp_token(c2) if c2 >= _I64_0 else _I64_M1
                    si[row, HS_W3] = comp_token(c3) if c3 >= _I64_0 and c3 > u else _I64_M1
                    si[row, HS_W4] = comp_token(c4) if c4 >= _I64_0 and c4 > u else _I64_M1
                    si[row, HS_NZ] = 0
                    si[row, HS_NS1] = 0
                    si[row, HS_NS2] = 0
                    si[row, HS_NS3] = 0
                    si[row, HS_NS4] = 0
                    si[row, HS_NUC] = 0
            elif nuc:
                # the row's two best scores for the nucleus pass: the best from the tree, the
                # second the best below it over every split's two (no third or fourth: the
                # finishing form reads them)
                c1 = cg
                cuda.syncthreads()
                c2 = second_best(pf, pi, row, n, nsplit, c1, tid)
                c2 = block_max(sm_gi, c2, tid, bs)
                if tid == 0:
                    si[row, HS_W1] = comp_token(c1) if c1 >= _I64_0 else _I64_M1
                    si[row, HS_W2] = comp_token(c2) if c2 >= _I64_0 else _I64_M1
                    si[row, HS_W3] = _I64_M1
                    si[row, HS_W4] = _I64_M1
                    si[row, HS_NZ] = 0
                    si[row, HS_NS1] = 0
                    si[row, HS_NS2] = 0
                    si[row, HS_NUC] = 0
            if mode == MODE_MINP or mode == MODE_HIST:
                # the state the histogram path starts from: the row maximum, counters at 0,
                # (HIST) an empty histogram
                if tid == 0:
                    si[row, HS_KMAX] = cv
                    si[row, HS_DONE] = 1 if cv < _I64_0 else 0
                    si[row, HS_NC] = 0
                    si[row, HS_MCNT] = 0
                    sf[row, HF_LSE] = lse
                    # the row asks for the histogram lane (a conditional node's body under a
                    # capture on CUDA: rocsample.kernels.graph_cond; nucleus rows: the nucleus
                    # pass finishes most and asks for those it leaves, and its routes make the
                    # lane conditional only where every histogram-path row is the pass's)
                    if cv >= _I64_0 and not nuc:
                        need_lane(cflag)
                if mode == MODE_HIST and cv >= _I64_0:
                    b = tid
                    while b < HB:
                        hc[row, b] = 0
                        hm[row, b] = 0
                        b += bs
                if cv >= _I64_0:
                    return
            if tid == 0:
                if cv < _I64_0:
                    tokens[row] = -1
                    logprobs[row] = _F32_NAN
                    status[row] = STATUS_NO_FINITE
                else:
                    c = cv
                    if DRAW and mode == MODE_RACE:
                        c = cg
                    put_token(xr, 0, comp_token(c), 1 if LP else 0, lse, row, tokens, logprobs,
                              status)

        return _sample_partials_fast_kernel

    variants = {}

    def partials(draw, lp, fast=False, top2=False, top4=False, q3=False, fine=False):
        # fast: the drawing variant with the fast pass (DRAW_FAST), for launches whose threads
        # have FAST_MIN_QUADS quads or more (the router decides); q3 (with fast): its rounds of
        # three quads (FAST3); top2: the drawing variant that
        # also draws top-p-only and top-k-only rows (row_nuc) and leaves their two best scores
        # for the nucleus pass or its rank form (rocsample.kernels.sampling_hist); top4 (with
        # top2; the routes whose nucleus pass finishes every row): their four best. Each thread still keeps its two best, plus a
        # composite bound of the tokens it did not keep (its third approximate score plus twice
        # the error and its skip bound lb, or its second best less one for what an exact fold
        # put out); phase 1's tree merges the threads' lists of four with their bounds
        # (``merge4``: the fifth best joins the bound) and the row's last block those of its
        # splits. The row's two best are exact as before; its third and fourth count only above
        # every bound, which a thread holding two of the row's best would raise past them.
        # fine: the large tile form's layout of the rows that do not draw (FINE_UNIT runs,
        # tiles of tpt consecutive tokens); the other variants' tiles are strided.
        key = (bool(draw), bool(lp), bool(draw and fast and DRAW_FAST), bool(draw and top2),
               bool(draw and top2 and top4), bool(draw and fast and DRAW_FAST and q3),
               bool(fine))
        kern = variants.get(key)
        if kern is None:
            kern = variants[key] = _partials(*key)
        return kern

    # --- greedy-only launches (fmax: above) --------------------------------------------------
    @cuda.jit(device=True, cache=JIT_CACHE)
    def max8(v, b):
        # the largest non-NaN of v[b : b + 8], by a tree of fmax (written out: registers only)
        return fmax(fmax(fmax(v[b], v[b + 1]), fmax(v[b + 2], v[b + 3])),
                    fmax(fmax(v[b + 4], v[b + 5]), fmax(v[b + 6], v[b + 7])))

    def _argmax():
        AV = ARGMAX_V
        W = 4 * AV

        @cuda.jit(device=True, cache=JIT_CACHE)
        def round4(x, row, hd, i, hi, step, vals):
            # One round of AV vectors: vals[4 v + c] = the logit hd + 4 (i + v * step) + c of
            # row ``row``, NaN (skipped like any NaN) where vector i + v * step is past hi
            for v in range(AV):
                q = i + np.int64(v) * step
                a = b = c = d = _F32_NAN
                if q < hi:
                    a, b, c, d = load4(x, row, hd + 4 * q)
                vals[4 * v] = a
                vals[4 * v + 1] = b
                vals[4 * v + 2] = c
                vals[4 * v + 3] = d

        @cuda.jit(cache=JIT_CACHE)
        def _argmax_kernel(x, n, chunk, gs, ctr, tokens, logprobs, status):
            # Phase 1 of a call whose every row is greedy and wants no logprob: each row's
            # lowest index among its largest finite logits, in one launch of (splits x rows)
            # blocks. A row is read four logits a load (``vload.raw4``: one 16-byte load of
            # float32): its first hd logits (0 to 3, up to the first 4-logit boundary of its
            # address, ``head4``) and its last (n - hd) % 4 are single loads by split 0's first
            # threads; the vectors between are split ``ceil(chunk / 4)`` a split. Each thread
            # streams its vectors t + v * block of the split AV at a time (the last round
            # predicated, NaN past the end) and folds each round by a tree of fmax into one
            # value, with no index: a round is kept when its maximum beats the thread's best
            # strictly (ties keep the earlier round). A round whose maximum is +inf (not
            # selectable) is folded again without it. The block's largest order key, then only
            # the threads holding it load their best round again (one round trip, from L2 as a
            # rule) for its first slot equal to the best, and the block's lowest such index
            # wins. One split: the block writes the row's outputs. More: thread 0 folds
            # (order key << 32 | ~index) into the row's slot gs[row] by one 64-bit atomic max,
            # fences and counts the block done in ctr (count_done, as phase 1's tail); the
            # block counting the row's last split reads the slot, puts it back to 0 and writes
            # the outputs. Same tokens as fold: NaN and +inf are never taken, -0.0 ties
            # with +0.0, the lowest index wins, and a row with nothing selectable gets -1 with
            # STATUS_NO_FINITE.
            sm = cuda.shared.array(MAX_BLOCK, np.int64)
            hd = min(head4(x, cuda.blockIdx.y), n)
            nv = (n - hd) >> 2            # vectors: logits hd + 4 q .. hd + 4 q + 3
            # the split's vectors [lo, hi), ceil(chunk / 4) a split
            split, row, tid, bs, nsplit, lo, hi = split_block((chunk + 3) >> 2, nv)
            bs1 = np.int64(bs)
            span = bs1 * np.int64(AV)
            last = span - bs1
            vals = cuda.local.array(W, np.float32)
            bv = _F32_NINF
            br = _I64_M1
            i = lo + np.int64(tid)
            while i < hi:
                if i + last < hi:
                    for v in range(AV):
                        a, b, c, d = load4(x, row, hd + 4 * (i + np.int64(v) * bs1))
                        vals[4 * v] = a
                        vals[4 * v + 1] = b
                        vals[4 * v + 2] = c
                        vals[4 * v + 3] = d
                else:
                    round4(x, row, hd, i, hi, bs1, vals)
                rm = max8(vals, 0)
                for q in range(8, W, 8):
                    rm = fmax(rm, max8(vals, q))
                if rm > bv:
                    if rm == _F32_INF:
                        rm = _F32_NINF
                        for u in range(W):
                            if vals[u] < _F32_INF:
                                rm = fmax(rm, vals[u])
                    if rm > bv:
                        bv = rm
                        br = i
                i += span
            # the logits outside the vectors: split 0's threads 0 .. hd + (n - tl) - 1
            sv = _F32_NINF
            sj = _I64_M1
            if split == 0:
                tl = hd + 4 * nv
                if tid < hd + (n - tl):
                    sj = np.int64(tid) if tid < hd else tl + (np.int64(tid) - hd)
                    s = load(x, row, sj)
                    if s < _F32_INF:
                        sv = s
            tv = bv if bv >= sv else sv
            kv = _I64_M1
            if tv > _F32_NINF:
                kv = np.int64(order_key(tv))
            km = block_max(sm, kv, tid, bs)
            cand = _I64_M1 - n   # minus the lowest index: below -n where the thread has none
            if km >= _I64_0 and kv == km:
                if br >= _I64_0 and bv == tv:
                    round4(x, row, hd, br, hi, bs1, vals)
                    for u in range(W - 1, -1, -1):
                        if vals[u] == tv:
                            cand = -(hd + 4 * (br + np.int64(u // 4) * bs1) + np.int64(u % 4))
                if sj >= _I64_0 and sv == tv and -sj > cand:
                    cand = -sj
            best = -block_max(sm, cand, tid, bs)
            if tid != 0:
                return
            if nsplit > 1:
                key = _U64_0
                if km >= _I64_0:
                    key = (np.uint64(km) << np.uint64(32)) | np.uint64(_LOW32 - best)
                atomic_max(gs, row, key)
                cuda.threadfence()
                last = cuda.local.array(1, np.int32)
                count_done(ctr, row, nsplit, last)
                if last[0] == 0:
                    return
                key = atomic_max(gs, row, _U64_0)   # (a read from L2)
                gs[row] = _U64_0
                km = _I64_M1
                if key != _U64_0:
                    km = _I64_0
                    best = _LOW32 - np.int64(key & np.uint64(_LOW32))
            logprobs[row] = _F32_NAN
            if km < _I64_0:
                tokens[row] = -1
                status[row] = STATUS_NO_FINITE
            else:
                tokens[row] = np.int32(best)
                status[row] = STATUS_OK

        return _argmax_kernel

    argmax_kern = []

    def argmax():
        # phase 1 of greedy-only calls without logprobs (built on first use)
        if not argmax_kern:
            argmax_kern.append(_argmax())
        return argmax_kern[0]

    # --- block-wide helpers (every thread of the block must call them) ----------------------
    @cuda.jit(device=True, cache=JIT_CACHE)
    def block_incl_scan(sm, tid, bs):
        # Inclusive prefix sum of sm[0:bs] (int64), Hillis-Steele.
        off = 1
        while off < bs:
            add = _I64_0
            if tid >= off:
                add = sm[tid - off]
            cuda.syncthreads()
            sm[tid] += add
            cuda.syncthreads()
            off *= 2

    @cuda.jit(device=True, cache=JIT_CACHE)
    def digit_pick(hist, sm_s, sm_r, tid, bs, need):
        # hist[0:_RBINS] counts per digit; find the digit d (from the top) where the count of
        # keys with a larger digit is < need <= that count plus hist[d]. Writes
        # sm_r[0] = d, sm_r[1] = count above d. Thread t owns bins counted from the top.
        per = (_RBINS + bs - 1) // bs
        c = _I64_0
        for q in range(per):
            p_ = np.int64(tid) * per + q
            if p_ < _RBINS:
                c += hist[_RBINS - 1 - p_]
        sm_s[tid] = c
        cuda.syncthreads()
        block_incl_scan(sm_s, tid, bs)
        run = sm_s[tid] - c
        if run < need and run + c >= need:
            for q in range(per):
                p_ = np.int64(tid) * per + q
                if p_ < _RBINS:
                    hb = hist[_RBINS - 1 - p_]
                    if run < need and run + hb >= need:
                        sm_r[0] = _RBINS - 1 - p_
                        sm_r[1] = run
                    run += hb
        cuda.syncthreads()

    @cuda.jit(device=True, cache=JIT_CACHE)
    def bitonic_desc(arr, size, tid, bs):
        # Sorts arr[0:size] (int64, size a power of two) descending. Index math by shifts: a
        # 64-bit division per compare-swap made this the slowest step of the whole path.
        half = size // 2
        width = np.int64(2)
        lw = np.int64(1)
        while width <= size:
            stride = width // 2
            ls = lw - 1
            while stride > 0:
                q = np.int64(tid)
                while q < half:
                    a_ = ((q >> ls) << (ls + 1)) | (q & (stride - 1))
                    b_ = a_ + stride
                    desc = (a_ & width) == 0
                    va = arr[a_]
                    vb = arr[b_]
                    if (va < vb) == desc:
                        arr[a_] = vb
                        arr[b_] = va
                    q += bs
                cuda.syncthreads()
                stride //= 2
                ls -= 1
            width *= 2
            lw += 1

    dist_bin = cuda.jit(device=True, cache=JIT_CACHE)(_dist_bin)
    bin_dlim = cuda.jit(device=True, cache=JIT_CACHE)(_bin_dlim)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def bin_tau(kmax, b):
        # The lowest key of bin b below the row's maximum key kmax (every key in the bins <= b
        # is at least it), clamped at 0: the tile finalizes' and the histogram pass's tau.
        tau = kmax - bin_dlim(b)
        if tau < _I64_0:
            tau = _I64_0
        return tau

    @cuda.jit(device=True, cache=JIT_CACHE)
    def key_value(key):
        # Inverse of order_key: the float32 whose key is ``key`` (+0.0 for the folded zeros).
        if key >= _SIGN31:
            return bits_f32(key - _SIGN31)
        return bits_f32(_LOW32 - key)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def tile_sel(tm, row, j, kmax, inv_t, vllm, bsel):
        # Whether tile j of the row is in the tile list: a finite maximum whose key distance to
        # the row maximum falls in a bin <= bsel.
        return max_sel(tm[row, j], kmax, inv_t, vllm, bsel)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def max_sel(v, kmax, inv_t, vllm, bsel):
        # tile_sel of a tile maximum v already loaded
        if not is_finite(v):
            return False
        return dist_bin(kmax - filter_key(v, inv_t, vllm)) <= bsel

    @cuda.jit(device=True, cache=JIT_CACHE)
    def race(best, cj, sv, is_vllm, inv_t, sd, ps):
        # The draw's fold of a survivor: the larger of best and its (score key, -index)
        # composite, sv its filter value (scaled here for llama).
        if not is_vllm:
            sv = np.float32(sv * inv_t)
        sc = score_from_scaled(sv, sd, ps, comp_token(cj))
        if sc > best:
            return sc
        return best

    @cuda.jit(device=True, cache=JIT_CACHE)
    def count_greater(arr, me, q, qe):
        # How many of arr[q:qe] exceed me: four loads per step, issued together (the slots up to
        # three past qe are inside the array and masked).
        c_ = _I64_0
        while q < qe:
            a0 = arr[q]
            a1 = arr[q + 1]
            a2 = arr[q + 2]
            a3 = arr[q + 3]
            if a0 > me:
                c_ += _I64_1
            if a1 > me and q + 1 < qe:
                c_ += _I64_1
            if a2 > me and q + 2 < qe:
                c_ += _I64_1
            if a3 > me and q + 3 < qe:
                c_ += _I64_1
            q += 4
        return c_

    @cuda.jit(device=True, cache=JIT_CACHE)
    def tile_round(tm, row, j0, G, bsw, tv):
        # A thread's round of tile maxima from slot j0 (the small finalize's first, before its
        # split reduction; each of tau()'s): tv[u] = tm[row, j0 + u * bsw] (NaN at
        # slots from G)
        for u in range(TPRE):
            j = j0 + np.int64(u) * bsw
            v = _F32_NAN
            if j < G:
                v = tm[row, j]
            tv[u] = v

    def _finalize(LARGE):
      # LARGE: rows with top_k up to KCAP_L (every tile row of its launch), in the same
      # shared memory (48 KB of static shared memory a block): the candidates come gathered by
      # ``gather()``'s launch, a block a (split, row), in the scratch ``gc`` (no tile maxima
      # are read here: its own short path copies the split lists into cand instead of the
      # small form's tile histogram, tile list and gather); a longer candidate list, the
      # sorted candidates kept in the list itself (bitonic sort in place, or the rank-scattered
      # copy in its upper half), their values read back from the keys, and the counting rank's
      # counts in the histogram (free by then); top-p by a block scan of the masses.
      # Either form: a top-k-only row (no top-p, no min-p) with more than RANK_MAX candidates
      # takes the selection (b'') instead of the sort and the masses.
      KC = KCAP_L if LARGE else KCAP
      CM = CAND_MAX_L if LARGE else CAND_MAX
      CH = CM // 2
      TLM = 1 if LARGE else TLMAX
      OFS_N = SPLITS_MAX if LARGE else 1
      SB_N = 1 if LARGE else GMAX
      SRT_N = 1 if LARGE else KCAP
      RK_N = 1 if LARGE else KCAP
      MN = KC + 4

      @cuda.jit(cache=JIT_CACHE)
      def kern(x, n, nsplit, chunk, tpt, cap, kcap, temp, topk, topp,
                                       minp, vllm, seed, pos, lp, pf, pi, tm, tokens,
                                       logprobs, status, gc):
          row = cuda.blockIdx.x
          # The row's parameters, loaded once here (a load after a barrier is not merged with
          # one before it: each would be a round trip on the critical path).
          t = temp[row]
          k = topk[row]
          p = topp[row]
          mp = minp[row]
          sd = seed[row]
          ps = pos[row]
          tid = cuda.threadIdx.x
          bs = cuda.blockDim.x
          sm_c = cuda.shared.array(MAX_BLOCK, np.int64)
          sm_lm = cuda.shared.array(MAX_BLOCK, np.float64)
          sm_ls = cuda.shared.array(MAX_BLOCK, np.float64)
          f1c = cuda.shared.array(NFOLD, np.int64)
          f1m = cuda.shared.array(NFOLD, np.float64)
          f1s = cuda.shared.array(NFOLD, np.float64)
          res = cuda.shared.array(4, np.float64)
          sb = cuda.shared.array(SB_N, np.int16)
          tl = cuda.shared.array(TLM, np.int32)
          cand = cuda.shared.array(CM, np.int64)
          srt = cuda.shared.array(SRT_N, np.int64)
          sval = cuda.shared.array(SRT_N, np.float32)
          mass = cuda.shared.array(MN, np.int64)
          hist = cuda.shared.array(NBIN, np.int32)
          rk = cuda.shared.array(RK_N, np.int32)
          grp = cuda.shared.array(NGRP, np.int32)
          cnt = cuda.shared.array(4, np.int32)
          sm_r = cuda.shared.array(16, np.int64)
          offs = cuda.shared.array(OFS_N, np.int32)
          bsw = np.int64(bs)
          # This thread's first tile maxima are loaded first, so their latency hides behind
          # the split reduction (the small form: the large one reads no tile maxima).
          G = np.int64(nsplit) * np.int64(tpt)
          tv = cuda.local.array(TPRE, np.float32)
          if not LARGE:
              tile_round(tm, row, np.int64(tid), G, bsw, tv)
          b_ = tid
          while b_ < NBIN:
              hist[b_] = np.int32(0)
              b_ += bs
          if tid < 4:
              cnt[tid] = np.int32(0)
          if not LARGE:
              b_ = tid
              while b_ < KCAP:
                  rk[b_] = np.int32(0)
                  b_ += bs
          # (r) the split partials: the (key, -index) composite of the maximum (ties to the lower
          # index), and the (max, sum exp) pair when logprobs are wanted.
          cv = reduce_splits(pf, pi, row, n, nsplit, lp, tid, bs, sm_c, sm_lm, sm_ls, f1c, f1m,
                             f1s, res, sm_r)
          # Tile rows only: phase 1 finished greedy and unfiltered rows, the histogram path the
          # rest. The block-uniform exit comes after the split reduction, not before it: the
          # test needs the row's parameters, and before it the tile maxima's preload and the
          # partials' loads waited a round trip for them (H200, seventeenth session: 0.1-0.4 us
          # off every tile-finalize case, chain 1 x 32000 15.47 -> 15.14 us). A block of another
          # mode's row reduces its splits for nothing first (its tile maxima are not read).
          if row_mode(t, k, p, mp, n, kcap) != MODE_TILE:
              return   # (after reduce_splits' last barrier)
          lse = row_lse(res)
          if cv < _I64_0:
              if tid == 0:
                  tokens[row] = -1
                  logprobs[row] = np.float32(np.nan)
                  status[row] = STATUS_NO_FINITE
              return
          # ---- a top-k row: every thread of the block from here on -------------------------
          is_vllm = vllm != 0
          inv_t = _F32_1 / t
          kk = np.int64(k)
          m = key_value(cv >> _S31)
          kmax = filter_key(m, inv_t, is_vllm)
          nq = _I64_0
          C = _I64_0
          if LARGE:
              # (b) the candidates gather() found (from tau()'s bound), a list a split (its
              # count in slot 0, its composites after it): the lists' offsets in cand by thread
              # 0, then each slot of cand from its split's list. A list past its room or past
              # cap in all: the overflow path below (C = cap + 1). (The histogram, zeroed above
              # and not used for tiles here, serves the counting rank: rk.)
              s_ = tid
              while s_ < nsplit:
                  offs[s_] = np.int32(min(gc[row, s_, 0], np.int64(cap) + _I64_1))
                  s_ += bs
              cuda.syncthreads()
              if tid == 0:
                  over = np.int64(cap) + _I64_1
                  seg = min(np.int64(cap), np.int64(gc.shape[2]) - _I64_1)
                  tot = _I64_0
                  for s2 in range(nsplit):
                      c2 = np.int64(offs[s2])
                      offs[s2] = np.int32(tot)
                      if c2 > seg:
                          c2 = over
                      tot = min(tot + c2, over)
                  cnt[0] = np.int32(tot)
              cuda.syncthreads()
              C = np.int64(cnt[0])
              if C <= np.int64(cap):
                  j = np.int64(tid)
                  while j < C:
                      # the split whose list holds slot j: the last s with offs[s] <= j
                      a_ = _I64_0
                      b2 = np.int64(nsplit)
                      while b2 - a_ > _I64_1:
                          mid = (a_ + b2) >> _I64_1
                          if np.int64(offs[mid]) <= j:
                              a_ = mid
                          else:
                              b2 = mid
                      cand[j] = gc[row, a_, _I64_1 + j - np.int64(offs[a_])]
                      j += bsw
                  cuda.syncthreads()
          else:
              # (a) tau from a histogram of the tile maxima by their key distance to the row
              # maximum (dist_bin: monotone, 1/16-octave bins): the first bin B where the tiles
              # counted from the maximum down reach k; tau = the lowest key of bin B. At least k
              # tiles have their maximum >= tau, so at least k tokens do. (Fewer than k finite
              # tiles: tau = 0, every finite token.)
              for u in range(TPRE):
                  j = np.int64(tid) + np.int64(u) * bsw
                  if j < G:
                      v = tv[u]
                      b = np.int64(NBIN)
                      if is_finite(v):
                          b = dist_bin(kmax - filter_key(v, inv_t, is_vllm))
                          atomic_add(hist, b, np.int32(1))
                      sb[j] = np.int16(b)
              j = np.int64(tid) + np.int64(TPRE) * bsw
              while j < G:
                  v = tm[row, j]
                  b = np.int64(NBIN)
                  if is_finite(v):
                      b = dist_bin(kmax - filter_key(v, inv_t, is_vllm))
                      atomic_add(hist, b, np.int32(1))
                  sb[j] = np.int16(b)
                  j += bsw
              cuda.syncthreads()
              # the bin where the count from the maximum down reaches k
              bin_select(hist, grp, sm_r, kk, tid, bs)
              bsel = sm_r[0]
              tau = bin_tau(kmax, bsel)
              # the tiles of bins <= B (maximum key >= tau), compacted; their order does not
              # matter (candidates are ranked by (key desc, index asc) below). (The large
              # form's list in tile order, a block scan, with the gather's work items
              # token-major, so neighbouring lanes load neighbouring tiles' tokens: timed on the
              # H200 in the sixteenth session, top_k 1000 64 x 151936 100.8 -> 99.4 us,
              # 64 x 262144 113.1 -> 117.1; not kept. Its gather by a launch of its own:
              # 99.4 -> 75.9 on an H100, forty-third session.)
              j = np.int64(tid)
              while j < G:
                  if np.int64(sb[j]) <= bsel:
                      slot = atomic_add(cnt, 1, np.int32(1))
                      if slot < TLM:
                          tl[slot] = np.int32(j)
                  j += bsw
              cuda.syncthreads()
              nq = np.int64(cnt[1])
              if nq <= TLM:
                  # (b) gather the finite tokens with key >= tau from those tiles. Tile q =
                  # split * tpt + r holds the tokens split * chunk + r + c * tpt (thread t of a
                  # split streams t + u * block, and phase 1's block is a multiple of tpt, a
                  # power of two). Work item w is token c = w mod ept of list slot w div ept (a
                  # float64 quotient, corrected).
                  ept = (chunk + tpt - 1) // tpt
                  inv_ept = _F64_1 / np.float64(ept)
                  total = nq * ept
                  tb = np.int64(0)
                  while (np.int64(1) << tb) < tpt:
                      tb += 1
                  tmask = np.int64(tpt) - 1
                  w0 = np.int64(tid)
                  vals = cuda.local.array(GU, np.float32)
                  idxs = cuda.local.array(GU, np.int64)
                  while w0 < total:
                      for u2 in range(GU):
                          w = w0 + np.int64(u2) * bsw
                          idxs[u2] = _I64_M1
                          if w < total:
                              sl = np.int64(np.float64(w) * inv_ept)
                              if sl * ept > w:
                                  sl -= _I64_1
                              elif (sl + _I64_1) * ept <= w:
                                  sl += _I64_1
                              c = w - sl * ept
                              q = np.int64(tl[sl])
                              sp = q >> tb
                              lo = sp * chunk
                              i = lo + (q & tmask) + (c << tb)
                              if i < min(lo + chunk, n):
                                  idxs[u2] = i
                                  vals[u2] = load(x, row, i)
                      for u2 in range(GU):
                          i = idxs[u2]
                          if i >= _I64_0:
                              v = vals[u2]
                              if is_finite(v):
                                  key = filter_key(v, inv_t, is_vllm)
                                  if key >= tau:
                                      slot = np.int64(atomic_add(cnt, 0, np.int32(1)))
                                      if slot < cap:
                                          cand[slot] = (key << _S31) | (_LOW31 - i)
                      w0 += bsw * np.int64(GU)
                  cuda.syncthreads()
                  C = np.int64(cnt[0])
          if nq > TLM or C > cap:
              # Overflow: exact k-th key by a radix select over the whole row, then gather the
              # top k in index order (ties to the lower index).
              need = kk
              prefix = _I64_0
              nfin = _I64_0
              for rnd in range(4):
                  sh = np.int64(24 - 8 * rnd)
                  b_ = tid
                  while b_ < _RBINS:
                      mass[b_] = _I64_0
                      b_ += bs
                  cuda.syncthreads()
                  i = np.int64(tid)
                  while i < n:
                      v = load(x, row, i)
                      if is_finite(v):
                          key = filter_key(v, inv_t, is_vllm)
                          if rnd == 0 or (key >> (sh + 8)) == prefix:
                              atomic_add(mass, (key >> sh) & np.int64(_RBINS - 1), _I64_1)
                      i += bsw
                  cuda.syncthreads()
                  if rnd == 0:
                      tot = _I64_0
                      for b2 in range(_RBINS):
                          tot += mass[b2]
                      nfin = tot
                      if need > nfin:
                          need = nfin
                      kk = need
                  digit_pick(mass, sm_c, sm_r, tid, bs, need)
                  prefix = (prefix << np.int64(8)) | sm_r[0]
                  need -= sm_r[1]
                  cuda.syncthreads()
              vkey = prefix
              # need = how many tokens with key == vkey the top kk takes (lowest indices first)
              taken = _I64_0
              ties = _I64_0
              i0 = _I64_0
              while i0 < n and taken < kk:
                  i = i0 + np.int64(tid)
                  gt = _I64_0
                  eq = _I64_0
                  key = _I64_0
                  if i < n:
                      v = load(x, row, i)
                      if is_finite(v):
                          key = filter_key(v, inv_t, is_vllm)
                          if key > vkey:
                              gt = _I64_1
                          elif key == vkey:
                              eq = _I64_1
                  sm_c[tid] = eq
                  cuda.syncthreads()
                  block_incl_scan(sm_c, tid, bs)
                  eq_rank = ties + sm_c[tid] - eq
                  eq_tot = sm_c[bs - 1]
                  cuda.syncthreads()
                  take = gt
                  if eq == _I64_1 and eq_rank < need:
                      take = _I64_1
                  sm_c[tid] = take
                  cuda.syncthreads()
                  block_incl_scan(sm_c, tid, bs)
                  slot = taken + sm_c[tid] - take
                  tk_tot = sm_c[bs - 1]
                  if take == _I64_1 and slot < CM:
                      cand[slot] = (key << _S31) | (_LOW31 - i)
                  ties += eq_tot
                  taken += tk_tot
                  cuda.syncthreads()
                  i0 += bsw
              C = taken
          elif C < kk:
              kk = C
          K = kk
          # (b'') the selection, a top-k-only row past RANK_MAX: no order is needed, only the K-th
          # largest composite (cut): a histogram of the candidates' key distances to the row
          # maximum (dist_bin, as the tile maxima's), the bin B where the count reaches K
          # (bin_select), then among the M candidates of bin B (in mass, free here) the one
          # with need - 1 larger, need = K less the candidates of the bins before B (all of
          # them larger: the bins are monotone in the key). Survivors: the composites >= cut
          # (every candidate where K = C). More than KC in bin B (heavy near-ties): the sort.
          cut = _I64_M1
          sel = C > RANK_MAX and p >= _F32_1 and mp <= _F32_0
          if sel and K < C:
              b_ = tid
              while b_ < NBIN:
                  hist[b_] = np.int32(0)
                  b_ += bs
              if tid == 0:
                  sm_r[8] = _I64_0
                  sm_r[9] = _I64_0
                  sm_r[10] = _I64_M1
              cuda.syncthreads()
              j = np.int64(tid)
              while j < C:
                  atomic_add(hist, dist_bin(kmax - (cand[j] >> _S31)), np.int32(1))
                  j += bsw
              cuda.syncthreads()
              bin_select(hist, grp, sm_r, K, tid, bs)
              bk = sm_r[0]
              j = np.int64(tid)
              while j < C:
                  cj = cand[j]
                  b = dist_bin(kmax - (cj >> _S31))
                  if b < bk:
                      atomic_add(sm_r, 8, _I64_1)
                  elif b == bk:
                      slot = atomic_add(sm_r, 9, _I64_1)
                      if slot < np.int64(KC):
                          mass[slot] = cj
                  j += bsw
              cuda.syncthreads()
              M = sm_r[9]
              need = K - sm_r[8]
              if M <= np.int64(KC):
                  j = np.int64(tid)
                  while j < M:
                      me = mass[j]
                      if count_greater(mass, me, _I64_0, M) == need - _I64_1:
                          sm_r[10] = me
                      j += bsw
                  cuda.syncthreads()
                  cut = sm_r[10]
              else:
                  sel = False
          # (b') the first K candidates by (key desc, index asc) = composite desc: srt[r], with
          # the filter value sval[r] (raw logit for llama, scaled for vllm: the key's float),
          # the integer mass[r] = floor(exp(float64(value) - float64(max)) * 2**40 + 0.5), and
          # cnt[2] = how many of them pass min-p (a prefix: they are sorted).
          xm = np.float64(m)                      # llama reference: the raw maximum
          if is_vllm:
              xm = np.float64(np.float32(m * inv_t))  # vllm: the scaled maximum
          thr = _F64_NINF
          if mp > _F32_0:
              thr = xm + math.log(np.float64(mp))
          if C > RANK_MAX and not sel:
              P2 = np.int64(1)
              while P2 < C:
                  P2 *= 2
              j = C + np.int64(tid)
              while j < P2:
                  cand[j] = _I64_M1
                  j += bsw
              cuda.syncthreads()
              bitonic_desc(cand, P2, tid, bs)
          # Rank by counting the larger composites (C <= RANK_MAX): candidate jj's count is split
          # over ``parts`` threads (tid = part * Cp + jj, Cp = C rounded up to a power of two),
          # each counting one stretch of the list and adding it to rk[jj]. Above RANK_MAX the
          # bitonic sort above has ordered cand: the rank is the position.
          Cp = np.int64(1)
          lcp = np.int64(0)
          while Cp < C:
              Cp *= 2
              lcp += 1
          parts = bsw >> lcp
          if C <= RANK_MAX and parts >= 2:
              jj = np.int64(tid) & (Cp - 1)
              part = np.int64(tid) >> lcp
              per = (C + parts - 1) // parts
              q = part * per
              qe = min(C, q + per)
              if jj < C and q < qe:
                  c_ = count_greater(cand, cand[jj], q, qe)
                  if c_ > _I64_0:
                      if LARGE:
                          atomic_add(hist, jj, np.int32(c_))
                      else:
                          atomic_add(rk, jj, np.int32(c_))
              cuda.syncthreads()
          # LARGE: the sorted prefix stays in cand (sorted in place above RANK_MAX), or goes to
          # its upper half (C <= RANK_MAX < CH); else to srt / sval
          so = _I64_0
          if LARGE and C <= RANK_MAX:
              so = np.int64(CH)
          j = np.int64(tid)
          if sel:
              j = C   # (no sorted prefix, no masses)
          while j < C:
              me = cand[j]
              r_ = j
              if C <= RANK_MAX:
                  if parts >= 2:
                      if LARGE:
                          r_ = np.int64(hist[j])
                      else:
                          r_ = np.int64(rk[j])
                  else:
                      r_ = count_greater(cand, me, _I64_0, C)
              if r_ < K:
                  fv = key_value(me >> _S31)
                  if LARGE:
                      if so > _I64_0:
                          cand[so + r_] = me
                  else:
                      srt[r_] = me
                      sval[r_] = fv
                  mass[r_] = hmass(fv, xm)
                  if np.float64(fv) >= thr:
                      atomic_add(cnt, 2, np.int32(1))
              j += bsw
          cuda.syncthreads()
          # (c) filters on the sorted prefix. vllm: min-p first (the first cnt[2]), then top-p;
          # llama: top-p, then min-p (the survivors: the first min(L, cnt[2])).
          nmp = np.int64(cnt[2])
          Kp = K
          if is_vllm and mp > _F32_0:
              Kp = nmp
          L = Kp
          if p < _F32_1 and LARGE:
              # each thread sums a stretch of the masses, a block scan gives what comes before
              # each stretch and the total; the position where the running sum first reaches
              # ceil(p * total) sets L
              if tid == 0:
                  sm_r[7] = Kp
              per = (Kp + bsw - 1) // bsw
              q0 = np.int64(tid) * per
              q1 = min(Kp, q0 + per)
              own = _I64_0
              q = q0
              while q < q1:
                  own += mass[q]
                  q += 1
              sm_c[tid] = own
              cuda.syncthreads()
              block_incl_scan(sm_c, tid, bs)
              z = sm_c[bs - 1]
              before = sm_c[tid] - own
              tgt = topp_target(p, z)
              if tgt > z:
                  tgt = z
              q = q0
              while q < q1:
                  mq = mass[q]
                  if before < tgt and before + mq >= tgt:
                      sm_r[7] = q + _I64_1
                  before += mq
                  q += 1
              cuda.syncthreads()
              L = sm_r[7]
              if L < _I64_1:
                  L = _I64_1
          elif p < _F32_1:
              # each owner sums the masses before it; the one where the running sum first reaches
              # ceil(p * total) sets L
              if tid == 0:
                  sm_r[7] = Kp
              cuda.syncthreads()
              j = np.int64(tid)
              while j < Kp:
                  before = _I64_0
                  z = _I64_0
                  q = _I64_0
                  while q < Kp:
                      m0 = mass[q]
                      m1 = mass[q + 1]
                      m2 = mass[q + 2]
                      m3 = mass[q + 3]
                      if q + 1 >= Kp:
                          m1 = _I64_0
                      if q + 2 >= Kp:
                          m2 = _I64_0
                      if q + 3 >= Kp:
                          m3 = _I64_0
                      z += m0 + m1 + m2 + m3
                      if q < j:
                          before += m0
                      if q + 1 < j:
                          before += m1
                      if q + 2 < j:
                          before += m2
                      if q + 3 < j:
                          before += m3
                      q += 4
                  tgt = topp_target(p, z)
                  if tgt > z:
                      tgt = z
                  if before < tgt and before + mass[j] >= tgt:
                      sm_r[7] = j + _I64_1
                  j += bsw
              cuda.syncthreads()
              L = sm_r[7]
              if L < _I64_1:
                  L = _I64_1
          if (not is_vllm) and mp > _F32_0 and nmp < L:
              L = nmp
          # (d) Gumbel-max over the L survivors: the largest (score key, -index) composite.
          # (each thread folds its survivors j = tid, tid + bs, ...: a slot a thread; at most 32
          # survivors are folded by the first 32 threads alone)
          j = np.int64(tid)
          best = _I64_M1
          if sel:
              # over the C candidates, those >= cut (then no survivor is looked up below)
              while j < C:
                  cj = cand[j]
                  if cj >= cut:
                      best = race(best, cj, key_value(cj >> _S31), is_vllm, inv_t, sd, ps)
                  j += bsw
              L = _I64_0
          while j < L:
              if LARGE:
                  cj = cand[so + j]
                  sv = key_value(cj >> _S31)
              else:
                  cj = srt[j]
                  sv = sval[j]
              best = race(best, cj, sv, is_vllm, inv_t, sd, ps)
              j += bsw
          if L <= np.int64(32) and not sel:
              best = fold_few(best, tid, L, sm_c)
          else:
              best = fold_max(best, tid, bs, sm_c, f1c, sm_r)
          if tid == 0:
              put_token(x, row, comp_token(best), lp, lse, row, tokens, logprobs, status)

      return kern

    finals = {}

    def finalize(large=False):
        # The tile finalize: ``large`` for rows with top_k up to KCAP_L (else KCAP), whose
        # candidates ``gather()``'s launch before it lists.
        key = bool(large)
        kern = finals.get(key)
        if kern is None:
            kern = finals[key] = _finalize(key)
        return kern

    def _tau():
        @cuda.jit(cache=JIT_CACHE)
        def kern(n, nsplit, tpt, kcap, temp, topk, topp, minp, vllm, pf, pi, tm, gt):
            # The large tile finalize's tau, a block a row (once: the gather's blocks of the row
            # read it): the split partials' maximum, the histogram of the row's tile maxima by
            # their key distance to it, the bin B where they reach k (at least k tiles, so at
            # least k tokens, have a key >= tau, the lowest key of bin B). gt[row] = (kmax, B,
            # tau), B = -1 for a row of another mode or without a finite logit (the gather
            # lists nothing for it). (Each gather block built the row's whole histogram itself
            # before the forty-fourth session: 10-16 blocks a row, every one's 2560-4096
            # shared atomics on a few hot bins.) tpt: the tile slots a split (phase 1's FINE
            # layout: ``SamplingPlan.fine_tiles``), nsplit * tpt a row.
            row = cuda.blockIdx.x
            tid = cuda.threadIdx.x
            bs = cuda.blockDim.x
            t = temp[row]
            k = topk[row]
            p = topp[row]
            mp = minp[row]
            sm_c = cuda.shared.array(MAX_BLOCK, np.int64)
            f1c = cuda.shared.array(NFOLD, np.int64)
            sm_r = cuda.shared.array(16, np.int64)
            hist = cuda.shared.array(NBIN, np.int32)
            grp = cuda.shared.array(NGRP, np.int32)
            bsw = np.int64(bs)
            if row_mode(t, k, p, mp, n, kcap) != MODE_TILE:
                if tid == 0:
                    gt[row, 1] = _I64_M1
                return   # (block-uniform, before any barrier)
            b_ = tid
            while b_ < NBIN:
                hist[b_] = np.int32(0)
                b_ += bs
            # The tile maxima TPRE a thread a round, all loads of a round before its counts
            # (one round-trip of latency a round, where a load then its count each iteration
            # paid one a tile: 19 a thread over the FINE layout's 9500 a row of 151936, whose
            # 64-row launch has a block an SM); the first round before the split reduction, to
            # overlap it.
            G = np.int64(nsplit) * np.int64(tpt)
            tv = cuda.local.array(TPRE, np.float32)
            j0 = np.int64(tid)
            tile_round(tm, row, j0, G, bsw, tv)
            cv, _cg, _lm, _ls = split_fold(pf, pi, row, n, nsplit, 0, 0, tid, bs)
            cv = fold_max(cv, tid, bs, sm_c, f1c, sm_r)   # (its barriers publish the zeros)
            if cv < _I64_0:
                if tid == 0:
                    gt[row, 1] = _I64_M1
                return
            is_vllm = vllm != 0
            inv_t = _F32_1 / t
            kmax = filter_key(key_value(cv >> _S31), inv_t, is_vllm)
            while j0 < G:
                for u in range(TPRE):
                    v = tv[u]
                    if is_finite(v):   # (NaN past G)
                        atomic_add(hist, dist_bin(kmax - filter_key(v, inv_t, is_vllm)),
                                   np.int32(1))
                j0 += bsw * np.int64(TPRE)
                tile_round(tm, row, j0, G, bsw, tv)
            cuda.syncthreads()
            bin_select(hist, grp, sm_r, np.int64(k), tid, bs)
            if tid == 0:
                bsel = sm_r[0]
                gt[row, 0] = kmax
                gt[row, 1] = bsel
                gt[row, 2] = bin_tau(kmax, bsel)

        return kern

    @cuda.jit(device=True, cache=JIT_CACHE)
    def tau_float(tau):
        # key >= tau as a float compare of the filter value: the float whose key is tau
        # (order_key is monotone and ties -0.0 with +0.0, as the compare does), or -inf where
        # tau is at most the key of -inf (every finite value's key is above it); a tau past
        # +inf's key gives a NaN, which no value passes, as no key reaches tau
        if tau > _KEY_NINF:
            return key_value(tau)
        return _F32_NINF

    @cuda.jit(device=True, cache=JIT_CACHE)
    def put_cand(v, j, is_vllm, inv_t, tf, cnt, lst):
        # A gather's token j (logit v): a finite one whose filter value is at least tf goes to
        # the block's list lst as its (key, -index) composite, counted in cnt[0] past the room
        # too
        fv = v
        if is_vllm:
            fv = np.float32(v * inv_t)
        if is_finite(v) and fv >= tf:
            slot = np.int64(atomic_add(cnt, 0, np.int32(1)))
            if slot < CAND_MAX_L:
                lst[slot] = comp(order_key(fv), j)

    @cuda.jit(device=True, cache=JIT_CACHE)
    def put_lists(c, lst, gc, row, split, tid, bsw):
        # A gather block's list of c candidates into gc[row, split] (the count, then the
        # composites up to the list's room), every thread of the block (after a barrier)
        lim = min(c, np.int64(gc.shape[2]) - _I64_1)
        j = np.int64(tid)
        while j < lim:
            gc[row, split, _I64_1 + j] = lst[j]
            j += bsw
        if tid == 0:
            gc[row, split, 0] = c

    @cuda.jit(device=True, cache=JIT_CACHE)
    def gather_row(gt, temp, vllm, row):
        # A gather block's row from ``tau()``'s gt[row] (a row with a bin, gt[row, 1] >= 0):
        # its key maximum, whether its filter values are logits / T (vLLM's order), 1 / T and
        # tau's float (put_cand's compare)
        t = temp[row]
        return gt[row, 0], vllm != 0, _F32_1 / t, tau_float(gt[row, 2])

    def _gather():
        @cuda.jit(cache=JIT_CACHE)
        def kern(x, n, chunk, tpt, temp, vllm, tm, gt, gc):
            # The large tile finalize's candidates, a block a (split, row) of phase 1's grid
            # (its chunk and block, which the tile maxima describe): from the row's tau and bin
            # B (``tau()``'s launch before it, gt[row]), the finite tokens with key >= tau of
            # its split's tiles in the bins <= B (thread t streams the tokens lo + t + u * bs of
            # tile t mod tpt, as phase 1 did) into gc[row, split] (the count, then the
            # composites; past the list's room only the count). The candidates the small
            # finalize's own gather would take (the same tau, the same tile test), in another
            # order (the finalize ranks them). Rows of other modes and rows without a finite
            # logit write nothing (the finalize reads no list for them).
            split, row, tid, bs, _ns, lo, hi = split_block(chunk, n)
            bsel = gt[row, 1]
            if bsel < _I64_0:
                return   # (block-uniform, before any barrier)
            kmax, is_vllm, inv_t, tf = gather_row(gt, temp, vllm, row)
            cnt = cuda.shared.array(1, np.int32)
            lst = cuda.shared.array(CAND_MAX_L, np.int64)
            bsw = np.int64(bs)
            if tid == 0:
                cnt[0] = np.int32(0)
            cuda.syncthreads()   # (the count's zero)
            tile = np.int64(split) * np.int64(tpt) + (np.int64(tid) & (np.int64(tpt) - _I64_1))
            if tile_sel(tm, row, tile, kmax, inv_t, is_vllm, bsel):
                vals = cuda.local.array(GU, np.float32)
                i = lo + np.int64(tid)
                while i < hi:
                    load_round(x, row, i, hi, bsw, vals)
                    for u in range(GU):
                        put_cand(vals[u], i + np.int64(u) * bsw, is_vllm, inv_t, tf, cnt, lst)
                    i += bsw * np.int64(GU)
            cuda.syncthreads()
            put_lists(np.int64(cnt[0]), lst, gc, row, split, tid, bsw)

        return kern

    def _gather_fine():
        @cuda.jit(cache=JIT_CACHE)
        def kern(x, n, chunk, tpt, temp, vllm, tm, gt, gc):
            # gather()'s FINE form (phase 1's FINE layout: tiles of tpt consecutive tokens from
            # each split's start): the large tile finalize's candidates, a block a (split, row)
            # of phase 1's grid: from the row's tau and bin B
            # (``tau()``'s launch before it, gt[row]), the finite tokens with key >= tau of its
            # split's tiles in the bins <= B into gc[row, split] (the count, then the
            # composites; past the list's room only the count). The split's tiles are taken a
            # window of GWIN a thread at a time: each thread loads its tiles' maxima together
            # and lists the selected ones in shared memory; then the block loads their tokens,
            # four a work item (one vector load where the row's address and lo allow it).
            # The candidates the small finalize's own gather would take from these tiles (the
            # same tau, the same tile test), in another order (the finalize ranks them). Rows
            # of other modes and rows without a finite logit write nothing (the finalize reads
            # no list for them).
            split, row, tid, bs, _ns, lo, hi = split_block(chunk, n)
            bsel = gt[row, 1]
            if bsel < _I64_0:
                return   # (block-uniform, before any barrier)
            kmax, is_vllm, inv_t, tf = gather_row(gt, temp, vllm, row)
            cnt = cuda.shared.array(1, np.int32)
            nsel = cuda.shared.array(1, np.int32)
            lst = cuda.shared.array(CAND_MAX_L, np.int64)
            stl = cuda.shared.array(GWIN_SLOTS, np.int32)
            bsw = np.int64(bs)
            if tid == 0:
                cnt[0] = np.int32(0)
                nsel[0] = np.int32(0)
            tl = np.int64(tpt)
            nun, per = fine_split(chunk, tl)
            base = np.int64(split) * nun * per
            nt = _I64_0   # the split's tiles that hold tokens
            if hi > lo:
                nt = (hi - lo + tl - _I64_1) // tl
            vpt = tl >> np.int64(2)   # work items (four tokens) a tile
            vec = (lo & np.int64(3)) == _I64_0 and head4(x, row) == _I64_0
            tv = cuda.local.array(GWIN, np.float32)
            v4 = cuda.local.array(4, np.float32)
            cuda.syncthreads()   # (the counts' zeros)
            w0 = _I64_0
            while w0 < nt:
                for u in range(GWIN):
                    m = w0 + np.int64(tid) + np.int64(u) * bsw
                    v = _F32_NAN
                    if m < nt:
                        v = tm[row, base + m]
                    tv[u] = v
                for u in range(GWIN):
                    if max_sel(tv[u], kmax, inv_t, is_vllm, bsel):
                        stl[atomic_add(nsel, 0, np.int32(1))] = np.int32(
                            np.int64(tid) + np.int64(u) * bsw)
                cuda.syncthreads()
                ni = np.int64(nsel[0]) * vpt
                it = np.int64(tid)
                while it < ni:
                    m = w0 + np.int64(stl[it // vpt])
                    j = lo + m * tl + np.int64(4) * (it % vpt)
                    if vec and j + np.int64(4) <= hi:
                        v4[0], v4[1], v4[2], v4[3] = load4(x, row, j)
                    else:
                        load_round(x, row, j, hi, _I64_1, v4)
                    for u in range(4):
                        put_cand(v4[u], j + np.int64(u), is_vllm, inv_t, tf, cnt, lst)
                    it += bsw
                cuda.syncthreads()   # (every item of the window read its tile from stl)
                if tid == 0:
                    nsel[0] = np.int32(0)
                cuda.syncthreads()
                w0 += bsw * np.int64(GWIN)
            put_lists(np.int64(cnt[0]), lst, gc, row, split, tid, bsw)

        return kern

    larges = {}

    def tau():
        # The large tile finalize's tau, a block a row (``gather()`` reads it).
        if "tau" not in larges:
            larges["tau"] = _tau()
        return larges["tau"]

    def gather(fine=False):
        # The large tile finalize's candidate gather (``finalize(True)`` reads it): over phase
        # 1's strided tiles, or (``fine``) its FINE variants' tiles of consecutive tokens.
        key = "gather_fine" if fine else "gather"
        if key not in larges:
            larges[key] = _gather_fine() if fine else _gather()
        return larges[key]

    helpers = SimpleNamespace(row_mode=row_mode, row_nuc=row_nuc, block_max=block_max,
                              filter_key=filter_key, key_value=key_value,
                              comp=comp, comp_of=comp_of, comp_token=comp_token,
                              score_from_scaled=score_from_scaled, hmass=hmass,
                              topp_target=topp_target,
                              split_block=split_block, load_round=load_round,
                              count_done=count_done, put_token=put_token, dist_bin=dist_bin,
                              bin_dlim=bin_dlim, bin_tau=bin_tau, digit_pick=digit_pick,
                              bitonic_desc=bitonic_desc,
                              block_incl_scan=block_incl_scan, fold_slots=fold_slots,
                              fold_all=fold_all)
    return SimpleNamespace(helpers=helpers, partials=partials, argmax=argmax,
                           finalize=finalize, tau=tau, gather=gather)
