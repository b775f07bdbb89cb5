"""A sampling plan: shapes, splits, block sizes and the scratch layout of one logits shape.

Pure arithmetic over (n_rows, n_vocab, dtype) and the device (wavefront size, compute units):
no arrays of the caller, no routing. The router (:mod:`rocsample.sampling_router`) reads these
fields to build its launches; :class:`rocsample.Sampler` owns one plan.
"""

from __future__ import annotations

import os

import numpy as np

from rocsample import _validate as V
from rocsample import sampling_router as _router
from rocsample.kernels import sampling as K
from rocsample.kernels import sampling_fast as KF
from rocsample.kernels import sampling_hist as KH

__all__ = ["SamplingPlan", "argmax_shape", "choose_splits", "draw_splits"]

_BLOCK = 256
_MAX_SPLITS = 1024
assert _MAX_SPLITS <= KF.SPLITS_MAX  # (the large finalize's offsets of its split lists)
#: Each split should stream at least this many elements (amortises its partial and launch).
_MIN_PER_SPLIT = 1024
#: At most one wave of (split x row) blocks: this many per compute unit.
_BLOCKS_PER_CU = 8
#: Fewer splits once every compute unit has 2.5 blocks, as long as each split then streams at
#: least _MIN_CHUNK logits: a split's fixed cost (its partial, the row's tail) outweighs a fuller
#: device below that. From the H200 sweep of splits x block, every mode at the seven benchmark
#: shapes (tools/gpu/split_sweep.py; BENCHMARKS.md): 1.05-1.36x faster at 64 x 32000, 64 x
#: 151936 and 256 x 32000, unchanged elsewhere within 3%.
_FILL_PER_CU_X2 = 5
#: Blocks of phase 1's drawing variant a compute unit holds at once: 56 registers a thread (sm_90
#: SASS, tools/sass_stats.py) at 256 threads leave room for 4 of 65536 registers, against 8 for
#: the other variants (32 registers). Where the splits make that variant's grid more than one
#: wave and less than 1.5 (a short second wave), routes that launch it (temperature-only rows,
#: device parameter arrays) take one wave's splits instead (``SamplingPlan.splits_draw``; see
#: :func:`draw_splits`). ``ROCSAMPLE_DRAW_BLOCKS_PER_CU`` overrides it (tools/gpu timings).
_DRAW_BLOCKS_PER_CU = int(os.environ.get("ROCSAMPLE_DRAW_BLOCKS_PER_CU") or 4)
#: Rows of at most this many logits take the narrow-row rule of :func:`draw_splits`
_DRAW_NARROW = 65536
_DRAW_NARROW_PER_CU = 2
_DRAW_NARROW_CHUNK = 2000
#: Narrow rows' fill (``ROCSAMPLE_DRAW_FILL_CHUNK`` sets the chunk at import, 500 by default;
#: 0 turns it off, for A/B timings): rows of ``_DRAW_FILL_MIN_VOCAB`` to ``_DRAW_NARROW``
#: logits draw in at least ``min(cus // rows, n_vocab // _DRAW_FILL_CHUNK, _DRAW_FILL_MAX)``
#: splits, about one block a compute unit in all, above ``splits`` where that is more. On by
#: default since the fifty-sixth session: the device gate passed with it on (an H100,
#: bench/results/nvidia-h100-s56-check-report.json.gz) and its A/B (graph-timed;
#: bench/results/nvidia-h100-s56-fill-ab.txt) had, off -> on, 1 x 32000 temperature 6.69 ->
#: 5.64 us, top_p alone 14.72 -> 13.82; 2 x 32000 7.12 -> 6.13, 15.31 -> 14.61; 1 x 65536 (64
#: splits) 6.31 -> 6.02, 18.69 -> 18.36; 4 and 8 x 32000 1-3% faster; the chain and the
#: per-row device parameters level at those shapes. At 1 x 16384 the device parameters were
#: 4-5% slower in both passes (16.15 -> 16.82) though temperature gained 9%, hence the floor of
#: 32000 logits (``_DRAW_FILL_MIN_VOCAB``): the fill applies only where it lost nowhere. The
#: fifty-fifth session's A/B without the cap had 1 x 65536 at 131 splits 3-6% slower (the cap,
#: 64, was the sweep's best at 1 x 32000) and 1 x 4096 mixed.
_DRAW_FILL_CHUNK = int(os.environ.get("ROCSAMPLE_DRAW_FILL_CHUNK") or 500)
_DRAW_FILL_MIN_VOCAB = 32000
_DRAW_FILL_MAX = 64
_MIN_CHUNK = 16384
_ALIGN = 256
#: phase 1's argmax kernel's launch shape (:func:`argmax_shape`)
_ARGMAX_ROWS2 = 32
_ARGMAX_MIN_CHUNK = 2048
#: the scratch purpose every sampling plan requests (one buffer per (device, stream))
PURPOSE = "sample"
#: Splits of at most this many logits (one row or a few of up to about 64k logits: 31 splits of
#: 1033 at 1 and 8 x 32000) take tiles of at least 2 * TILE_MIN tokens: half the tile maxima for
#: the finalize's histogram, the gather reading longer tiles. On the H200 (graph-timed, two passes,
#: bench/results/nvidia-h200-ac79c6d-s18-ab.txt) the chain at 1 x 32000 15.13 -> 15.00 us, top_k 50
#: 14.10 -> 13.79, at 8 x 32000 15.82 -> 15.67 and 14.80 -> 14.72; at 64 x 32000 (splits of 6400)
#: the fifteenth session measured it 0.4-0.8 us slower, hence the bound.
_SHORT_CHUNK = 2048
#: The rows the nucleus pass leaves (rarely more than one in a batch) are finished by the
#: histogram and select passes launched row-strided (``SamplingPlan.rows_fin``): each row in
#: splits of ``_FIN_CHUNK`` logits, so one left row takes a fraction of a microsecond's reads a
#: block instead of the drawing splits' whole share, and a grid of about
#: ``_FIN_BLOCKS_PER_CU`` blocks a compute unit whatever the batch (the finished rows cost each
#: block a look at their state, in parallel). On the H200 (tools/gpu/s9_nuc.sh,
#: bench/results/nvidia-h200-d0eed4d-*), top_p alone at 256 x 262144 went from 588.3 to 388.6 us
#: (the rows the pass left had cost the two passes at the drawing splits about 200 us), but a
#: grid of 8 blocks a compute unit made the two launches 5.0-6.2 us each where every row was
#: finished (3.5 at the drawing splits x 64 rows): hence 2. ``ROCSAMPLE_FIN_CHUNK`` and
#: ``ROCSAMPLE_FIN_BLOCKS_PER_CU`` override them (timings).
_FIN_CHUNK = int(os.environ.get("ROCSAMPLE_FIN_CHUNK") or 2048)
_FIN_BLOCKS_PER_CU = int(os.environ.get("ROCSAMPLE_FIN_BLOCKS_PER_CU") or 2)
#: The select pass keeps a split winner per (row, split) (the scratch's ``pi``, laid out for the
#: larger of ``splits`` and ``splits_fin``): the row-strided split count stays at most this many
#: slots over the rows (2 MB), or ``splits``.
_FIN_SLOTS = 65536
#: Fewest tiles a row of the large tile form (``SamplingPlan.tile_len``): a top_k up to KCAP_L
#: then expects its candidates within the list (``sampling_router.tile_large_fits``: 2048
#: tiles, k 1024, about 1420 of CAND_MAX_L's 2048, 70% of it). 151936 logits: tiles of 16
#: (9496); 32000: of 8 (4000); 4096: of 4 (1024).
_FINE_MIN_TILES = 2 * KF.KCAP_L


