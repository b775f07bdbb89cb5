"""``make demo``: the main job on the best available backend, checked against the reference.

Prints the backend and device, samples a batch with the full filter chain and greedily, checks
every row against the NumPy reference, writes q8_0 rows with set_rows and checks the bytes, and
times each step. Exits non-zero if any check fails.
"""

from __future__ import annotations

import importlib
import sys
import time

import numpy as np


def _timed(fn, sync, repeat: int = 5) -> float:
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - t0) / repeat


def main() -> int:
    import rocsample
    from rocsample.reference import sampling as ref_sampling
    from rocsample.reference import set_rows as ref_set_rows

    set_rows_mod = importlib.import_module("rocsample.set_rows")
    be = rocsample.get_backend()
    gpu = be.is_device and be.name != "sim"
    print(f"backend: {be.name}  device: {be.device_name()}  wavefront: {be.warp_size()}  "
          f"compute units: {be.compute_units()}")
    rng = np.random.default_rng(2026)
    n_rows, n_vocab = (64, 151936) if gpu else ((2, 96) if be.name == "sim" else (16, 32000))
    logits = (rng.standard_normal((n_rows, n_vocab)) * 2).astype(np.float32)
    seeds = np.arange(n_rows, dtype=np.int64) + 1234
    pos = np.full(n_rows, 7, np.int64)
    chain = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
    x = be.as_array(logits, "logits")
    ok = True

    def host(a):
        return be.to_host(a) if be.is_device else np.asarray(a)

    def sync():
        if be.is_device:
            be.synchronize()

    tok = host(rocsample.sample(x, seed=seeds, position=pos, **chain))
    want, _, _, boundary = ref_sampling.sample_with_margin(logits, seed=seeds, position=pos, **chain)
    bad = np.flatnonzero((tok != want) & ~boundary)
    ok &= bad.size == 0
    print(f"sample {n_rows} x {n_vocab} (T=0.8, top_k=50, top_p=0.9, min_p=0.05): "
          f"{n_rows - bad.size}/{n_rows} rows equal the reference "
          f"({int(boundary.sum())} on a rounding boundary)  {'OK' if bad.size == 0 else 'FAIL'}")
    g = host(rocsample.argmax(x))
    g_ok = bool((g == ref_sampling.argmax(logits)).all())
    ok &= g_ok
    print(f"argmax {n_rows} x {n_vocab}: {'OK' if g_ok else 'FAIL'}")

    ne0, ring, n_new = (4096, 1024, 256) if gpu else ((64, 16, 4) if be.name == "sim" else (256, 64, 16))
    src = rng.standard_normal((1, 1, n_new, ne0)).astype(np.float32)
    idx = rng.choice(ring, n_new, replace=False).astype(np.int64).reshape(1, 1, n_new)
    row_bytes = ne0 // 32 * 34
    dst0 = rng.integers(0, 256, (1, 1, ring, row_bytes), dtype=np.uint8)
    want_q = dst0.copy()
    ref_set_rows.set_rows(want_q, src, idx, dst_type="q8_0")
    d_dst = be.as_array(dst0.copy(), "dst")
    d_src, d_idx = be.as_array(src, "src"), be.as_array(idx, "idx")
    set_rows_mod.set_rows(d_dst, d_src, d_idx, dst_type="q8_0")
    q_ok = bool((host(d_dst) == want_q).all())
    ok &= q_ok
    print(f"set_rows q8_0 {n_new} rows x {ne0} into a {ring}-row cache: "
          f"{'bit-identical to ggml reference  OK' if q_ok else 'MISMATCH  FAIL'}")

    t_s = _timed(lambda: rocsample.sample(x, seed=seeds, position=pos, check=False, **chain), sync)
    t_g = _timed(lambda: rocsample.argmax(x, check=False), sync)
    t_q = _timed(lambda: set_rows_mod.set_rows(d_dst, d_src, d_idx, dst_type="q8_0"), sync)
    print(f"timings (host clock, one-off calls incl. launch): sample {t_s * 1e6:.0f} us, "
          f"argmax {t_g * 1e6:.0f} us, set_rows q8_0 {t_q * 1e6:.0f} us")
    print("demo:", "all checks OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
