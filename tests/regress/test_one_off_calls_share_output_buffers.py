"""Regression (issue #12, defect 2): one-off calls returned another thread's tokens.

What broke: ``sample()`` / ``argmax()`` keep a plan per (shape, stream), and the plan's output
buffers were shared by every call through it: a call wrote its tokens there and copied them out
afterwards, so a second thread's call could overwrite them in between. 8 threads x 50 ``argmax``
calls of one shape gave 0-16 of 400 results that were another thread's tokens (cpu, with a
1 us switch interval). One-off calls now write into outputs made for the call (per-call arrays in
the caller's framework), and calls on one stream hold that stream's lock from their first launch
to their last, so no two calls share an output buffer or interleave their launches.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

import rocsample as rs


def test_threads_of_one_off_argmax_get_their_own_tokens(backend):
    rows, vocab = 4, 64
    threads, calls = (8, 6) if backend.name == "sim" else (8, 200)
    block = {"_block": backend.warp_size()} if backend.is_device else {}
    # each thread's logits have their own argmax per row: a foreign result is visible
    inputs = []
    for t in range(threads):
        x = np.zeros((rows, vocab), np.float32)
        x[np.arange(rows), (np.arange(rows) * 7 + t * 3) % vocab] = 1.0
        inputs.append((x if not backend.is_device else backend.as_array(x, "logits"),
                       x.argmax(axis=1)))
    rs.argmax(inputs[0][0], **block)  # the plan exists before the threads start
    wrong: list = []
    errors: list = []
    start = threading.Barrier(threads)

    def work(t):
        x, want = inputs[t]
        try:
            start.wait()
            for _ in range(calls):
                got = np.asarray(backend.to_host(rs.argmax(x, **block)))
                if not np.array_equal(got, want):
                    wrong.append((t, got.tolist(), want.tolist()))
        except Exception as e:  # noqa: BLE001 (reported below, with the thread)
            errors.append((t, repr(e)))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:3]
    assert not wrong, f"{len(wrong)} of {threads * calls} results were not the caller's: {wrong[:3]}"
