"""An unchecked ``set_rows`` with both a bad index and a non-finite host src raises the
``IndexError`` on every backend (SEMANTICS: indices first, then values).

What broke (found by the fuzzer): ``set_rows(dst, np.full((1, 32), np.inf, np.float32),
np.array([-1]), dst_type="q4_0", check_bounds=False)`` raised ``ValueError`` naming src on sim
and the GPUs but ``IndexError`` on cpu. A device backend refuses a non-finite host src to a
block type before any launch; it read the indices for the ``IndexError`` only in a checked call.
Now it reads them on that error path whatever ``check_bounds`` says (a device idx synchronizes
the stream there; the call raises either way), and nothing is written.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs


def _dev(backend, a):
    return backend.as_array(a, "x") if backend.is_device else a


def _host(backend, a):
    return backend.to_host(a) if backend.is_device_array(a) else np.array(a)


@pytest.mark.parametrize("check_bounds", [False, True], ids=["unchecked", "checked"])
@pytest.mark.parametrize("idx_where", ["host", "device"])
@pytest.mark.parametrize("dst_where", ["host", "device"])
def test_a_bad_index_wins_over_a_nonfinite_host_src(backend, check_bounds, idx_where, dst_where):
    dst0 = np.arange(4 * 18, dtype=np.uint8).reshape(4, 18)
    dst = _dev(backend, dst0.copy()) if dst_where == "device" else dst0.copy()
    idx = np.array([-1], np.int64)
    idx = _dev(backend, idx) if idx_where == "device" else idx
    with pytest.raises(IndexError, match=r"-1"):
        rs.set_rows(dst, np.full((1, 32), np.inf, np.float32), idx, dst_type="q4_0",
                    check_bounds=check_bounds)
    np.testing.assert_array_equal(_host(backend, dst), dst0)
    rs.check_errors()  # nothing was recorded: the call raised before any launch


def test_good_indices_and_a_nonfinite_host_src_still_name_src(backend):
    dst0 = np.zeros((4, 18), np.uint8)
    dst = dst0.copy()
    src = np.zeros((2, 32), np.float32)
    src[1, 5] = np.nan
    with pytest.raises(ValueError, match=r"^src: expected finite values for a q4_0 destination"):
        rs.set_rows(dst, src, np.array([0, 3]), dst_type="q4_0", check_bounds=False)
    np.testing.assert_array_equal(dst, dst0)
