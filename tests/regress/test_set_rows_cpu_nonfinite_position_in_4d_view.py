"""On the cpu backend a non-finite src value was named by its place in a 4-D view of src.

What broke: ``set_rows(dst_q8_0, src, idx)`` with ``src`` of shape (3, 64) and ``-inf`` at
[1, 40] raised "src: expected finite values for a q8_0 destination, got -inf at position
(0, 0, 1, 40)" on ``cpu`` (the reference quantizes the 4-D view it makes of src), while the device
backends say "at position (1, 40)". The position is now given in src's own shape everywhere, for
host and device src; it is the first non-finite value in C order, and dst is left unchanged.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels.test_set_rows import assert_bytes_equal, make_dst

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("src_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("t", ["q8_0", "iq4_nl"])
def test_non_finite_src_named_in_its_own_shape(backend, rng, where, src_dtype, t):
    src = rng.standard_normal((3, 64)).astype(src_dtype)
    src[2, 3] = np.nan
    src[1, 40] = -np.inf  # the first in C order
    src[1, 50] = np.inf
    dst = make_dst(t, (), 4, 64, rng)
    dev = backend.is_device
    d = backend.as_array(dst, "dst") if dev else dst
    s = backend.as_array(src, "src") if dev and where == "device" else src
    i = backend.as_array(np.array([0, 3, 1]), "idx") if dev else np.array([0, 3, 1])
    with pytest.raises(ValueError, match=rf"src: expected finite values for a {t} destination, got .*"
                                         r"at position \(1, 40\)$"):
        sr.set_rows(d, s, i, dst_type=t)
    assert_bytes_equal(backend.to_host(d).view(dst.dtype) if dev else d, dst, f"{t} dst after non-finite src")


def test_bad_index_still_reported_before_non_finite_src_on_cpu(backend, rng):
    # the reference's order (indices, then values); the device backends follow it (below)
    if backend.is_device:
        pytest.skip("cpu-only: the order of the two checks is the cpu backend's here")
    src = rng.standard_normal((2, 32)).astype(np.float32)
    src[0, 0] = np.nan
    dst = make_dst("q4_0", (), 3, 32, rng)
    with pytest.raises(IndexError, match=r"got 3 at position 1$"):
        sr.set_rows(dst, src, np.array([0, 3]), dst_type="q4_0")


@pytest.mark.parametrize("idx_where", ["host", "device"])
def test_bad_index_reported_before_non_finite_host_src_on_every_backend(backend, rng, idx_where):
    # sim/GPU checked a NumPy src for non-finite values before launching (ValueError) while cpu
    # reported the bad index first (IndexError): the same call must raise the same error
    src = rng.standard_normal((2, 32)).astype(np.float32)
    src[0, 0] = np.nan
    dst = make_dst("q4_0", (), 3, 32, rng)
    idx = np.array([0, 3])
    if backend.is_device and idx_where == "device":
        idx = backend.as_array(idx, "idx")
    elif idx_where == "device":
        pytest.skip("cpu: no device idx")
    before = dst.copy()
    with pytest.raises(IndexError, match=r"got 3 at position 1$"):
        sr.set_rows(dst, src, idx, dst_type="q4_0")
    assert_bytes_equal(dst, before, "q4_0 dst after a bad index and a NaN src")


def test_captured_call_names_the_value_in_srcs_own_shape_on_cpu(backend, new_stream):
    # the cpu backend's captured call reads src at replay; its error named the 4-D view too
    if backend.is_device:
        pytest.skip("cpu-only: src is read at replay (device backends take a device src in a graph)")
    from rocsample import graphs

    s = new_stream()
    dst = np.zeros((4, 34), np.uint8)
    src = np.ones((1, 32), np.float32)
    sr.prewarm(s)
    with graphs.capture(s) as g:
        sr.set_rows(dst, src, np.array([1]), dst_type="q8_0", stream=s)
    src[0, 3] = np.nan
    with pytest.raises(ValueError, match=r"got nan at position \(0, 3\)$"):
        g.replay()
    assert not dst.any()
