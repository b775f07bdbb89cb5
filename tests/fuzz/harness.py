"""What every fuzz test shares: the profile, placing arrays on a backend, outcomes, the cpu twin.

A fuzz example is a *case*: host (NumPy) values plus, for each array argument, where it lives
("host" or "device"). It runs on the session's backend and, on a device backend, once more on
``cpu`` (the *twin*) in the same process. Each run gives an :class:`Outcome`: the results read
back to the host, or the error's type and the argument its message names. Three checks follow:

1. the oracle: a case the generator built valid must succeed and equal the reference (sampling:
   tokens equal except rows the reference flags as on a rounding boundary; set_rows: every byte);
   a case it built with bad arguments must raise a ``ValueError`` / ``TypeError`` /
   ``IndexError`` whose message starts with ``"<argument>: expected"`` for one of them;
2. the twin: the device backend and ``cpu`` give the same result or the same error type and
   argument (SPEC: the backends agree);
3. hygiene: no ``RuntimeWarning`` escapes, and a refused call launched nothing and left every
   array it was given unchanged.

Profiles (``ROCSAMPLE_FUZZ``): ``ci`` (default; fixed seed: the same examples every run, tiny
shapes on sim, within CI's budget), ``long`` (random seed, more examples, larger shapes: for
cuda on the H200; ``ROCSAMPLE_FUZZ_EXAMPLES`` scales it) and ``sanitize`` (fixed seed, the sim
counts and small shapes on any backend: the fuzz part of tools/gpu/sanitize.sh, where every
launch runs under compute-sanitizer).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import warnings

import numpy as np
from hypothesis import HealthCheck, settings

import rocsample
from rocsample import backends as _backends

PROFILE = os.environ.get("ROCSAMPLE_FUZZ", "ci").strip().lower() or "ci"
BACKEND = os.environ.get("ROCSAMPLE_BACKEND", "cpu")
if PROFILE not in ("ci", "long", "sanitize"):
    raise RuntimeError(f"ROCSAMPLE_FUZZ: expected 'ci', 'long' or 'sanitize', got {PROFILE!r}")

#: examples per fuzz test: (cpu, sim, cuda/hip) in the ci profile; the long profile multiplies
_CI_EXAMPLES = {
    "sample": (150, 50, 60),
    "sampler": (60, 12, 30),
    "capture": (40, 8, 20),
    "set_rows": (200, 90, 100),
    "ring_write": (100, 30, 50),
    "graph_program": (30, 6, 15),
    "copy_to_device": (60, 30, 40),
    "scratch": (40, 15, 25),
}


def examples(test: str) -> int:
    cpu, sim, gpu = _CI_EXAMPLES[test]
    n = cpu if BACKEND == "cpu" else sim if BACKEND == "sim" or PROFILE == "sanitize" else gpu
    if PROFILE == "long":
        n *= int(os.environ.get("ROCSAMPLE_FUZZ_EXAMPLES", "10"))
    return n


def fuzz_settings(test: str, **kw):
    """Hypothesis settings of one fuzz test under the active profile."""
    base = dict(
        max_examples=examples(test),
        deadline=None,
        database=None,
        derandomize=PROFILE != "long",
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
    )
    base.update(kw)
    return settings(**base)


@dataclasses.dataclass(frozen=True)
class Limits:
    """Shape limits of the generated inputs (the simulator runs every thread in Python)."""

    rows: int
    vocab: int
    big_vocab: int  # an occasional longer row, to cross split and tile edges
    set_rows: int  # dst rows
    ne0_blocks: int  # quantized row width in 32-value blocks
    ne0_float: int
    n_src: int


def limits() -> Limits:
    if BACKEND == "sim":
        return Limits(rows=3, vocab=40, big_vocab=96, set_rows=6, ne0_blocks=2, ne0_float=40, n_src=4)
    if BACKEND == "cpu" or PROFILE == "sanitize":
        return Limits(rows=6, vocab=300, big_vocab=2000, set_rows=12, ne0_blocks=4, ne0_float=96, n_src=8)
    if PROFILE == "long":
        return Limits(rows=32, vocab=4096, big_vocab=70_000, set_rows=512, ne0_blocks=16,
                      ne0_float=512, n_src=64)
    return Limits(rows=16, vocab=2000, big_vocab=40_000, set_rows=64, ne0_blocks=8, ne0_float=256,
                  n_src=16)


# ---- outcomes ---------------------------------------------------------------------------------
_NAMED = re.compile(r"^([A-Za-z_][\w\[\]'\"./]*): expected ")


@dataclasses.dataclass
class Outcome:
    """What one run of a case gave: ``values`` (host arrays) or an error."""

    values: dict | None = None
    error: BaseException | None = None
    warnings: tuple = ()
    launched: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def etype(self) -> str:
        return type(self.error).__name__ if self.error is not None else "-"

    @property
    def arg(self) -> str | None:
        """The argument an error's message names ("top_p: expected ..." -> "top_p")."""
        if self.error is None:
            return None
        m = _NAMED.match(str(self.error))
        return m.group(1) if m else None

    def brief(self) -> str:
        if self.ok:
            return "ok"
        msg = str(self.error)
        return f"{self.etype}({msg[:300]}{'...' if len(msg) > 300 else ''})"


