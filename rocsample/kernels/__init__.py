"""Device code, one file per kernel family. Each file defines ``build(cuda)``; see docs/DESIGN.md.

``JIT_CACHE``: kernels are cached on disk by numba (``cache=True``) so a second process reaches
its first token without recompiling; ``ROCSAMPLE_JIT_CACHE=0`` turns it off. numba picks the
folder (``__pycache__`` beside the source, or ``NUMBA_CACHE_DIR``).
"""

import os

JIT_CACHE = os.environ.get("ROCSAMPLE_JIT_CACHE", "1") != "0"


def _numba_cuda(cuda) -> bool:
    """Whether ``cuda`` is numba-cuda's real compiler (not its simulator, not numba-hip)."""
    return getattr(cuda.jit, "__module__", "") == "numba.cuda.decorators"


def _numba_hip(cuda) -> bool:
    """Whether ``cuda`` is numba-hip posing as cuda (neither numba-cuda's compiler nor its
    simulator)."""
    return not (_numba_cuda(cuda)
                or getattr(cuda.jit, "__module__", "").startswith("numba.cuda.simulator"))


def register_cap(cuda, family: str, default: int | None) -> dict:
    """``cuda.jit`` options capping a kernel family's registers per thread on numba-cuda.

    A streaming kernel whose rarely run tail (a row's last block) needs many registers holds
    few blocks per SM for its whole stream; a cap (``max_registers``: ptxas spills the excess,
    which docs/PERF_NOTES.md checks lands outside the streaming loops) buys occupancy. Only
    numba-cuda's compiler takes it: the simulator and numba-hip get ``{}``.
    ``ROCSAMPLE_MAX_REGISTERS="hist=64,select=48"`` overrides ``default`` per family (0: no
    cap) for tools/gpu's sweeps; numba's disk cache does not key on it, so a sweep gives each
    setting its own ``NUMBA_CACHE_DIR``.

    ``ROCSAMPLE_LINEINFO=1`` adds numba-cuda's ``lineinfo`` (the source-line table ncu's
    SourceCounters section maps its samples to; the code is unchanged, unlike ``debug``) to
    these families' kernels, phase 1's among them, for tools/gpu's profiles; give it its own
    ``NUMBA_CACHE_DIR`` too.
    """
    if not _numba_cuda(cuda):
        return {}
    cap = default
    for item in os.environ.get("ROCSAMPLE_MAX_REGISTERS", "").split(","):
        name, _, value = item.partition("=")
        if name.strip() == family and value.strip():
            cap = int(value)
    opts = {"max_registers": cap} if cap else {}
    if os.environ.get("ROCSAMPLE_LINEINFO", "") == "1":
        opts["lineinfo"] = True
    return opts


#: The block-wide steps that have a warp form (``warp_parts``).
WARP_PARTS = frozenset({"max", "bin", "sum", "tree", "tail"})
#: The ones numba-cuda takes without ``ROCSAMPLE_WARP`` (every one: "tree" and "tail" since the
#: fifty-third session's gate and A/B on an H100, docs/PERF_NOTES.md).
WARP_DEFAULT = frozenset({"max", "bin", "sum", "tree", "tail"})


def warp_parts(cuda) -> frozenset:
    """The block-wide steps the kernels built for ``cuda`` take in their warp form.

    On numba-cuda (32-lane warps; every block a whole number of warps) a block's maximum
    ("max": ``block_max`` and ``fold_max`` in rocsample.kernels.sampling_fast) is a butterfly
    of warp shuffles and one pass over the warps' maxima: two barriers where the shared-memory
    forms take three (the finalize's two-level fold) or ten (the tree of the histogram path's
    kernels), and the tile finalize's draw over at most 32 survivors is one warp's butterfly with
    no barrier. "bin": the tile finalize's bin of the k-th tile maximum by one warp (group sums,
    a shuffle scan, the crossing group's bins) behind one barrier, where the shared-memory form
    takes two and a serial pass over the groups in every thread. "sum": the histogram path's
    int64 block sums (``block_sum`` in rocsample.kernels.sampling_hist) and the nucleus and rank
    passes' sums before the best tokens, by warp shuffles and one barrier where the tree takes
    one a level (eight or nine). "tree": phase 1's block partial (``_sample_partials_fast_kernel``:
    the maximum, the draw, the two best; the tile maxima from the threads' maxima) by a
    butterfly in each warp and one over the warps' partials behind one barrier, where the tree
    takes one a level (eight at 256 threads). "tail": phase 1's fused tail (the row's last
    block) takes the row's maximum and best score by two ``block_max`` calls instead of trees of
    eight or nine levels. Both leave the logprob variants their trees (log-sum-exp pairs merged
    in another order would round differently), and the four-best (TOP4) forms too: their
    butterflies made top_k 1000 at 8 x 151936 12% slower on an H100. Every part by default
    (``WARP_DEFAULT``; the A/B in docs/PERF_NOTES.md, "Fifty-third session"). The simulator
    has no warp intrinsics and numba-hip's are not used (gfx1151 is wave32, gfx942 wave64), so
    both keep the shared-memory forms; the results are the same either way. ``ROCSAMPLE_WARP``
    overrides the set on numba-cuda for tools/gpu's A/B timings and gates ("0": none;
    "max,bin,sum,tree,tail": every part); numba's disk cache does not key on it, so each setting
    needs its own ``NUMBA_CACHE_DIR``. (Warp-aggregated appends and histogram adds, by ballots and
    ``match_any_sync``, were timed on the H200 and were slower: docs/PERF_NOTES.md,
    "Fourteenth session".)
    """
    if not _numba_cuda(cuda):
        return frozenset()
    want = os.environ.get("ROCSAMPLE_WARP", "").strip()
    if not want:
        return WARP_DEFAULT
    if want == "0":
        return frozenset()
    parts = frozenset(p.strip() for p in want.split(",") if p.strip())
    unknown = parts - WARP_PARTS
    if unknown:
        raise ValueError(f"ROCSAMPLE_WARP: unknown part(s) {sorted(unknown)}; "
                         f"expected '0' or a comma list of {sorted(WARP_PARTS)}")
    return parts
