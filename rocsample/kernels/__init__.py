"""Device code, one file per kernel family. Each file defines ``build(cuda)``; see docs/DESIGN.md.

``JIT_CACHE``: kernels are cached on disk by numba (``cache=True``) so a second process reaches
its first token without recompiling; ``ROCSAMPLE_JIT_CACHE=0`` turns it off. numba picks the
folder (``__pycache__`` beside the source, or ``NUMBA_CACHE_DIR``).
"""

import os

JIT_CACHE = os.environ.get("ROCSAMPLE_JIT_CACHE", "1") != "0"