def choose_splits(n_rows: int, n_vocab: int, cus: int, block: int) -> int:
    """Splits per row: at most one wave of (split x row) blocks, none streaming too little, and
    no more than it takes to give every compute unit 2.5 blocks or each split _MIN_CHUNK logits
    (whichever asks for more splits)."""
    rows = max(n_rows, 1)
    wave = max(1, _BLOCKS_PER_CU * cus // rows)
    enough = max(_FILL_PER_CU_X2 * cus // (2 * rows), -(-n_vocab // _MIN_CHUNK))
    most = max(1, n_vocab // max(_MIN_PER_SPLIT, block))
    return int(max(1, min(wave, enough, most, _MAX_SPLITS)))


def argmax_shape(n_rows: int, n_vocab: int, cus: int) -> tuple[int, int]:
    """(splits, block) of phase 1's argmax kernel (greedy-only calls without logprobs).

    About one block a compute unit in all below ``_ARGMAX_ROWS2`` rows and two from there on,
    none streaming fewer than ``_ARGMAX_MIN_CHUNK`` logits; blocks of 256 threads (a multiple of
    every wavefront size, 32 and 64). From the H200's sweeps, graph-timed: of the kernel's first
    form in tools/gpu/read_probe.py (``argmax_win16``, the twelve benchmark shapes, 1 to 64
    splits, blocks of 256 to 1024; bench/results/nvidia-h200-s23-read-probe-sweep.jsonl), the
    best points were 64 splits at one row, 16 at 8 rows, 2-4 at 64 rows and one at 256 rows; of
    the package kernel with 16-byte loads (tools/gpu/split_sweep.py, 1 to 16 splits, blocks of
    256 and 512; bench/results/nvidia-h200-s24-split-sweep.json), the same split counts, and
    blocks of 256 best at every shape (256 x 151936: 37.9 us against 38.8 with 512)."""
    rows = max(n_rows, 1)
    blocks = cus * (2 if rows >= _ARGMAX_ROWS2 else 1)
    s = max(1, min(blocks // rows, n_vocab // _ARGMAX_MIN_CHUNK, _MAX_SPLITS))
    return s, 256


def draw_splits(n_rows: int, n_vocab: int, splits: int, cus: int) -> int:
    """Splits of a route launching phase 1's drawing variant.

    Rows of up to ``_DRAW_NARROW`` logits: at most ``_DRAW_NARROW_PER_CU`` blocks a compute unit
    in all and splits of at least ``_DRAW_NARROW_CHUNK`` logits (a narrow row's draw costs more
    in the per-split tail, the fold of the splits' partials by the row's last block, than the
    extra blocks save); rows of at least ``_DRAW_FILL_MIN_VOCAB`` logits then take the fill, at
    least one block a compute unit in all in splits of ``_DRAW_FILL_CHUNK`` logits, at most
    ``_DRAW_FILL_MAX``, which may be more than ``splits``. From the H200's sweep of
    temperature-only rows
    (bench/results/nvidia-h200-f11e891-temp-narrow-sweep.json, graph-timed): 8 x 32000 best at
    16 splits (9.18 us against 10.36 at the plan's 31), 64 x 32000 at 4 (15.30 against 16.62 at
    5), 256 x 32000 at 1 (30.23 against 32.11 at 2).

    Wider rows: one wave's splits at the variant's occupancy where ``splits`` would make 1 to 1.5
    waves of it, else ``splits``. On the H200 (graph-timed,
    bench/results/nvidia-h200-8f7b4b6-draw-splits.txt): 64 x 151936, 640 blocks for 528 places,
    8 splits against 10 made device parameters 41.6 -> 38.4 us and temperature 45.3 -> 44.3;
    at 256 rows (1024 blocks: a nearly full second wave) one wave's splits were 3-7% slower."""
    rows = max(n_rows, 1)
    if n_vocab <= _DRAW_NARROW:
        narrow = min(max(1, _DRAW_NARROW_PER_CU * cus // rows),
                     max(1, n_vocab // _DRAW_NARROW_CHUNK))
        narrow = max(1, min(splits, narrow))
        if _DRAW_FILL_CHUNK > 0 and n_vocab >= _DRAW_FILL_MIN_VOCAB:
            # (past ``splits`` too: the plan lays out the larger count)
            narrow = max(narrow, min(cus // rows, n_vocab // _DRAW_FILL_CHUNK, _DRAW_FILL_MAX,
                                     _MAX_SPLITS))
        return narrow
    wave = _DRAW_BLOCKS_PER_CU * cus
    blocks = splits * rows
    if wave < blocks < wave * 3 // 2:
        return max(1, min(splits, wave // rows))
    return splits


#: The nucleus pass's blocks in all at narrow rows (``nuc_splits``), and the fewest logits of
#: its split there.
_NUC_NARROW_BLOCKS = 256
_NUC_MIN_CHUNK = 1000


def nuc_splits(n_rows: int, n_vocab: int, splits_draw: int) -> int:
    """Splits of the nucleus pass (``sampling_hist._sample_nucleus_kernel`` and its finishing
    form), which reads nothing of phase 1's per split (its masses are integers added per row).

    Rows of up to ``_DRAW_NARROW`` logits: up to twice phase 1's splits, at most
    ``_NUC_NARROW_BLOCKS`` blocks in all and splits of at least ``_NUC_MIN_CHUNK`` logits; wider
    rows: phase 1's. From the H200's probe (top_p 0.95 alone, the finishing route, graph-timed;
    bench/results/nvidia-h200-s27-nuc-splits.txt): 1 x 32000 17.1 us at phase 1's 16 splits,
    16.2 at 32, 16.1 at 64; 8 x 32000 18.6 at 16, 17.5 at 32, 21.4 at 64; every other shape
    timed was best at phase 1's (64 x 32000 32.7 at 4, 36.6 at 8; 256 x 32000 75.7 at 1, 82.2
    at 2; 64 x 151936 74.2 at 8, 78.3 at 16; 256 x 151936 249.8 at 4, 248.6 at 8). More
    blocks than that only add each block's fixed part (the row's parameters and best tokens,
    its tree and atomics; the finishing form's 85 registers and 45 KB of shared memory)."""
    rows = max(n_rows, 1)
    if n_vocab > _DRAW_NARROW:
        return splits_draw
    return max(splits_draw, min(2 * splits_draw, _NUC_NARROW_BLOCKS // rows,
                                n_vocab // _NUC_MIN_CHUNK))


class SamplingPlan:
    """Shapes and scratch layout of a (n_rows, n_vocab, dtype) sampling call on one device.

    Attributes
    ----------
    block : int
        Threads per block of the split-grid kernels (a power of two, a wavefront multiple).
    splits, chunk : int
        Blocks per row and the logits each streams.
    splits_draw, chunk_draw : int
        The same for routes launching phase 1's drawing variant (fewer splits where its
        occupancy would make two waves; more where ``_DRAW_FILL_CHUNK`` fills a narrow row; the
        scratch is laid out for the larger of the two).
    splits_nuc, chunk_nuc : int
        The same for the nucleus pass (:func:`nuc_splits`; at most twice ``splits_draw``).
    splits_argmax, chunk_argmax, block_argmax : int
        The launch shape of phase 1's argmax kernel (calls whose every row is greedy and wants
        no logprob; :func:`argmax_shape`).
    splits_fin, chunk_fin, rows_fin : int
        The histogram and select passes of routes whose every histogram-path row is a
        top-p-only row (the rows the nucleus pass leaves): grid ``(splits_fin, rows_fin)``,
        each block serving the rows ``y, y + rows_fin, ...`` that still need it.
    tpt, cap, cap_large, fast_final_block : int
        Tile maxima per split, candidate capacity (tile finalize and histogram path; the tile
        finalize's large form), the tile finalize's block.
    tile_len : int
        The large tile form's tiles: this many consecutive tokens (4, 8 or 16; phase 1's FINE
        variants, :meth:`fine_tiles` a split).
    large, fine : bool
        Whether the plan holds the large tile finalize's scratch (``gc``, ``gt``), and whether
        its large form takes phase 1's FINE layout (``sampling_router.fine_rule``; ``tm`` then
        holds that layout's tile maxima too). A plan without either never takes it.
    layout : list of (name, dtype, shape, byte offset, nbytes)
        The scratch views; ``scratch_bytes`` in all.
    """

    def fine_tiles(self, chunk: int) -> int:
        """The large tile form's tile slots a split of ``chunk`` logits (phase 1's FINE layout:
        units of ``FINE_UNIT`` tokens from the split's start, each ``FINE_UNIT // tile_len``
        tiles; a row has ``splits * fine_tiles(chunk)``)."""
        u = KF.FINE_UNIT
        return -(-chunk // u) * (u // self.tile_len)

    @property
    def chunk_nuc(self) -> int:
        """The logits each split of the nucleus pass streams (from ``splits_nuc``, which
        timings and tests may set)."""
        return -(-self.n_vocab // self.splits_nuc)

    def __init__(self, be, device: int, n_rows: int, n_vocab: int, dtype: str, *,
                 filters: bool = True, splits: int | None = None, block: int | None = None,
                 cap: int | None = None, large: bool = True) -> None:
        self.n_rows, self.n_vocab, self.dtype = n_rows, n_vocab, dtype
        self.filters = filters
        # the large tile finalize's scratch (gc, gt: ``sampling_router.large_room`` says where
        # its router can take that form); without it the router never does
        self.large = bool(filters and large)
        warp = int(be.warp_size(device))
        b = _BLOCK if block is None else V.check_int("_block", block, 1, K.MAX_BLOCK)
        if b % warp or b > K.MAX_BLOCK or b & (b - 1):
            V.fail("_block", f"a multiple of the wavefront size {warp} and a power of two, up "
                   f"to {K.MAX_BLOCK}", b)
        self.block = b
        cus = int(be.compute_units(device))
        if splits is None:
            s = choose_splits(n_rows, n_vocab, cus, b)
            sd = draw_splits(n_rows, n_vocab, s, cus)
        else:
            s = sd = V.check_int("_splits", splits, 1, min(_MAX_SPLITS, n_vocab))
        self.splits = s
        self.chunk = -(-n_vocab // s)
        self.splits_draw = sd
        self.chunk_draw = -(-n_vocab // sd)
        # the nucleus pass's own splits (it reads nothing of phase 1's per split; a given split
        # count serves it too)
        self.splits_nuc = sd if splits is not None else nuc_splits(n_rows, n_vocab, sd)
        # (a given split count or block, for tests, serves this launch too)
        sa, ba = argmax_shape(n_rows, n_vocab, cus)
        if splits is not None:
            sa = s
        if block is not None:
            ba = b
        self.splits_argmax, self.block_argmax = sa, ba
        self.chunk_argmax = -(-n_vocab // sa)
        rows = max(n_rows, 1)
        if splits is None:
            sf = max(1, min(n_vocab // _FIN_CHUNK, _MAX_SPLITS, max(s, _FIN_SLOTS // rows)))
        else:   # (tests: the given split count for every launch)
            sf = s
        self.splits_fin = sf
        self.chunk_fin = -(-n_vocab // sf)
        self.rows_fin = max(1, min(rows, _FIN_BLOCKS_PER_CU * cus // sf))
        # tiles per split so that a row has at most GMAX tile maxima (and, above 4 * KCAP tiles,
        # at least TILE_MIN tokens per tile, twice that in splits of at most _SHORT_CHUNK logits:
        # smaller tiles only cost the finalize block more histogram work for no shorter gather)
        # (GMAX at the larger of the two split counts: the drawing routes' tile maxima, where
        # device-parameter rows take the tile route, have the same tpt)
        sl = max(s, sd)
        tmin = KF.TILE_MIN if self.chunk > _SHORT_CHUNK else 2 * KF.TILE_MIN
        tpt = b
        while tpt > 1 and (sl * tpt > KF.GMAX
                           or (self.chunk < tmin * tpt and s * tpt > 4 * KF.KCAP)):
            tpt //= 2
        self.tpt = tpt
        self.cap = KF.CAND_MAX if cap is None else V.check_int("_cap", cap, 1, KF.CAND_MAX)
        # the tile finalize's large form: its own list (a _cap given for tests binds it too)
        self.cap_large = KF.CAND_MAX_L if cap is None else self.cap
        self.fast_final_block = b if block is not None or be.name == "sim" else KF.MAX_BLOCK
        # the large form's tiles: the longest of 16, 8 and 4 tokens that leaves a row at least
        # _FINE_MIN_TILES of them, else 4
        self.tile_len = next(tl for tl in (16, 8, 4)
                             if -(-n_vocab // tl) >= _FINE_MIN_TILES or tl == 4)
        # whether the large form's routes take phase 1's FINE layout (sampling_router's rule;
        # its tile maxima, about n / 16 a row, are held only then)
        self.fine = self.large and _router.fine_rule(n_rows, n_vocab, min(s, sd) * tpt)
        r = n_rows
        # (every view indexed by split holds the larger of the two split counts: the drawing
        # routes' is the larger where _DRAW_FILL_CHUNK fills a narrow row)
        tiles = sl * tpt
        if self.fine:   # (phase 1's FINE layout at either launch shape)
            tiles = max(tiles, s * self.fine_tiles(self.chunk),
                        sd * self.fine_tiles(self.chunk_draw))
        # (pi: the select pass's split winners at the row-strided launches' split count too)
        layout = [("pf", np.float32, (r, sl, K.N_PF)), ("pi", np.int64, (r, max(sl, sf), K.N_PI)),
                  ("si", np.int64, (r, K.N_SI)), ("sf", np.float64, (r, K.N_SF)),
                  ("tm", np.float32, (r, tiles))]
        if filters:
            layout += [("hist_n", np.int64, (r, K.NBINS)), ("hist_q", np.int64, (r, K.NBINS)),
                       ("cand", np.int64, (r, KH.CAPG))]
        if self.large:
            # the large tile finalize's candidates, gathered a (split, row) at a time
            # (kernels.sampling_fast's gather(): the count, then the composites; a split holds
            # at most its chunk's tokens; 10.5 MB at 64 x 151936), and the row's (kmax, bin,
            # tau) that kernels.sampling_fast's tau() finds for it
            layout += [("gc", np.int64, (r, sl, 1 + min(KF.CAND_MAX_L,
                                                          max(self.chunk, self.chunk_draw)))),
                       ("gt", np.int64, (r, 3))]
        off = 0
        self.layout = []
        for name, dt, shape in layout:
            nbytes = int(np.prod(shape)) * np.dtype(dt).itemsize
            self.layout.append((name, dt, shape, off, nbytes))
            off += -(-nbytes // _ALIGN) * _ALIGN
        self.scratch_bytes = off
        self._views = None  # (buffer, {name: view}) of the last buffer seen

    def views(self, buf) -> dict:
        """The typed scratch views over ``buf`` (a uint8 device array of ``scratch_bytes``)."""
        cached = self._views
        if cached is not None and cached[0] is buf:
            return cached[1]
        views = {name: buf[off:off + nbytes].view(dt).reshape(shape)
                 for name, dt, shape, off, nbytes in self.layout}
        self._views = (buf, views)
        return views
