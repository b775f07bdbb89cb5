"""Regression: ``check_errors`` read and cleared the error record inside a stream capture.

What broke: on sim/cpu (emulated capture) ``check_errors`` called inside ``graphs.capture`` read
the record (a host round trip) and recorded its clearing copy into the graph; on a GPU the same
read would synchronize a capturing stream and invalidate the capture. It now raises
``CaptureError`` before reading anything, and the record is still there after the capture.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample import graphs
from rocsample.errors import CaptureError

sr = importlib.import_module("rocsample.set_rows")


def test_check_errors_refused_inside_a_capture(backend, new_stream):
    s = new_stream()
    st = backend.stream(s)
    dev = backend.is_device
    dst = np.zeros((4, 32), np.float32)
    src, idx = np.ones((1, 32), np.float32), np.array([9])
    if dev:
        dst, src, idx = (backend.as_array(a, n, st) for a, n in ((dst, "dst"), (src, "src"),
                                                                  (idx, "idx")))
    sr.prewarm(s)
    if dev:
        sr.set_rows(dst, src, idx, stream=s, check_bounds=False)  # recorded, not raised
    else:
        with graphs.capture(s) as g0:  # cpu records errors of captured calls only
            sr.set_rows(dst, src, idx, stream=s, check_bounds=False)
        g0.replay()
    with pytest.raises(CaptureError, match="check_errors: reading the stream's error record"):
        with graphs.capture(s):
            sr.check_errors(s)
    with pytest.raises(IndexError, match="got 9 at position 0"):
        sr.check_errors(s)  # still recorded: the refused call read and cleared nothing
    sr.check_errors(s)  # and now cleared
