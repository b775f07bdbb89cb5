"""Regression: a Python list as idx was written on cpu but refused on sim/GPU ("got ?").

What broke: the cpu backend passed idx through np.asarray, so ``set_rows(dst, src, [1, 2])``
wrote rows there, while the device backends refused it with ``TypeError: idx: expected int32 or
int64, got ?``. Results (and errors) must not depend on the backend: every backend now refuses a
non-array dst, src or idx by name before anything is written.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs


@pytest.mark.parametrize("which", ["idx", "src", "dst"])
def test_non_array_argument_refused_by_name_on_every_backend(backend, which):
    dst = np.zeros((4, 32), np.float32)
    args = dict(dst=dst, src=np.ones((2, 32), np.float32), idx=np.array([1, 2], np.int64))
    args[which] = args[which].tolist()
    with pytest.raises(TypeError, match=rf"^{which}: expected .*array, got list \["):
        rs.set_rows(args["dst"], args["src"], args["idx"])
    assert not dst.any()


def test_ring_write_refuses_a_list_src(backend):
    dst = np.zeros((4, 32), np.float32)
    with pytest.raises(TypeError, match=r"^src: expected a float32 or float16 array, got list"):
        rs.ring_write(dst, [[1.0] * 32], 0)
    assert not dst.any()
