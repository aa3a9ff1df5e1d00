"""Holding off Python's cyclic garbage collector during bulk work.

Reading or describing 100k types makes hundreds of thousands of small acyclic tuples and
lists; left on, the collector rescans them over and over (measured: about 40% of the
parse time and a third of the diff time).

Only on CPython: PyPy's collector is generational and cheap on such garbage, and
disabling it stops its freeing altogether (an encode of the 6.1 kernel under PyPy 7.3 took
19 s of system time for page faults and 59.6 s in all, 36.1 s with the collector left on).
"""

from __future__ import annotations

import gc
import sys


class paused_gc:  # noqa: N801 - used as a function: `with paused_gc():`
    """The collector off inside the block, back as it was after. A class, not a
    contextlib.contextmanager: contextlib (with functools) was 2 % of a small kernel
    module's run, which imports this and nothing else that needs them."""

    __slots__ = ("was_enabled",)

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled() and sys.implementation.name == "cpython"
        if self.was_enabled:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()
