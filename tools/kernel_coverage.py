"""Which of rocsample's kernels a recorded run launched (for choosing sanitizer parts).

Reads a ``ROCSAMPLE_RECORD_KERNELS`` file (tools/kernel_sigs.py; written by a ``--backend sim``
pytest run) and lists the library's kernels (not its device functions) that the run never
launched. Exit 1 if any is missing.

    ROCSAMPLE_RECORD_KERNELS=build/part.json pytest --backend sim tests/fuzz ...
    python tools/kernel_coverage.py build/part.json [more.json ...]
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys


def universe(be) -> set:
    """(build, attribute path) of every kernel of the library's build namespaces."""
    spec = importlib.util.spec_from_file_location(
        "kernel_sigs", pathlib.Path(__file__).with_name("kernel_sigs.py"))
    ks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ks)
    from rocsample.kernels import sampling, set_rows

    out = set()
    for build in (sampling.build, set_rows.build):
        for path, obj in ks._paths(be.kernels(build)):
            if not getattr(obj, "_device", False):  # device functions run inside kernels only
                out.add((f"{build.__module__}:{build.__qualname__}", path))
    return out


def main(argv: list[str]) -> int:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import rocsample

    be = rocsample.use_backend("sim")
    uni = universe(be)
    got = set()
    for path in argv:
        got |= {(r["build"], r["kernel"]) for r in json.load(open(path))}
    missing = sorted(uni - got)
    print(f"kernels launched: {len(uni & got)} of {len(uni)}")
    for build, kernel in missing:
        print(f"  never launched: {kernel} ({build})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
