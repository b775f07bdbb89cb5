"""The set_rows fuzz test's "overlap" case made src as ``dst[..., :k, :]``, which numba's device
arrays refuse for a 4-D dst (TypeError in numba.cuda.cudadrv.dummyarray: the twenty-third
session's device gate failed on hypothesis's case below). The view is now explicit slices; the
failing case runs through the fuzz test's own placement, call and judgement on every backend."""

from __future__ import annotations

import numpy as np

from tests.fuzz import harness as H
from tests.fuzz.test_fuzz_set_rows import RowsCase, _judge_rows, _overlap_view, _run_rows


def _case():
    return RowsCase(dst=np.array([[[[-6.843686e15]]]], np.float32),
                    src=np.array([[[[0.12573022]]]], np.float32),
                    idx=np.array([[[0]]], np.int32), dst_type=None, t="f32",
                    where={"dst": "device", "src": "host", "idx": "host"}, check_bounds=False,
                    stream=False, target=None, bad={"dst", "src"}, three=True, views=(),
                    special="overlap")


def test_overlap_view_is_explicit_slices():
    case = _case()
    v = _overlap_view(case)
    assert Ellipsis not in v and len(v) == case.dst.ndim
    np.testing.assert_array_equal(case.dst[v], case.dst[..., :1, :])


def test_overlap_case_of_a_4d_destination_runs(backend):
    case = _case()
    call, state = _run_rows(backend, case)
    out = H.run(call, backend)
    _judge_rows(backend, case, out, state)
