"""Whether the compiled parts (C extensions built by `pip install .`) are used.

Each compiled part has a pure-Python reference that gives the same bytes. Each package
with C asks here through its one accel module, which alone decides whether C applies
to an input and calls it: btf/accel.py (reader, writer), check/accel.py (the validator's
findings, worded by the same table), canon/accel.py (the canonical order, the dedup's
first partition), emit/accel.py (the raw dump), emit/c/accel.py (the C header's hot
parts), diff/accel.py (plan, pairing, whole report); the DWARF encoder's is
dwarf/core.py. All are used when built, on CPython, unless CANONBTF_PURE is set to
anything but 0; PyPy and machines without a compiler get the pure path."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import ModuleType

PURE_ENV = "CANONBTF_PURE"
# Set (to anything but 0), every fallback from a compiled part to the reference prints a
# line on stderr: "canonbtf: fallback: PART: WHY" (tools/bench_all.py counts them).
FALLBACK_ENV = "CANONBTF_FALLBACKS"
# Fallbacks of this process by part: a compiled part that was used and declined the
# input, so the reference ran instead (never counted: not built, PyPy, CANONBTF_PURE).
class _Counts(dict):
    """A count by key, 0 for a key never counted: collections.Counter's part we use,
    without importing collections at every start (u32.py says what that costs)."""

    def __missing__(self, key: str) -> int:
        return 0


FALLBACKS: dict[str, int] = _Counts()


def pure_requested() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def compiled(name: str, marker: str) -> ModuleType | None:
    """The extension module `name` (e.g. "canonbtf._btf") if it is built, has
    `marker` and the pure path was not asked for; else None."""
    if pure_requested() or sys.implementation.name != "cpython":
        return None
    try:
        __import__(name)  # importlib's import_module, without importing importlib (2 %
    except ImportError:   # of a small kernel module's run, with warnings)
        return None
    module = sys.modules[name]
    return module if hasattr(module, marker) else None


def keep_freed_memory() -> None:
    """For a process that ends soon, canonbtf-pahole's: the C allocator keeps the blocks
    it frees for the next ones instead of returning them to the kernel and faulting new
    pages in (native/csrc/grow.h). Without the compiled part, nothing."""
    module = compiled("canonbtf._btf", "keep_freed_memory")
    if module is not None:
        module.keep_freed_memory()


def fell_back(part: str, why: str) -> None:
    """Counts a fallback of `part` to the reference; a line on stderr with FALLBACK_ENV.
    On a real kernel a fallback is a bug to fix: it costs the compiled part's speed."""
    FALLBACKS[part] += 1
    if os.environ.get(FALLBACK_ENV, "") not in ("", "0"):
        print(f"canonbtf: fallback: {part}: {why}", file=sys.stderr)


# What each compiled part is called in `canonbtf --version`: (module, marker, name).
PARTS = (("canonbtf.dwarf._core", "UnitEncoder", "DWARF encoder"),
         ("canonbtf._btf", "order", "type order"))


def active_core() -> str:
    """What `canonbtf --version` says about the implementation in use."""
    if pure_requested():
        return f"pure-Python core, {PURE_ENV} set"
    built = [name for module, marker, name in PARTS if compiled(module, marker) is not None]
    if not built:
        return "pure-Python core"
    if len(built) == len(PARTS):
        return "compiled core"
    return f"compiled {', '.join(built)}; the rest in pure Python"
