"""ggml's own CUDA set_rows as a benchmark peer, through its C API (ctypes).

The library is built by ``tools/peers/build_ggml.sh`` into the git-ignored ``.peers/ggml/``
(``libggml_set_rows.so``: ggml 0.25.3's ``ggml-cuda/set-rows.cu`` as vendored by the pinned
llama-cpp-python sdist, plus ``tools/peers/ggml_set_rows_shim.cu``; ``libggml-base.so``: ggml's
C API). An op is made once with ggml's ``ggml_init`` / ``ggml_new_tensor`` / ``ggml_set_rows`` on
the caller's device buffers (torch tensors here) and launched with ggml's
``ggml_cuda_op_set_rows`` on the caller's stream, so a ``torch.cuda.graph`` captures it. ggml's
backend scheduler and its own CUDA-graph reuse (in ``ggml-cuda.cu``) are not built: the peer's
graph figures come from torch graphs around the ctypes launches.

``ROCSAMPLE_GGML_PEER`` names another library path. Nothing here is imported by rocsample.
"""

from __future__ import annotations

import ctypes
import os
import pathlib

import numpy as np

# ggml_type codes (ggml.h) and the names ggml gives them (checked against the library on load)
GGML_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8,
              "iq4_nl": 20, "i32": 26, "i64": 27, "bf16": 30}
_DTYPE_TYPES = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64"}
_BLOCK_BYTES = {"q4_0": 18, "q4_1": 20, "q5_0": 22, "q5_1": 24, "q8_0": 34, "iq4_nl": 18}


def library_path() -> pathlib.Path:
    p = os.environ.get("ROCSAMPLE_GGML_PEER")
    if p:
        return pathlib.Path(p)
    return pathlib.Path(__file__).resolve().parents[1] / ".peers" / "ggml" / "libggml_set_rows.so"


_lib = None


def load():
    """The peer library (loaded once), or None when it was not built / cannot load here."""
    global _lib
    if _lib is not None:
        return _lib or None
    path = library_path()
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        _lib = False
        return None
    i64p = ctypes.POINTER(ctypes.c_int64)
    szp = ctypes.POINTER(ctypes.c_size_t)
    lib.rsg_prepare.restype = ctypes.c_void_p
    lib.rsg_prepare.argtypes = [ctypes.c_int, ctypes.c_void_p, i64p, szp] * 3
    lib.rsg_launch.restype = ctypes.c_int
    lib.rsg_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.rsg_free.restype = None
    lib.rsg_free.argtypes = [ctypes.c_void_p]
    lib.rsg_type_name.restype = ctypes.c_char_p
    lib.rsg_type_name.argtypes = [ctypes.c_int]
    lib.rsg_row_size.restype = ctypes.c_size_t
    lib.rsg_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    for name, code in GGML_TYPES.items():
        got = lib.rsg_type_name(code).decode()
        if got != name:
            raise RuntimeError(f"ggml peer {path}: type {code} is {got!r}, expected {name!r}")
    for name, bpb in _BLOCK_BYTES.items():
        if lib.rsg_row_size(GGML_TYPES[name], 32) != bpb:
            raise RuntimeError(f"ggml peer {path}: {name} blocks are not {bpb} bytes")
    _lib = lib
    return lib


def unsupported(t: str, src_dtype: str) -> str | None:
    """Why ggml's CUDA set_rows cannot take this case (None: it can). ggml-cuda/set-rows.cu
    takes an f16 src only for an f16 dst."""
    if src_dtype == "float16" and t != "f16":
        return f"ggml's CUDA set_rows takes a float16 src only for an f16 dst, not {t}"
    if src_dtype not in ("float32", "float16"):
        return f"src dtype {src_dtype}"
    return None


