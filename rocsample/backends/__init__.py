"""Backend selection: ``ROCSAMPLE_BACKEND``, :func:`use_backend`, or auto-detection.

Auto-detection tries hip, then cuda, then falls back to cpu. ``sim`` is never auto-selected.
A backend that was asked for by name and cannot run raises :class:`BackendUnavailable` naming
what is missing; it never falls back silently.
"""

from __future__ import annotations

import importlib
import os
import threading

from .._validate import describe
from ..errors import BackendUnavailable
from .base import Backend, CaptureStatus, Stream

NAMES = ("hip", "cuda", "sim", "cpu")
_AUTO_ORDER = ("hip", "cuda", "cpu")

_lock = threading.Lock()  # guards _current and _loaded
_current: Backend | None = None
_loaded: dict[str, Backend] = {}

__all__ = ["NAMES", "Backend", "CaptureStatus", "Stream", "get_backend", "use_backend", "probe"]


def _load(name: str) -> Backend:
    if name not in NAMES:
        raise ValueError(f"backend: expected one of {', '.join(NAMES)}, got {describe(name)}")
    be = _loaded.get(name)
    if be is None:
        be = importlib.import_module(f".{name}", __name__).load()
        _loaded[name] = be
    return be


def use_backend(name: str) -> Backend:
    """Select the backend for this process and return it.

    Raises
    ------
    BackendUnavailable
        If ``name`` cannot run here; the message says what to install.
    ValueError
        If ``name`` is not one of ``hip``, ``cuda``, ``sim``, ``cpu``.
    """
    global _current
    with _lock:
        be = _load(name)
        _current = be
        return be


def get_backend() -> Backend:
    """The current backend, selected on first use (``ROCSAMPLE_BACKEND``, else auto)."""
    global _current
    be = _current
    if be is not None:
        return be
    with _lock:
        if _current is not None:
            return _current
        want = os.environ.get("ROCSAMPLE_BACKEND", "").strip().lower()
        if want:
            _current = _load(want)
            return _current
        reasons = []
        for name in _AUTO_ORDER:
            try:
                _current = _load(name)
                return _current
            except BackendUnavailable as e:
                reasons.append(str(e))
        raise BackendUnavailable("; ".join(reasons))  # cpu never fails: unreachable in practice


def probe(name: str) -> str | None:
    """Why ``name`` cannot run here, or None if it can (loads it as a side effect)."""
    try:
        with _lock:
            _load(name)
        return None
    except BackendUnavailable as e:
        return str(e)