def run(fn, backend) -> Outcome:
    """Run ``fn()`` (which returns a dict of host arrays) and record what happened: the values or
    the error, the RuntimeWarnings it let out, and how many launches / enqueued ops it made."""
    count = [0]
    saved = {k: backend.__dict__[k] for k in ("launch", "enqueue") if k in backend.__dict__}
    orig_launch, orig_enqueue = backend.launch, backend.enqueue

    def launch(*a, **k):
        count[0] += 1
        return orig_launch(*a, **k)

    def enqueue(*a, **k):
        count[0] += 1
        return orig_enqueue(*a, **k)

    backend.launch, backend.enqueue = launch, enqueue
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                out = Outcome(values=fn())
            except Exception as e:  # noqa: BLE001 - every error is an outcome to judge
                out = Outcome(error=e)
    finally:
        for k in ("launch", "enqueue"):
            if k in saved:
                setattr(backend, k, saved[k])
            else:
                delattr(backend, k)
    out.warnings = tuple(sorted({f"{w.category.__name__}: {w.message} ({os.path.basename(w.filename)}:"
                                 f"{w.lineno})" for w in seen if issubclass(w.category, RuntimeWarning)}))
    out.launched = count[0]
    return out


_LOG = os.environ.get("ROCSAMPLE_FUZZ_LOG")


def log(test: str, label: str, out: "Outcome") -> None:
    """One line per example to ``$ROCSAMPLE_FUZZ_LOG`` (JSON lines; unset: nothing): what the
    profile covered, e.g. ``{"test": "sample", "label": "valid", "outcome": "ok"}``."""
    from hypothesis import event
    from hypothesis.errors import InvalidArgument

    kind = "ok" if out.ok else f"{out.etype} {out.arg}"
    with contextlib.suppress(InvalidArgument):  # an explicit case runs outside a hypothesis test
        event(f"{label}: {kind}")
    if _LOG:
        import json

        with open(_LOG, "a") as f:
            f.write(json.dumps({"backend": BACKEND, "test": test, "label": label,
                                "outcome": kind}) + "\n")


@contextlib.contextmanager
def on_backend(name: str):
    """Make ``name`` the current backend inside the block (the twin run), then restore."""
    prev = _backends._current
    be = rocsample.use_backend(name)
    try:
        yield be
    finally:
        with _backends._lock:
            _backends._current = prev


def twin_enabled(backend) -> bool:
    return backend.name != "cpu"


def quiet(fn):
    """``fn`` under ``np.errstate(all="ignore")``: the tests' own reference calls (the library's
    calls are watched for warnings; the test's are not the library's)."""
    def call(*a, **k):
        with np.errstate(all="ignore"):
            return fn(*a, **k)

    return call