def _layout(t, arr):
    """(ggml type, ne[4], nb[4]) of a 2-D to 4-D torch CUDA tensor in ggml's axis order."""
    shape = list(arr.shape)
    strides = [s * arr.element_size() for s in arr.stride()]
    shape = [1] * (4 - len(shape)) + shape
    lead = (strides[0] * arr.shape[0]) if arr.dim() else 1
    strides = [lead] * (4 - len(strides)) + strides
    code = GGML_TYPES[t]
    if t in _BLOCK_BYTES:  # a uint8 row of blocks: ne0 counts values, nb0 is a block
        bpb = _BLOCK_BYTES[t]
        ne = [shape[3] // bpb * 32, shape[2], shape[1], shape[0]]
        nb = [bpb, strides[2], strides[1], strides[0]]
    else:
        ne = shape[::-1]
        nb = strides[::-1]
    return code, (ctypes.c_int64 * 4)(*ne), (ctypes.c_size_t * 4)(*nb)


class SetRows:
    """ggml's CUDA set_rows on torch CUDA tensors: ``dst[..., idx[...], :] = src`` (ggml order).

    ``dst`` (d3, d2, n_rows, W) of dst type ``t`` (uint8 rows of blocks for quantized types),
    ``src`` (d3, d2, n_src, ne0) float32 (or float16 for an f16 dst), ``idx`` (i3, i2, n_src)
    int32/int64, NumPy axis order as rocsample.set_rows takes them. The tensors must outlive it.
    """

    def __init__(self, dst, src, idx, t: str):
        lib = load()
        if lib is None:
            raise RuntimeError(f"ggml peer library not found at {library_path()}")
        why = unsupported(t, str(src.dtype).replace("torch.", ""))
        if why:
            raise ValueError(why)
        if src.dim() < 4:
            src = src.reshape((1,) * (4 - src.dim()) + tuple(src.shape))
        if idx.dim() < 3:
            idx = idx.reshape((1,) * (3 - idx.dim()) + tuple(idx.shape))
        d = _layout(t, dst)
        s = _layout(_DTYPE_TYPES[str(src.dtype).replace("torch.", "")], src)
        ish = [1] + list(idx.shape)
        ist = [idx.stride(0) * idx.shape[0] * idx.element_size()] + [x * idx.element_size() for x in idx.stride()]
        i = (GGML_TYPES[_DTYPE_TYPES[str(idx.dtype).replace("torch.", "")]],
             (ctypes.c_int64 * 4)(*ish[::-1]), (ctypes.c_size_t * 4)(*ist[::-1]))
        # ggml_set_rows' own asserts abort the process: check them here first
        dne, sne, ine = list(d[1]), list(s[1]), list(i[1])
        ok = (dne[0] == sne[0] and dne[2] == sne[2] and dne[3] == sne[3] and sne[1] == ine[0]
              and sne[2] % ine[1] == 0 and sne[3] % ine[2] == 0 and ine[3] == 1)
        # and ggml_is_contiguous_rows(dst / src): each row's values next to each other
        if not ok or dst.stride(-1) != 1 or src.stride(-1) != 1:
            raise ValueError(f"shapes ggml_set_rows refuses: dst ne {dne}, src ne {sne}, idx ne {ine}")
        self._keep = (dst, src, idx)
        self._h = lib.rsg_prepare(d[0], ctypes.c_void_p(dst.data_ptr()), d[1], d[2],
                                  s[0], ctypes.c_void_p(src.data_ptr()), s[1], s[2],
                                  i[0], ctypes.c_void_p(idx.data_ptr()), i[1], i[2])
        if not self._h:
            raise RuntimeError("ggml_init failed")
        self._lib = lib

    def __call__(self, stream=None) -> None:
        """Launch on ``stream`` (a torch stream; default: torch's current stream)."""
        import torch

        st = stream if stream is not None else torch.cuda.current_stream()
        rc = self._lib.rsg_launch(self._h, ctypes.c_void_p(st.cuda_stream))
        if rc != 0:
            raise RuntimeError(f"ggml set_rows launch failed: cudaError {rc}")

    def close(self) -> None:
        if getattr(self, "_h", None):
            self._lib.rsg_free(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _bytes(a):
    """A torch tensor's rows as uint8 (a view: bfloat16 / float16 / float32 / uint8 rows)."""
    import torch

    x = a.reshape(-1, a.shape[-1])
    return x if x.dtype == torch.uint8 else x.view(torch.uint8)


def differing_rows(a, b) -> int:
    """Rows whose bytes differ between two same-shaped torch tensors (compared on the device)."""
    return int((_bytes(a) != _bytes(b)).any(dim=1).sum().item())


def first_difference(a, b) -> dict:
    """Where two same-shaped tensors first differ: row, how many bytes of it, the first byte."""
    x = _bytes(a).cpu().numpy()
    y = _bytes(b).cpu().numpy()
    rows = np.flatnonzero((x != y).any(axis=1))
    if rows.size == 0:
        return {}
    r = int(rows[0])
    cols = np.flatnonzero(x[r] != y[r])
    return dict(row=r, bytes=int(cols.size), first_byte=int(cols[0]), ggml=int(x[r, cols[0]]),
                rocsample=int(y[r, cols[0]]))
