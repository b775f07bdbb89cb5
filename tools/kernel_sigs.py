"""Which kernel was launched with which argument types: recorded during a ``sim`` test run.

The simulator runs kernels as Python, so kernel code that numba's compiler cannot type (or that
types differently from what the simulator executes) passes there. ``tools/ptx_check.py`` closes
that gap without a GPU: it compiles, with numba-cuda's real compiler, every (kernel, signature)
that this recorder saw the sim test run launch.

``install(backend, path)`` wraps ``backend.launch`` (every launch of rocsample goes through it on
sim, bound and replayed ones included) and writes ``path`` at interpreter exit: a JSON list of
``{"build": "module:qualname", "kernel": "float.fast.partials(True,False)", "args": [...],
"blocks": [64, 256]}`` where ``kernel`` is the attribute path of the kernel in the namespace that
``build(cuda)`` returns, each arg is ``{"array": [dtype, ndim, layout]}`` or ``{"scalar": dtype}``,
and ``blocks`` the threads per block of the launches seen with that signature
(``tools/amd/compile_check.py`` checks registers against them).
``tests/conftest.py`` installs it when ``ROCSAMPLE_RECORD_KERNELS`` names a file; several
processes (xdist workers) recording into one file merge their records into it.
"""

from __future__ import annotations

import atexit
import json
import threading

import numpy as np

FACTORY_ARGS = {"partials": [(d, lp) for d in (False, True) for lp in (False, True)]
                 + [(True, lp, True) for lp in (False, True)]   # the drawing fast variants
                 + [(True, lp, f, True) for lp in (False, True) for f in (False, True)]  # TOP2
                 + [(True, lp, f, True, True) for lp in (False, True) for f in (False, True)]  # TOP4
                 # the fast pass's three-quad forms (KF.FAST3; no logprobs)
                 + [(True, False, True, t2, t4, True)
                    for t2, t4 in ((False, False), (True, False), (True, True))]
                 # the large tile form's FINE layout: without a drawing row, and with the
                 # drawing variant and its fast pass (device parameters)
                 + [(d, lp, f, False, False, False, True) for lp in (False, True)
                    for d, f in ((False, False), (True, False), (True, True))],
                "finalize": [(False,), (True,)],   # the tile finalize and its large form
                "tau": [()],   # the large form's tau, a block a row
                "gather": [(False,), (True,)],   # the large form's candidate gather, strided and FINE
                "argmax": [()]}   # phase 1's argmax kernel (greedy-only calls)


def _paths(ns, prefix=""):
    """(attribute path, object) of every kernel-like object reachable from a build namespace."""
    out = []
    if not isinstance(getattr(ns, "__dict__", None), dict):
        return out
    for name, obj in sorted(vars(ns).items()):
        path = f"{prefix}{name}"
        if hasattr(obj, "py_func"):
            out.append((path, obj))
        elif name in FACTORY_ARGS and callable(obj):
            for args in FACTORY_ARGS[name]:
                out.append((f"{path}({','.join(map(str, args))})", obj(*args)))
        elif hasattr(obj, "__dict__") and type(obj).__name__ == "SimpleNamespace":
            out.extend(_paths(obj, path + "."))
    return out


def _arg_type(a) -> dict:
    import numba

    ary = getattr(a, "_ary", a)  # the simulator's device arrays wrap a numpy array
    if isinstance(ary, np.ndarray):
        t = numba.typeof(ary)
        return {"array": [str(t.dtype), t.ndim, t.layout]}
    if isinstance(a, (bool, np.bool_)):
        return {"scalar": "boolean"}
    if isinstance(a, (int, np.integer)):
        return {"scalar": str(numba.typeof(a))}
    if isinstance(a, (float, np.floating)):
        return {"scalar": str(numba.typeof(a))}
    raise TypeError(f"kernel argument of unexpected type {type(a).__name__}")


def install(backend, path: str) -> None:
    seen: dict[str, dict] = {}
    where: dict[int, tuple[str, str, object]] = {}
    lock = threading.Lock()
    launch = backend.launch

    def locate(kernel) -> tuple[str, str] | None:
        # (the map holds the objects it names: a test that builds the kernels again in a
        # namespace of its own and lets it go would otherwise free ids that later kernels take,
        # and those were recorded under the old names; an entry for another object is stale)
        hit = where.get(id(kernel))
        if hit is None or hit[2] is not kernel:
            for key, ns in list(backend._kernel_cache.items()):
                if not key[0].startswith("rocsample."):
                    continue  # a test's own kernels: not the library's
                build = f"{key[0]}:{key[1]}"
                for p, obj in _paths(ns):
                    if where.get(id(obj), (None, None, None))[2] is not obj:
                        where[id(obj)] = (build, p, obj)
            hit = where.get(id(kernel))
            if hit is None or hit[2] is not kernel:
                return None
        return hit[0], hit[1]

    def recording_launch(kernel, grid, block, stream, *args):
        with lock:
            hit = locate(kernel)
            if hit is not None:  # None: a kernel a test built itself
                rec = {"build": hit[0], "kernel": hit[1], "args": [_arg_type(a) for a in args]}
                rec = seen.setdefault(json.dumps(rec, sort_keys=True), rec)
                threads = int(np.prod(block))
                if threads not in rec.setdefault("blocks", []):
                    rec["blocks"] = sorted(rec["blocks"] + [threads])
        return launch(kernel, grid, block, stream, *args)

    backend.launch = recording_launch

    def write() -> None:
        # pytest-xdist workers (make test runs sim with -n) each record their own launches and
        # merge them into the one file under an exclusive lock: the union of every worker's
        # signatures, each with the union of the block sizes seen.
        import fcntl
        import os

        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        with os.fdopen(fd, "r+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            text = f.read()
            merged = {json.dumps({k: r[k] for k in ("build", "kernel", "args")}, sort_keys=True): r
                      for r in (json.loads(text) if text.strip() else [])}
            for key, rec in seen.items():
                have = merged.setdefault(key, {**rec, "blocks": []})
                have["blocks"] = sorted(set(have["blocks"]) | set(rec.get("blocks", [])))
            f.seek(0)
            f.truncate()
            json.dump(sorted(merged.values(),
                             key=lambda r: (r["build"], r["kernel"], str(r["args"]))), f, indent=0)

    atexit.register(write)
