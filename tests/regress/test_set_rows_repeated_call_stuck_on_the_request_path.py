"""Regression (issue #17, found on the H200 by tests/backends/test_fastcall_gpu.py): a repeated
unchecked set_rows stayed on the slow path for good once the scratch pool had queued work.

What broke: set_rows' one-launch path requests no scratch, so when its bound call was not
``ready()`` (``ScratchPool.unchanged``: a graph release or a free queued, for instance by a
Sampler collected earlier in the process) it took ``_run_requested``, whose ``note_call`` did not
run the queued work nor free the retired buffers, as a request does. Nothing else drained them,
so every later call found the queue still there and launched kernel by kernel (no graph launch,
no C path): on the H200 15-19 us of host time a call where the graph launch costs about 3.5.
Now ``note_call`` runs the queue and collects the retired buffers as ``request`` does, so the
next call is one capture query and one graph launch again. Runs over tests/fakegpu (the real
pool and binder on a no-op driver) on every backend option.
"""

from __future__ import annotations

import importlib

import pytest

from tests import fakegpu

sr = importlib.import_module("rocsample.set_rows")

pytestmark = pytest.mark.skipif(fakegpu.driver_library() is None,
                                reason="no C compiler for the no-op driver")


@pytest.fixture
def fg(monkeypatch):
    yield from fakegpu.installed(monkeypatch)


@pytest.mark.parametrize("fast", [True, False], ids=["c", "python"])
def test_queued_pool_work_is_drained_by_the_next_set_rows_call(fg, fast, monkeypatch):
    from rocsample import scratch

    if not fast:
        monkeypatch.setattr(sr, "_FAST", None)
    torch = fg.torch
    fg.set_torch_stream(0x7D000)
    kv = torch.zeros(4, 64, 128, dtype=torch.float16)
    new = torch.zeros(4, 1, 128, dtype=torch.float32)
    idx = torch.zeros(1, dtype=torch.int64)
    for layer in range(4):  # checked and remembered, bound, then repeated
        sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
    pool = scratch.get_pool(fg.backend)
    ran = []
    pool._deferred.append(lambda: ran.append(1))  # e.g. a collected plan's graph release
    g0, c0 = fg.count("graph"), fg.count("launch")
    sr.set_rows(kv[0], new[0], idx, check_bounds=False)  # not ready: the request path
    assert ran == [1] and not pool._deferred
    assert fg.count("graph") == g0 and fg.count("launch") - c0 == 1
    for layer in range(4):  # and the next calls are one graph launch each again
        g0, c0 = fg.count("graph"), fg.count("launch")
        sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
        assert fg.count("graph") - g0 == 1 and fg.count("launch") == c0
