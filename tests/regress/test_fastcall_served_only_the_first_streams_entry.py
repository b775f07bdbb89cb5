"""Regression (issue #17, found on the H200 by bench/test_host_overhead.py's served counts): the
repeated call in C served one stream's calls only.

What broke: rocsample/_fastcall.c took the first entry whose layouts matched the call and only
then compared torch's current stream with that entry's; on a mismatch it gave the call back to
Python instead of looking at the next entry. An entry is noted per key, and the key holds the
stream, so a set_rows layout (the module's one binder) or a Sampler used on a second stream
after a first never reached its own entry: 0 of 220 unchecked set_rows calls on a side stream
were served in C in the eleventh session's run (12-20 us of host time: C's torch reads, then
Python's whole repeated path), while the legacy default stream's, noted first, were 220 of 220.
Now the stream is part of the match. Runs over tests/fakegpu (the real binder and pool on a
no-op driver) on every backend option.
"""

from __future__ import annotations

import importlib

import pytest

import rocsample
from rocsample import sampling as S
from tests import fakegpu

sr = importlib.import_module("rocsample.set_rows")

_fastcall, pytestmark = fakegpu.fastcall()

STREAMS = (0x7E000, 0, 0x7E100)  # a side stream, the legacy default stream, another side stream


@pytest.fixture
def fg(monkeypatch):
    monkeypatch.setattr(S, "_FAST", _fastcall.repeat)
    monkeypatch.setattr(sr, "_FAST", _fastcall.set_rows_repeat)
    yield from fakegpu.installed(monkeypatch)


def test_set_rows_on_each_stream_is_served_in_c(fg):
    torch = fg.torch
    kv = torch.zeros(4, 64, 128, dtype=torch.float16)
    new = torch.zeros(4, 1, 128, dtype=torch.float32)
    idx = torch.zeros(1, dtype=torch.int64)
    for h in STREAMS:
        fg.set_torch_stream(h)
        for layer in range(3):  # checked and remembered, bound, served by Python (noted)
            sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
    assert len(sr._binder.fast) == len(STREAMS)
    for h in STREAMS:  # every stream's entry serves its calls, on its stream
        fg.set_torch_stream(h)
        for layer in range(4):
            s0, l0 = _fastcall.served(), fg.count("logged")
            got = sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
            assert _fastcall.served() - s0 == 1, f"stream {h:#x}: left to Python"
            assert got.data_ptr() == kv[layer].data_ptr()
            assert fg.launch_stream(l0) == h


def test_a_sampler_on_each_stream_is_served_in_c(fg):
    torch = fg.torch
    rows, vocab = 4, 4096
    plan = rocsample.Sampler(rows, vocab, "float32")  # follows torch's current stream
    seed = torch.zeros(rows, dtype=torch.int64)
    pos = torch.zeros(rows, dtype=torch.int64)
    x = torch.empty((rows, 2, vocab))[:, -1, :]
    kw = dict(seed=seed, position=pos, check=False, temperature=0.8, top_k=50)
    for h in STREAMS:
        fg.set_torch_stream(h)
        for _ in range(3):  # checked, bound, served by _torch_repeat (noted)
            plan(x, **kw)
    for h in STREAMS:
        fg.set_torch_stream(h)
        s0, l0 = _fastcall.served(), fg.count("logged")
        plan(x, **kw)
        assert _fastcall.served() - s0 == 1, f"stream {h:#x}: left to Python"
        assert fg.launch_stream(l0) == h
