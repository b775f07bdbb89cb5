"""The peers the benchmarks compare against: PyTorch (where importable with CUDA) and FlashInfer.

FlashInfer comes from whatever ``import flashinfer.sampling`` finds: an installed release, or one
of the trees carried to the lent H200 in ``.peers/`` (``tools/gpu/env.sh`` puts the one named by
``FLASHINFER=fi0214|fi074`` on ``PYTHONPATH``; BENCHMARKS.md has the recipe). A carried tree of a
newer release holds only the modules its sampling functions import, without the package's
``__init__.py`` (which imports every kernel family), so ``flashinfer`` is then a namespace package
and its version comes from ``flashinfer.version``. Two FlashInfer versions register the same
torch custom-op names (``flashinfer::softmax``...), so one process holds one version;
``tools/gpu/bench.sh`` runs one pytest process per version, and every FlashInfer benchmark records
``impl = "flashinfer-<version>"`` so the JSON files merge (``bench.report``).

``FlashInfer`` wraps the calls the way their callers make them (signatures differ by version:
``seed``/``offset`` tensors, the graph-safe RNG input of the newer releases, and ``top_k_max``,
the bound that lets a per-row ``top_k`` tensor take the newer ``top_k_first`` fast path).
"""

from __future__ import annotations

import functools
import importlib
import inspect


@functools.lru_cache(maxsize=None)
def flashinfer():
    """``FlashInfer`` for the importable release, or the reason there is none (a str)."""
    try:
        import torch
    except Exception as e:  # pragma: no cover - depends on the machine
        return f"torch not importable ({type(e).__name__})"
    if not torch.cuda.is_available():
        return "no CUDA device for torch"
    try:
        fs = importlib.import_module("flashinfer.sampling")
    except Exception as e:
        return (f"flashinfer not importable ({type(e).__name__}: {str(e).splitlines()[0][:160]}); "
                "carry .peers and set FLASHINFER=fi0214|fi074 (tools/gpu/env.sh, BENCHMARKS.md)")
    return FlashInfer(torch, fs, flashinfer_version())


def flashinfer_version() -> str:
    """The imported FlashInfer's version: ``__version__``, else the version module of a trimmed
    (namespace-package) tree."""
    import sys

    pkg = sys.modules.get("flashinfer")
    v = getattr(pkg, "__version__", None)
    for name in ("flashinfer.version", "flashinfer._build_meta"):
        if v:
            break
        try:
            v = getattr(importlib.import_module(name), "__version__", None)
        except Exception:
            v = None
    return str(v or "unknown")


class FlashInfer:
    """FlashInfer's sampling functions on torch tensors, as a caller of that version calls them."""

    def __init__(self, torch, fs, version: str):
        self.torch, self.fs, self.version = torch, fs, version
        self.label = f"flashinfer-{version}"
        self._seeded = self._takes(fs.sampling_from_logits, "seed")
        self._top_k_max = self._takes(fs.top_k_top_p_sampling_from_logits, "top_k_max")
        self.has_softmax = hasattr(fs, "softmax")
        self._rng = None

    @staticmethod
    def _takes(fn, name: str) -> bool:
        try:
            return name in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return False

    def _rng_kw(self) -> dict:
        """``seed``/``offset`` device tensors where the version takes them: the form its docs name
        for CUDA graphs (the default-generator path reads the generator's state on the host)."""
        if not self._seeded:
            return {}
        if self._rng is None:
            t = self.torch
            self._rng = (t.tensor([1234], dtype=t.int64, device="cuda"),
                         t.zeros(1, dtype=t.int64, device="cuda"))
        return {"seed": self._rng[0], "offset": self._rng[1]}

    def advance_rng(self, rows: int) -> None:
        """Move the ``offset`` tensor past what one call of ``rows`` rows reserves (32 draws a row,
        rounded to Philox's four, as the version's generator path advances it); in stream order,
        so a captured step advances it on every replay. A no-op without ``seed``/``offset``."""
        if self._seeded:
            self._rng_kw()
            self._rng[1].add_((rows * 32 + 3) // 4 * 4)

    def softmax(self, x, temperature):
        """Probabilities the ``*_from_probs`` calls need: FlashInfer's own fused softmax (with the
        temperature) where the version has it, else torch's."""
        if self.has_softmax:
            return self.fs.softmax(x, temperature=temperature)
        t = temperature if not hasattr(temperature, "unsqueeze") else temperature.unsqueeze(-1)
        return self.torch.softmax(x / t, -1)

    def sampling_from_logits(self, x):
        return self.fs.sampling_from_logits(x, **self._rng_kw())

    def top_k(self, probs, k):
        return self.fs.top_k_sampling_from_probs(probs, k, **self._rng_kw())

    def top_p(self, probs, p):
        return self.fs.top_p_sampling_from_probs(probs, p, **self._rng_kw())

    def min_p(self, probs, p):
        return self.fs.min_p_sampling_from_probs(probs, p, **self._rng_kw())

    def top_k_top_p_from_logits(self, x, k, p, *, order: str = "top_k_first", top_k_max=None):
        kw = self._rng_kw()
        if top_k_max is not None and self._top_k_max:
            kw["top_k_max"] = int(top_k_max)
        return self.fs.top_k_top_p_sampling_from_logits(x, k, p, filter_apply_order=order, **kw)
