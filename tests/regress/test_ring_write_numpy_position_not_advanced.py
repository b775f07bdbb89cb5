"""ring_write(advance=True) with a NumPy position array silently did not advance it on GPU backends.

What broke: the cpu backend reads a 1-element int64 NumPy position and bumps it in place after the
write; the device backends copied it to the device, advanced the copy and threw it away, so the
caller's position stayed put and the next step overwrote the same rows. A NumPy position is now
read on the host and advanced in place after the write on every backend.
"""

from __future__ import annotations

import importlib

import numpy as np

from tests.kernels.test_set_rows import assert_bytes_equal

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function


def test_numpy_position_advances_in_place(backend, rng):
    ring = np.zeros((4, 32), np.float32)
    d = backend.as_array(ring, "dst") if backend.is_device else ring
    pos = np.array([3], np.int64)
    rows = [rng.standard_normal((2, 32)).astype(np.float32) for _ in range(3)]
    for r in rows:
        s = backend.as_array(r, "src") if backend.is_device else r
        sr.ring_write(d, s, pos, advance=True)
    assert pos[0] == 9, f"position after three writes of two rows from 3: {pos[0]}, want 9"
    got = backend.to_host(d) if backend.is_device else d
    want = np.zeros((4, 32), np.float32)
    for k, r in enumerate(rows):
        want[(3 + 2 * k + np.arange(2)) % 4] = r
    assert_bytes_equal(got, want, "ring after three advancing writes")
    # without advance the position is read, not written
    sr.ring_write(d, s, pos)
    assert pos[0] == 9
