"""Repeated calls never became one graph launch on the H200: the kernel nodes named numba-cuda's
kernels as ``func``.

numba-cuda loads CUlibrary modules, so the handle a bound launch gives cuLaunchKernel is a
library's CUkernel. cuGraphAddKernelNode took it as ``func`` nowhere: the driver answered
CUDA_ERROR_INVALID_HANDLE, GpuBackend.node_graph gave up, and every repeated call kept launching
kernel by kernel (15 us of host time where one graph launch costs 2.4 us) while looking like the
graph path. The node now names the kernel as ``kern`` when ``func`` is refused (then the
CUfunction cuKernelGetFunction gives), and ``vendor.node_graph_error`` says why a graph was not
made. The fake driver refuses ``func`` and takes ``kern`` as the H200's did.
"""

from __future__ import annotations

import importlib

import pytest

import rocsample
from rocsample.binder import Binder
from tests import fakegpu

sr = importlib.import_module("rocsample.set_rows")
CHAIN = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)


@pytest.mark.skipif(fakegpu.driver_library() is None, reason="no C compiler for the no-op driver")
def test_a_driver_taking_only_kern_still_gets_one_graph_launch(monkeypatch):
    from rocsample.backends import interop

    monkeypatch.setattr(sr, "_binder", Binder(entries=16, execs=64))
    monkeypatch.setattr(interop, "_durable", set(interop._durable))
    fg = fakegpu.install()
    fg.set_fail_add(-1)
    try:
        torch = fg.torch
        fg.set_torch_stream(0x79400)
        plan = rocsample.Sampler(4, 4096, "float32")
        seed = torch.zeros(4, dtype=torch.int64)
        pos = torch.zeros(4, dtype=torch.int64)
        xs = [torch.empty((4, 2, 4096))[:, -1, :] for _ in range(5)]
        i0 = fg.count("instantiate")
        for x in xs[:3]:  # the third call makes the graph
            plan(x, seed=seed, position=pos, check=False, **CHAIN)
        assert fg.count("instantiate") == i0 + 1
        assert fg.backend.vendor.node_graph_error is None
        for x in xs[3:]:
            l0, c0, g0 = fg.count("logged"), fg.count("launch"), fg.count("graph")
            plan(x, seed=seed, position=pos, check=False, **CHAIN)
            assert fg.count("graph") == g0 + 1 and fg.count("launch") == c0
            for k in (l0, l0 + 1):  # both nodes re-pointed at this call's logits
                assert fg.launch_params(k, 5)[4] == x.data_ptr()
    finally:
        fg.set_fail_add(0)
        fg.set_torch_stream(0)
        fg.uninstall()
