"""Regression: ``scratch.request(stream, 0)`` on a stream with no buffer raised AttributeError.

What broke: a 0-byte request "fitted" the 0 bytes held (no entry yet), so the pool returned
``entry.alloc.array`` of an entry that did not exist. Found by mutation testing (docs/MUTATION.md).
"""

from __future__ import annotations

import pytest

from rocsample import ScratchNotWarmed, graphs
from rocsample.scratch import ScratchPool


def test_zero_byte_request_gets_a_buffer(backend, new_stream):
    pool = ScratchPool(backend)
    s = new_stream()
    assert pool.request(s, 0, "p").shape[0] >= 0
    assert pool.capacity(s, "p") == 256
    pool.prewarm(new_stream(), {"p": 0})
    pool.trim()


def test_zero_byte_request_in_capture_without_prewarm_is_refused(backend, new_stream, monkeypatch):
    import rocsample.scratch as scratch_mod

    pool = ScratchPool(backend)
    monkeypatch.setitem(scratch_mod._pools, id(backend), pool)
    s = new_stream()
    with pytest.raises(ScratchNotWarmed, match="but 0 bytes are warmed"):
        with graphs.capture(s):
            pool.request(s, 0, "p")
    pool.prewarm(s, {"p": 0})
    with graphs.capture(s) as g:
        pool.request(s, 0, "p")
    g.release()
    pool.trim()
