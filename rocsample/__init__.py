"""rocsample: GPU token sampling and ggml set_rows, one numba kernel source for AMD and NVIDIA.

Backends: ``hip`` (AMD, numba-hip), ``cuda`` (NVIDIA, numba-cuda), ``sim`` (numba-cuda's simulator)
and ``cpu`` (the NumPy reference). Choose with ``ROCSAMPLE_BACKEND`` or :func:`use_backend`.
"""

from __future__ import annotations

from . import graphs, scratch
from .backends import get_backend, use_backend
from .errors import (
    BackendUnavailable,
    CaptureError,
    RocsampleError,
    SamplingError,
    ScratchNotWarmed,
)
from .sampling import Sampler, argmax, sample
from .set_rows import check_errors, ring_write, set_rows

__version__ = "0.2.0"

__all__ = [
    "BackendUnavailable",
    "CaptureError",
    "RocsampleError",
    "SamplingError",
    "ScratchNotWarmed",
    "Sampler",
    "argmax",
    "check_errors",
    "get_backend",
    "graphs",
    "ring_write",
    "sample",
    "scratch",
    "set_rows",
    "use_backend",
    "__version__",
]
