"""The hip backend's host side with no AMD GPU: rocsample/backends/hip.py and the GPU runtime
(``_driver.py``, ``gpu.py``) against the real hip-python-interop / rocm-bindings 10.0 and
numba-hip 0.2.1, in the offline AMD toolchain (``tools/amd/setup.sh``; ``make
check-amd-offline``, a step of ``make test``, runs this file there).

What stands in for the GPU: ``tools/amd/hipstub.c``, a libamdhip64.so that records each HIP call
with the C arguments it received and answers with made-up handles. hip-python's bindings load it
from ``$ROCM_PATH/lib`` as they would load ROCm's. So these tests show what rocsample's calls
become at the C boundary (handles, flags, enum values, out-pointers, kernel parameters), the
runtime calls whose signatures differ from CUDA's (``cuGraphInstantiate``, ``cuStreamGetDevice``),
``hip.load``'s checks with the real numba-hip, and what the atomics become in the ISA. What still
needs a real gfx1151 is listed in docs/DESIGN.md ("The hip backend without AMD hardware").
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import types

import pytest

ROOT = pathlib.Path(__file__).parents[2]
TOOLS = ROOT / "tools" / "amd"
STUB = os.environ.get("ROCSAMPLE_AMD_HIPSTUB", "")
STUB_LIB = os.path.join(STUB, "lib", "libamdhip64.so")


def _in_toolchain() -> bool:
    return bool(STUB) and os.path.exists(STUB_LIB) and importlib.util.find_spec("numba.hip") is not None


pytestmark = pytest.mark.skipif(
    not _in_toolchain(),
    reason="cpu-only: needs the offline AMD toolchain (tools/amd/setup.sh); make check-amd-offline runs it")


class Stub:
    """The recording libamdhip64.so, as the test reads it."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(STUB_LIB)  # the same handle hip-python's loader opened
        self.lib.rocsample_stub_log.restype = ctypes.c_char_p

    def reset(self) -> None:
        self.lib.rocsample_stub_reset()

    def calls(self) -> list[str]:
        return self.lib.rocsample_stub_log().decode().splitlines()


@pytest.fixture(scope="module")
def stub():
    saved = os.environ.get("ROCM_PATH")
    os.environ["ROCM_PATH"] = STUB  # read once, at the bindings' first HIP call
    from rocm.bindings.util.paths import get_library_path

    assert os.fsdecode(get_library_path("amdhip64")) == STUB_LIB
    yield Stub()
    if saved is None:
        os.environ.pop("ROCM_PATH", None)
    else:
        os.environ["ROCM_PATH"] = saved


@pytest.fixture(scope="module")
def driver(stub):
    from cuda.bindings import driver

    return driver


class _NumbaSide:
    """numba-hip's part of the runtime (device contexts), which needs a device: not under test."""

    class _Gpus:
        def __getitem__(self, i):
            return contextlib.nullcontext()

        def __len__(self):
            return 1

    gpus = _Gpus()
    __name__ = "numba.hip"

    @staticmethod
    def get_current_device():
        return types.SimpleNamespace(id=0)

    @staticmethod
    def from_cuda_array_interface(desc, owner, sync):
        return desc

    @staticmethod
    def external_stream(handle):
        return ("numba stream", handle)


def _vendor(driver, native=False):
    from rocsample.backends import hip as hipmod

    v = hipmod.Vendor(_NumbaSide(), driver)
    v.native = (STUB_LIB,) + hipmod.Vendor.native[1:] if native else None
    return v


@pytest.fixture
def rt(driver, stub):
    from rocsample.backends._driver import DriverRuntime

    stub.reset()
    return DriverRuntime(_vendor(driver))


def _hip_enum(name: str, member: str) -> int:
    from rocm.bindings import hip

    return int(getattr(getattr(hip, name), member).value)


