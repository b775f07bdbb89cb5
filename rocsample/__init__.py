"""rocsample: GPU token sampling and ggml set_rows, one numba kernel source for AMD and NVIDIA.

Backends: ``hip`` (AMD, numba-hip), ``cuda`` (NVIDIA, numba-cuda), ``sim`` (numba-cuda's simulator)
and ``cpu`` (the NumPy reference). Choose with ``ROCSAMPLE_BACKEND`` or :func:`use_backend`.
"""

from __future__ import annotations

from .backends import get_backend, use_backend
from .errors import (
    BackendUnavailable,
    CaptureError,
    RocsampleError,
    SamplingError,
    ScratchNotWarmed,
)

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "CaptureError",
    "RocsampleError",
    "SamplingError",
    "ScratchNotWarmed",
    "get_backend",
    "use_backend",
    "__version__",
]
