"""Holding off Python's cyclic garbage collector during bulk work.

Reading or describing 100k types makes hundreds of thousands of small acyclic tuples and
lists; left on, the collector rescans them over and over (measured: about 40% of the
parse time and a third of the diff time).

Only on CPython: PyPy's collector is generational and cheap on such garbage, and
disabling it stops its freeing altogether (an encode of the 6.1 kernel under PyPy 7.3 took
19 s of system time for page faults and 59.6 s in all, 36.1 s with the collector left on).
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    if sys.implementation.name != "cpython":
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