# ---- placing arrays ---------------------------------------------------------------------------
def place(backend, host: np.ndarray, where: str, name: str, stream=None):
    """``host`` as the call will see it: a NumPy copy, or a device copy on ``stream``.

    ``where`` is "host", "device", or "device_rowview" (a device array whose rows are a view of
    a wider one: row stride > row length). On ``cpu`` "device" is NumPy, its device memory.
    """
    host = np.array(host, copy=True)
    if where == "host" or not backend.is_device:
        if where == "device_rowview" and host.ndim == 2:
            wide = np.zeros((host.shape[0], host.shape[1] + 3), host.dtype)
            wide[:, : host.shape[1]] = host
            return wide[:, : host.shape[1]]
        return host
    st = backend.stream(stream)
    if where == "device_rowview" and host.ndim == 2:
        wide = np.zeros((host.shape[0], host.shape[1] + 3), host.dtype)
        wide[:, : host.shape[1]] = host
        return backend.as_array(wide, name, st)[:, : host.shape[1]]
    return backend.as_array(host, name, st)


def host_of(backend, arr, stream=None) -> np.ndarray:
    if isinstance(arr, np.ndarray):
        return np.array(arr, copy=True)
    return np.array(backend.to_host(arr, backend.stream(stream)), copy=True)


# ---- judging ----------------------------------------------------------------------------------
def fail(msg: str, case) -> None:
    raise AssertionError(f"{msg}\n  case: {case}")


def check_named_refusal(out: Outcome, bad: set, case, allowed=(ValueError, TypeError, IndexError)):
    """A case built with bad arguments raised a named error for one of them."""
    if out.ok:
        fail(f"expected a named error for {sorted(bad)}, but the call succeeded", case)
    if not isinstance(out.error, allowed):
        fail(f"expected {[t.__name__ for t in allowed]} naming one of {sorted(bad)}, got "
             f"{out.brief()}", case)
    arg = out.arg
    if arg is None:
        fail(f"an error that names no argument (want '<argument>: expected ...'): {out.brief()}", case)
    names = set(re.split(r"[/\[]", arg))
    if not names & bad:
        fail(f"the error names {arg!r}, not one of the bad arguments {sorted(bad)}: {out.brief()}",
             case)


def check_hygiene(out: Outcome, case, untouched: dict | None = None, launch_first: bool = False) -> None:
    """No RuntimeWarning escaped; a refused call (ValueError / TypeError) launched nothing, unless
    ``launch_first`` (the check itself is a kernel: the finite-src check of a device src)."""
    if out.warnings:
        fail(f"RuntimeWarning escaped: {list(out.warnings)}", case)
    if not out.ok and isinstance(out.error, (ValueError, TypeError)) and not launch_first \
            and not isinstance(out.error, IndexError) and out.launched:
        fail(f"a refused call launched or enqueued {out.launched} kernel(s)/op(s) first: "
             f"{out.brief()}", case)
    for name, (before, after) in (untouched or {}).items():
        if not np.array_equal(np.asarray(before).view(np.uint8), np.asarray(after).view(np.uint8)):
            fail(f"a refused call changed {name}: {out.brief()}", case)


def check_twins(dev: Outcome, cpu: Outcome, case, same_values) -> None:
    """The device backend and cpu agree: both fail with the same type and argument, or both
    succeed with values ``same_values(dev.values, cpu.values)`` accepts."""
    if dev.ok != cpu.ok:
        fail(f"backends disagree: {BACKEND} {dev.brief()} / cpu {cpu.brief()}", case)
    if not dev.ok:
        if (dev.etype, dev.arg) != (cpu.etype, cpu.arg):
            fail(f"backends raise differently: {BACKEND} {dev.brief()} / cpu {cpu.brief()}", case)
        return
    problem = same_values(dev.values, cpu.values)
    if problem:
        fail(f"backends give different results: {problem}", case)
