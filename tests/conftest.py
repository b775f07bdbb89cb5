"""Test options: ``--backend NAME`` (hip, cuda, sim, cpu; default cpu) and ``--run-slow``.

A GPU backend that was asked for and cannot run is an error for the whole session, never a skip.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest


def pytest_addoption(parser):
    parser.addoption("--backend", default=os.environ.get("ROCSAMPLE_BACKEND", "cpu"),
                     choices=["hip", "cuda", "sim", "cpu"], help="backend the device tests run on")
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


def pytest_configure(config):
    name = config.getoption("--backend")
    os.environ["ROCSAMPLE_BACKEND"] = name
    if name == "sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import rocsample

    try:
        rocsample.use_backend(name)
    except rocsample.BackendUnavailable as e:
        raise pytest.UsageError(f"--backend {name} was asked for but cannot run: {e}") from e
    record = os.environ.get("ROCSAMPLE_RECORD_KERNELS")
    if record and name == "sim":
        # every (kernel, argument types) launched, for tools/ptx_check.py (make test)
        import importlib.util
        import pathlib

        spec = importlib.util.spec_from_file_location(
            "kernel_sigs", pathlib.Path(__file__).parents[1] / "tools" / "kernel_sigs.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.install(rocsample.get_backend(), record)


#: The device suite's longest files, longest first (seconds of test time on an H100, the
#: forty-second session's first gate, 8 workers: bench/results/nvidia-h100-s42-84d40e3-gate-
#: junit.xml.gz): test_fuzz_sampler 168, kernels/test_sampling 165, test_fuzz_sampling 118,
#: test_sampling_nucleus 112, test_sampling_fast 100,
#: test_half_nucleus_pass_never_recorded_for_the_amd_gate 100, test_sampling_hist 57,
#: test_sampling_errors_audit 49 (of 1484 s in 137 files). On a GPU backend they are collected
#: first: the device gate (``python -m rocsample.check``) hands whole files to its workers in
#: collection order (``--dist loadfile --no-loadscope-reorder``), and pytest-xdist's own order,
#: by test count, handed the two-test file of 168 s out last (``python tools/gate_order.py
#: JUNIT`` replays that scheduling: 296 s for xdist's order, 211 with these first; the gate
#: took 321 s), and lists the longest files of a newer report.
GATE_LONG_FILES = ("tests/fuzz/test_fuzz_sampler.py", "tests/kernels/test_sampling.py",
                   "tests/fuzz/test_fuzz_sampling.py", "tests/kernels/test_sampling_nucleus.py",
                   "tests/kernels/test_sampling_fast.py",
                   "tests/regress/test_half_nucleus_pass_never_recorded_for_the_amd_gate.py",
                   "tests/kernels/test_sampling_hist.py",
                   "tests/kernels/test_sampling_errors_audit.py")


def gate_order(nodeids):
    """The positions of ``nodeids`` in the order a GPU run collects them: GATE_LONG_FILES' tests
    first, file by file in that list's order, then the others as they came (each file's tests
    keep their order)."""
    rank = {f: i for i, f in enumerate(GATE_LONG_FILES)}
    return sorted(range(len(nodeids)),
                  key=lambda i: rank.get(nodeids[i].split("::", 1)[0], len(rank)))


def pytest_collection_modifyitems(config, items):
    name = config.getoption("--backend")
    run_slow = config.getoption("--run-slow")
    gpu = name in ("cuda", "hip")
    if gpu:
        items[:] = [items[i] for i in gate_order([it.nodeid for it in items])]
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow: pass --run-slow"))
        if "gpu" in item.keywords and not gpu:
            item.add_marker(pytest.mark.skip(reason=f"gpu: needs --backend cuda or hip, not {name}"))
        for vendor in ("cuda", "hip"):
            if vendor in item.keywords and name != vendor:
                item.add_marker(pytest.mark.skip(reason=f"{vendor}-specific test"))


@pytest.fixture(scope="session")
def backend():
    import rocsample

    return rocsample.get_backend()


@pytest.fixture
def torch():
    """torch with CUDA, for the gpu-marked tests that take torch tensors (a module may define
    its own): skipped where torch is not importable, a failure where it is but has no CUDA
    device, since those tests run only on a GPU backend."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.fail("torch has no CUDA device on a GPU backend run")
    return torch


@pytest.fixture
def rng(request):
    # A fresh, reproducible stream of random inputs per test.
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


@pytest.fixture
def new_stream(backend):
    """Make streams of the current backend (the emulated ones on cpu and sim)."""
    made = []

    def make(device=None):
        s = backend.runtime.new_stream(device)
        made.append(s)
        return s

    yield make


@pytest.fixture
def launches(backend, monkeypatch):
    """Kernels launched through the backend, in order (None on cpu, which launches none)."""
    if not backend.is_device:
        return None
    log: list = []
    orig = backend.launch

    def launch(kernel, grid, block, stream, *args):
        log.append(kernel)
        return orig(kernel, grid, block, stream, *args)

    monkeypatch.setattr(backend, "launch", launch)
    return log