# ---- the names the runtime calls ----------------------------------------------------------
def _driver_names() -> set[str]:
    """Every cuda.bindings.driver name the GPU runtime and the vendor modules use: the first
    argument of ``.call("cu...")`` and every ``<...>.drv.cu...`` / ``driver.cu...`` attribute."""
    names = set()
    for f in ("_driver.py", "gpu.py", "hip.py"):
        tree = ast.parse((ROOT / "rocsample" / "backends" / f).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "call" and node.args:
                a = node.args[0]
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    names.add(a.value)
            if isinstance(node, ast.Attribute) and node.attr.startswith(("cu", "CU")):
                base = node.value
                if getattr(base, "attr", "") == "drv" or getattr(base, "id", "") in ("drv", "driver"):
                    names.add(node.attr)
    return names


def test_every_driver_name_the_runtime_calls_is_served(driver):
    names = _driver_names()
    assert len(names) >= 15, names  # the scan found the runtime's calls
    missing = sorted(n for n in names if not hasattr(driver, n))
    assert not missing, f"hip-python-interop's cuda.bindings.driver lacks {missing}"
    from rocsample.backends._driver import _MODES

    for m in _MODES:  # begin_capture's getattr(CUstreamCaptureMode, f"CU_STREAM_CAPTURE_MODE_{m}")
        assert hasattr(driver.CUstreamCaptureMode, f"CU_STREAM_CAPTURE_MODE_{m.upper()}")


def test_the_two_calls_hip_py_replaces_differ_on_hip(driver, stub):
    # cuStreamGetDevice is not served: hip.Vendor.stream_device asks hipStreamGetDevice
    assert not hasattr(driver, "cuStreamGetDevice"), "served now: hip.Vendor.stream_device may go"
    from rocm.bindings import hip

    assert hasattr(hip, "hipStreamGetDevice")
    # cuGraphInstantiate is HIP's (graph, bufferSize) form with four results, not CUDA 12's
    # (graph, flags) -> (err, exec): rocsample's generic call() would hand back a 3-tuple
    stub.reset()
    res = driver.cuGraphInstantiate(0x5000, 0)
    assert len(res) == 4 and int(res[0]) == 0
    res = driver.cuGraphInstantiateWithFlags(0x5000, 0)
    assert len(res) == 2 and int(res[0]) == 0 and int(res[1]) == 0x5001
    assert stub.calls() == ["hipGraphInstantiate 0x5000 0", "hipGraphInstantiateWithFlags 0x5000 0"]


def test_graph_instantiate_takes_the_flags_form(rt, stub):
    exec_ = rt.instantiate(0x7770)
    assert int(exec_) == 0x7771  # the stub's executable graph for graph 0x7770
    assert stub.calls() == ["hipGraphInstantiateWithFlags 0x7770 0"]


def test_stream_device_reaches_hipStreamGetDevice(rt, stub):
    # the stub answers device = bits 28..31 of the handle; outside a capture it is asked
    st = rt.stream(0x20000040)
    assert (st.handle, st.device, st.numba) == (0x20000040, 2, ("numba stream", 0x20000040))
    assert stub.calls() == ["hipStreamIsCapturing 0x20000040", "hipStreamIsCapturing 0",
                            "hipStreamGetDevice 0x20000040"]


@pytest.mark.parametrize("mode", ["thread_local", "global", "relaxed"])
def test_capture_modes_and_status_through_the_bindings(rt, stub, mode):
    from rocsample.backends.base import CaptureStatus, Stream

    st = Stream(0x30000080, 3, None)
    rt.begin_capture(st, mode)
    want = _hip_enum("hipStreamCaptureMode", "hipStreamCaptureMode" + mode.title().replace("_", ""))
    assert stub.calls()[-1] == f"hipStreamBeginCapture 0x30000080 {want}"
    assert rt.capture_status(st) is CaptureStatus.ACTIVE
    # a global capture makes the legacy stream's query fail (the stub returns
    # hipErrorStreamCaptureImplicit, as HIP does): the runtime reads that as "capture active"
    assert rt.global_capture_active(3) is (mode == "global")
    graph = rt.end_capture(st)
    assert rt.capture_status(st) is CaptureStatus.NONE
    assert int(graph) > 0 and stub.calls()[-2] == "hipStreamEndCapture 0x30000080"


def test_memory_events_graphs_and_sync_reach_hip(driver, stub):
    from rocsample.backends._driver import DriverRuntime
    from rocsample.backends.base import Stream

    stub.reset()
    rt = DriverRuntime(_vendor(driver))
    st = Stream(0x20000040, 2, None)
    a = rt.mem_alloc(100, 2)
    assert a.array["data"] == (a.ptr, False) and a.array["shape"] == (100,)
    assert rt.pointer_device(a.ptr) == 1  # the stub's allocations are "device 1" addresses
    ev = rt.event_record(st)
    assert rt.event_query(ev) is True
    rt.event_destroy(ev)
    exec_ = rt.instantiate(0x4440)
    rt.graph_launch(exec_, st)  # the bindings' path (no native library in this vendor)
    rt.graph_exec_destroy(exec_)
    rt.graph_destroy(0x4440)
    rt.mem_free(a)
    rt.synchronize(st)
    ev_h = int(ev)
    attr = _hip_enum("hipPointer_attribute", "HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL")
    assert stub.calls() == [
        "hipDevicePrimaryCtxRetain 2", "hipCtxPushCurrent 0xc002", "hipMalloc 100", "hipCtxPopCurrent",
        f"hipPointerGetAttribute {attr} {a.ptr:#x}",
        "hipCtxPushCurrent 0xc002", "hipEventCreateWithFlags 2",  # CU_EVENT_DISABLE_TIMING
        f"hipEventRecord {ev_h:#x} 0x20000040", "hipCtxPopCurrent",
        f"hipEventQuery {ev_h:#x}", f"hipEventDestroy {ev_h:#x}",
        "hipGraphInstantiateWithFlags 0x4440 0", "hipGraphLaunch 0x4441 0x20000040",
        "hipGraphExecDestroy 0x4441", "hipGraphDestroy 0x4440",
        "hipCtxPushCurrent 0xc002", f"hipFree {a.ptr:#x}", "hipCtxPopCurrent",
        "hipStreamSynchronize 0x20000040"]


def test_the_native_path_loads_the_runtime_the_bindings_chose(driver, stub):
    # hip.load puts the bindings' library first, so the ctypes launch path and numba-hip call
    # into one runtime; here that is the stub, found through ROCM_PATH as ROCm's would be
    from rocsample.backends import hip as hipmod
    from rocsample.backends._driver import DriverRuntime
    from rocsample.backends.base import Stream

    assert hipmod._find_hip_runtime() == STUB_LIB
    stub.reset()
    rt = DriverRuntime(_vendor(driver, native=True))
    assert rt.vendor.native_calls() is not None
    rt.graph_launch(0x6661, Stream(0x20000040, 2, None))
    rt.graph_launch(0x6661, Stream(0, 0, 0))
    assert stub.calls() == ["hipGraphLaunch 0x6661 0x20000040", "hipGraphLaunch 0x6661 0"]


# ---- a bound launch: numba-hip's argument packing, both launch paths ------------------------
@pytest.fixture(scope="module")
def offline_kernel(stub):
    """A numba-hip kernel compiled for gfx1151 in this process (the comgr stand-in, no device),
    as ``GpuBackend.bind`` finds it behind ``kernel.specialize``."""
    sys.path.insert(0, str(TOOLS))
    import compile_check

    compile_check._init("gfx1151")  # the stand-in and the target, as in the gate's workers
    from numba import hip

    hip.pose_as_cuda()  # the process as hip.load leaves it (numba.cuda is numba-hip from here)
    from numba.core import types as nt
    from numba.hip.dispatcher import _Kernel

    @hip.jit
    def k(a, b, c):
        if a + b * c == 0:  # scalars only: numba-hip packs arrays through a device context
            hip.syncthreads()

    kern = _Kernel(k.py_func, (nt.int64, nt.int64, nt.int64))
    assert kern._codelibrary.get_codeobj("gfx1151")[:4] == b"\x7fELF"
    return kern


class _Spec:
    def __init__(self, compiled):
        self.overloads = {compiled.argument_types: compiled}


@pytest.mark.parametrize("native", [True, False], ids=["ctypes", "bindings"])
def test_bind_packs_numba_hips_arguments_for_hipModuleLaunchKernel(driver, stub, offline_kernel,
                                                                   monkeypatch, native):
    from rocsample.backends.base import Stream
    from rocsample.backends.gpu import GpuBackend

    # the one piece that needs a device: loading the code object (hipModuleLoadData)
    monkeypatch.setattr(offline_kernel._codelibrary, "get_cufunc",
                        lambda: types.SimpleNamespace(handle=ctypes.c_void_p(0xF00)))
    be = GpuBackend("hip", _vendor(driver, native=native))
    kernel = types.SimpleNamespace(specialize=lambda *args: _Spec(offline_kernel))
    stub.reset()
    stub.lib.rocsample_stub_launch_params(3)
    run = be.bind(kernel, (4, 2), 64, Stream(0x20000040, 2, "numba stream"), 7, -3, 1 << 40)
    run()
    run()
    want = "hipModuleLaunchKernel 0xf00 4,2,1 64,1,1 0 0x20000040 7 -3 1099511627776 extra=(nil)"
    assert stub.calls() == [want, want]


# ---- hip.load with the real numba-hip, in fresh processes ---------------------------------
_LOAD = r"""
import ctypes, json, os, sys
lib = ctypes.CDLL(os.path.join(os.environ["ROCM_PATH"], "lib", "libamdhip64.so"))
lib.rocsample_stub_devices(int(sys.argv[1]), int(sys.argv[2]))
if sys.argv[3] == "1":
    sys.path.insert(0, sys.argv[4])
    import comgr_standin
    comgr_standin.install()
from rocsample.backends import hip
from rocsample.errors import BackendUnavailable
try:
    hip.load()
    err = None
except BackendUnavailable as e:
    err = str(e)
posed = "numba.hip" in sys.modules and sys.modules.get("numba.cuda") is sys.modules["numba.hip"]
print(json.dumps(dict(error=err, posed=posed)))
"""


def _load(init_error: int, devices: int, standin: bool) -> dict:
    env = dict(os.environ, ROCM_PATH=STUB, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _LOAD, str(init_error), str(devices),
                        "1" if standin else "0", str(TOOLS)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_load_names_numba_hips_import_failure_without_comgr():
    # no libamd_comgr.so: numba-hip's import raises RuntimeError, which load turns into
    # BackendUnavailable (auto-detection then moves on), and nothing is posed
    r = _load(0, 1, standin=False)
    assert r["error"].startswith("hip: numba-hip is not importable (RuntimeError: ")
    assert "comgr" in r["error"] and r["posed"] is False


def test_load_refuses_a_runtime_with_no_device():
    # hipInit answers hipErrorNoDevice (HIP on a machine without an AMD GPU)
    r = _load(100, 0, standin=True)
    assert r == dict(error="hip: no usable AMD GPU found: install ROCm >= 7.2 and rocsample[hip] "
                           "(numba-hip, hip-python-interop)", posed=False)


def test_load_refuses_a_runtime_that_initialises_but_lists_no_device():
    # hipInit succeeds, hipGetDeviceCount says 0: numba-hip's is_available is True here
    r = _load(0, 0, standin=True)
    assert r["error"].startswith("hip: no usable AMD GPU found (the HIP runtime lists 0 devices)")
    assert r["posed"] is False


# ---- the atomics in the ISA -----------------------------------------------------------------
def _atomic_records():
    from tests.backends.hip_atomic_kernels import GLOBAL

    build = "tests.backends.hip_atomic_kernels:build"
    recs = [dict(build=build, kernel=name, args=[{"array": [dt, 1, "C"]}, {"array": [dt, 1, "C"]},
                                                  {"scalar": dt}], blocks=[64])
            for name, _, dt in GLOBAL]
    recs.append(dict(build=build, kernel="shared_add_i32",
                     args=[{"array": ["int32", 1, "C"]}, {"scalar": "int32"}], blocks=[64]))
    return recs


# per target: the returning forms of the native instructions, and the compare-and-swap LLVM
# expands an atomicrmw to where no native one applies (min/max and float add on global memory:
# the atomicrmw carries the default, system-wide sync scope)
_NATIVE = {
    "gfx1151": dict(add_i32="global_atomic_add_u32", add_i64="global_atomic_add_u64",
                    add_f32="global_atomic_add_f32", min_i64="global_atomic_min_i64",
                    max_i32="global_atomic_max_i32", min_u64="global_atomic_min_u64",
                    max_u32="global_atomic_max_u32", shared_add_i32="ds_add_rtn_u32",
                    returns=" glc", cas=("global_atomic_cmpswap_b32", "global_atomic_cmpswap_b64")),
    "gfx942": dict(add_i32="global_atomic_add", add_i64="global_atomic_add_x2",
                   add_f32="global_atomic_add_f32", min_i64="global_atomic_smin_x2",
                   max_i32="global_atomic_smax", min_u64="global_atomic_umin_x2",
                   max_u32="global_atomic_umax", shared_add_i32="ds_add_rtn_u32",
                   returns=" sc0", cas=("global_atomic_cmpswap", "global_atomic_cmpswap_x2")),
}
_MUST_BE_NATIVE = ("add_i32", "add_i64", "shared_add_i32")


@pytest.mark.parametrize("arch", ["gfx1151", "gfx942"])
def test_atomics_become_atomic_instructions(arch):
    sys.path.insert(0, str(TOOLS))
    import compile_check

    recs = _atomic_records()
    want = _NATIVE[arch]
    for rec, res in zip(recs, compile_check.compile_records(recs, arch, jobs=2)):
        name = rec["kernel"]
        assert res["error"] is None and not res["problems"], (name, res["error"], res["problems"])
        assert res["atomic_calls"] == [name.split("_")[-2] if name.startswith("shared") else name[:3]]
        ops = res["info"]["atomics"]
        assert sum(ops.values()) == 1, (name, ops)  # exactly the one atomic, nothing else
        (op,) = ops
        if name in _MUST_BE_NATIVE:
            assert op == want[name], (name, ops)
        else:
            assert op in (want[name],) + want["cas"], (name, ops)
        line = next(ln for ln in res["asm"].splitlines() if ln.startswith(f"\t{op} "))
        if not op.startswith("ds_"):  # the old value comes back: the returning form
            assert want["returns"] in line, line


# ---- the gate compiles each signature's front end once for both targets ---------------------
def _symbols_out(asm: str) -> str:
    # numba's mangled names carry an ABI tag of the compiling process's flags (the faked
    # device's architecture among them): the one thing a shared front end changes
    import re

    return re.sub(r"_ZN[0-9A-Za-z_]+", "SYM", asm)


def test_one_front_end_for_both_targets_gives_each_targets_own_code(monkeypatch):
    """compile_check compiles a signature's front end once, then its code for each target. A
    second target's code generation used to leave its attributes on the device functions every
    kernel of the process shares (numba-hip adds them in place): the next kernels came out with
    no kernel in their code object. Two real signatures in one process, both targets, against
    each target in a process of its own: the same code but for symbol names."""
    sys.path.insert(0, str(TOOLS))
    import compile_check

    sigs = pathlib.Path(os.environ.get("ROCSAMPLE_KERNEL_SIGS", ROOT / "build" / "kernel-sigs.json"))
    assert sigs.is_file(), f"{sigs}: run the sim tests with ROCSAMPLE_RECORD_KERNELS first"
    want = ("float.fast.argmax()", "float.fast.partials(False,True)")
    every = compile_check.load_records([str(sigs)])
    # (one signature of each: a record holds a kernel at every argument type launched)
    recs = [next((r for r in every if r["kernel"] == k), None) for k in want]
    assert None not in recs, f"{sigs} lacks {want}"
    monkeypatch.delenv("ROCSAMPLE_AMD_CACHE", raising=False)  # compile, do not read the cache
    archs = ("gfx1151", "gfx942")
    shared = list(compile_check.compile_all(recs, archs, jobs=1))  # one worker: both in turn
    for i, arch in enumerate(archs):
        alone = compile_check.compile_records(recs, arch, jobs=1)
        for rec, both, one in zip(recs, shared, alone):
            got = both[i]
            assert got["arch"] == arch and not got["error"] and not got["problems"], \
                (rec["kernel"], arch, got["error"], got["problems"])
            assert _symbols_out(got["asm"]) == _symbols_out(one["asm"]), (rec["kernel"], arch)
            assert got["info"] == one["info"], (rec["kernel"], arch)
