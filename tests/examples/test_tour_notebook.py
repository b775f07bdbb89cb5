"""examples/tour.ipynb runs headless top to bottom and draws its figures (issue 7, item 3).

The tour is a CPU walkthrough: it runs on the ``cpu`` backend only and is skipped on the others.
"""

from __future__ import annotations

import base64
import io
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "tour.ipynb"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MIN_FIGURES = 4
MIN_PNG_BYTES = 5 * 1024
MIN_SIDE = 100  # pixels


def _outputs(nb, output_type=None):
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if output_type is None or out.get("output_type") == output_type:
                yield i, out


def test_tour_notebook_runs_and_draws(backend, tmp_path, monkeypatch):
    if backend.name != "cpu":
        pytest.skip(f"cpu-only: examples/tour.ipynb is a CPU tour: runs with --backend cpu, not {backend.name}")
    # imported here: the GPU suites' environments need not have the notebook tools
    import matplotlib.image
    import nbformat
    from ipykernel.kernelspec import write_kernel_spec
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    # The kernel runs this interpreter (a private "python3" spec found first through JUPYTER_PATH,
    # so no user-wide kernelspec can substitute another Python), sees the checkout, and runs on cpu.
    write_kernel_spec(tmp_path / "jupyter" / "kernels" / "python3")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("ROCSAMPLE_BACKEND", "cpu")
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}})
    try:
        client.execute(cwd=str(ROOT))
    except CellExecutionError as e:
        pytest.fail(f"a cell of {NOTEBOOK.name} raised:\n{e}", pytrace=False)

    errors = [f"cell {i}: {out.get('ename')}: {out.get('evalue')}" for i, out in _outputs(nb, "error")]
    assert not errors, "cells errored:\n" + "\n".join(errors)
    text = "".join(out.get("text", "") for _, out in _outputs(nb, "stream"))
    assert "backend: cpu" in text, f"the tour did not report running on cpu (interpreter {sys.executable})"

    pngs = [(i, out["data"]["image/png"]) for i, out in _outputs(nb) if "image/png" in out.get("data", {})]
    assert len(pngs) >= MIN_FIGURES, f"expected at least {MIN_FIGURES} image/png outputs, got {len(pngs)}"
    for i, b64 in pngs:
        raw = base64.b64decode(b64)
        assert raw.startswith(PNG_MAGIC), f"cell {i}: image/png output is not a PNG"
        assert len(raw) > MIN_PNG_BYTES, f"cell {i}: PNG of {len(raw)} bytes (want > {MIN_PNG_BYTES})"
        img = matplotlib.image.imread(io.BytesIO(raw), format="png")  # decodes the whole image
        h, w = img.shape[:2]
        assert h >= MIN_SIDE and w >= MIN_SIDE, f"cell {i}: PNG of {w}x{h} pixels"
        assert img.std() > 0, f"cell {i}: PNG is a single flat colour"
