"""Regression: with two GPUs the process died with SIGSEGV at interpreter exit, after every test passed.

What broke (two H200s, numba-cuda 0.30.4, cuda.core 1.x): numba links a kernel once per compute
capability into one context-independent CUlibrary, loads it as one module per device, and gives
each module a finalizer that queues ``cuLibraryUnload`` of that library. At exit
(``weakref._exitfunc``) both devices' finalizers ran and the second unloaded an already freed
library: SIGSEGV in ``cuLibraryUnload`` under ``_PendingDeallocs.clear``. One GPU has one module
per library, so it exited cleanly. The fix (``rocsample.backends.cuda.register_exit_hook``) runs
before numba's finalizers, synchronizes each device numba has a context on and defers numba's
deallocations for the rest of the process; the driver reclaims everything when the process ends.

Only a machine with two devices of one compute capability can show the crash itself; the
emulated devices of cpu/sim run the same script as a smoke test.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]

# Both devices: a kernel launch and a scratch request on each, then a graph captured and replayed
# on device 1 that is still alive when the interpreter exits.
_SCRIPT = textwrap.dedent(
    """
    import numpy as np

    import rocsample
    from rocsample import graphs
    from rocsample.scratch import get_pool
    from tests.scratch.work import expected, run_job

    be = rocsample.get_backend()
    pool = get_pool(be)
    keep = []
    for d in (0, 1):
        with be.on_device(d):
            s = be.runtime.new_stream(d)
            st = be.stream(s)
            assert st.device == d, (st, d)
            out = be.empty(64, np.int32, st)
            run_job(be, s, pool.request(s, 256, "job"), out, 10 + d)
            np.testing.assert_array_equal(be.to_host(out, st), expected(64, 10 + d))
            if d == 1:
                pool.prewarm(s, {"job": 256})
                out_g = be.empty(64, np.int32, st)
                with graphs.capture(s) as g:
                    run_job(be, s, pool.request(s, 256, "job"), out_g, 40)
                g.replay(s)
                np.testing.assert_array_equal(be.to_host(out_g, st), expected(64, 40))
                keep.append(g)  # left alive: torn down with the interpreter
            keep += [s, out]
    print("ran on both devices", flush=True)
    """
)


@pytest.mark.multi_gpu
@pytest.mark.graph
@pytest.mark.parametrize("pending", ["default", "flush-every-item"])
def test_process_using_two_devices_exits_cleanly(backend, pending):
    if backend.runtime.device_count() < 2:
        pytest.skip("needs two devices (two H200s on cuda; emulated on cpu/sim)")
    env = dict(os.environ, ROCSAMPLE_BACKEND=backend.name, PYTHONFAULTHANDLER="1")
    if backend.name == "sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    if pending == "flush-every-item":
        # numba flushes a context's queue once it holds more than this many items; at 0 every
        # finalizer that runs at exit frees at once, so a second unload of one library is certain
        env["NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT"] = "0"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=_ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    detail = f"exit status {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert "ran on both devices" in proc.stdout, detail
    assert proc.returncode == 0, detail  # -11: SIGSEGV at exit, -6: SIGABRT
    # a finalizer that fails at exit is printed (through sys.excepthook), not raised
    assert "Traceback" not in proc.stderr, detail


# ---- the hook itself, on any machine (fakes of numba's device list) -------------------------------


class _FakeDevice:
    def __init__(self, log, id_, used=True, sync_error=False):
        self.id = id_
        self.primary_context = object() if used else None
        self.log = log
        self.sync_error = sync_error

    def __enter__(self):
        self.log.current.append(self)

    def __exit__(self, *exc):
        assert self.log.current.pop() is self


class _FakeCuda:
    """numba.cuda's gpus / synchronize / defer_cleanup, recording what was done on which device."""

    def __init__(self, devices):
        self.current: list[_FakeDevice] = []
        self.synced: list[int] = []
        self.deferred: dict[int, int] = {}
        self.gpus = [_FakeDevice(self, *d) for d in devices]

    def synchronize(self):
        dev = self.current[-1]
        if dev.sync_error:
            raise RuntimeError("sticky error from an earlier launch")
        self.synced.append(dev.id)

    @contextlib.contextmanager
    def defer_cleanup(self):
        dev = self.current[-1].id
        self.deferred[dev] = self.deferred.get(dev, 0) + 1
        try:
            yield
        finally:
            self.deferred[dev] -= 1


def test_exit_hook_defers_cleanup_on_every_device_numba_used(monkeypatch):
    from rocsample.backends import cuda as cuda_backend

    stack = contextlib.ExitStack()
    monkeypatch.setattr(cuda_backend, "_exit_deferred", stack)
    fake = _FakeCuda([(0,), (1, True, True), (2, False)])  # 1: synchronize fails; 2: never used
    assert cuda_backend.quiesce_at_exit(fake) == [0, 1]
    assert fake.synced == [0]
    assert fake.deferred == {0: 1, 1: 1}  # and still deferred after the hook returned
    assert fake.current == []  # every context pushed was popped
    stack.close()
    assert fake.deferred == {0: 0, 1: 0}


def test_exit_hook_runs_before_weakref_finalizers():
    """atexit is LIFO; the hook must run before weakref._exitfunc, which calls numba's finalizers."""
    script = textwrap.dedent(
        """
        import weakref

        class Obj:
            pass

        early = Obj()
        weakref.finalize(early, print, "finalizer made before the hook", flush=True)

        from rocsample.backends import cuda as cuda_backend

        class Dev:
            id = 0
            primary_context = object()

            def __enter__(self):
                print("hook", flush=True)

            def __exit__(self, *exc):
                pass

        class Cuda:
            gpus = [Dev()]

            def synchronize(self):
                pass

            def defer_cleanup(self):
                import contextlib

                return contextlib.nullcontext()

        cuda_backend.register_exit_hook(Cuda())
        cuda_backend.register_exit_hook(Cuda())  # once per process
        late = Obj()
        weakref.finalize(late, print, "finalizer made after the hook", flush=True)
        """
    )
    env = dict(os.environ, ROCSAMPLE_BACKEND="cpu")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", script], cwd=_ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "hook",
        "finalizer made after the hook",  # weakref._exitfunc: newest first
        "finalizer made before the hook",
    ], proc.stdout + proc.stderr
