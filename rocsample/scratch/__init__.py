"""Scratch ownership (SPEC §4): buffers keyed by (device, stream), safe under graph capture.

>>> from rocsample import scratch
>>> scratch.prewarm(stream, {"sample_partials": 1 << 20})   # before capture
>>> buf = scratch.request(stream, 4096, purpose="sample_partials")

See :class:`ScratchPool` for the locking rules and the capture contract.
"""

from __future__ import annotations

import threading

from ..backends import get_backend
from .pool import ScratchPool

_pools: dict[int, ScratchPool] = {}
_guard = threading.Lock()


def get_pool(backend=None) -> ScratchPool:
    """The process-wide pool of a backend (the current one by default)."""
    be = backend if backend is not None else get_backend()
    pool = _pools.get(id(be))  # the common case, without the lock (one dict read)
    if pool is not None:
        return pool
    with _guard:
        pool = _pools.get(id(be))
        if pool is None:
            pool = _pools[id(be)] = ScratchPool(be)
        return pool


def request(stream, nbytes: int, purpose: str = "default"):
    """A uint8 device array of at least ``nbytes`` owned by (device, stream, purpose)."""
    return get_pool().request(stream, nbytes, purpose)


def prewarm(stream, sizes) -> None:
    """Size ``stream``'s scratch ahead of capture (bytes, or ``{purpose: bytes}``)."""
    get_pool().prewarm(stream, sizes)


def stats() -> dict:
    return get_pool().stats()


__all__ = ["ScratchPool", "get_pool", "prewarm", "request", "stats"]
