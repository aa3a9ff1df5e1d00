"""Whether the compiled parts (C extensions built by `pip install .`) are used.

Each compiled part has a pure-Python reference that gives the same bytes: the DWARF
core (dwarf/core.py) and the canonical order (canon/compiled.py). Both are used when
built, on CPython, unless CANONBTF_PURE is set to anything but 0; PyPy and machines
without a compiler get the pure path."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

PURE_ENV = "CANONBTF_PURE"


def pure_requested() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def compiled(name: str, marker: str) -> ModuleType | None:
    """The extension module `name` (e.g. "canonbtf.canon._order") if it is built, has
    `marker` and the pure path was not asked for; else None."""
    if pure_requested() or sys.implementation.name != "cpython":
        return None
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    return module if hasattr(module, marker) else None
