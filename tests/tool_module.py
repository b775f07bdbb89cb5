"""The repository's tools (tools/*.py, which is no package) as modules, for the tests of them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_tool(rel: str):
    """The module of ``ROOT / rel`` (e.g. ``tools/gate_order.py``), executed afresh."""
    path = ROOT / rel
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
