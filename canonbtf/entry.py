"""The process entry points (console scripts, `python -m canonbtf`).

`cli.main` and `pahole_front.main` are also library calls (the tests run them in
process), so what only a process exiting should do happens here: once the job is done,
a Ctrl-C that arrives while the interpreter shuts down is ignored instead of printing a
KeyboardInterrupt traceback after the output is complete; and what the job leaves is
frozen out of the collector, whose collections at exit would walk it all (0.01 s of a
diff of two kernels); and, when nothing is left to run at exit, the process ends without
tearing the interpreter down, which only frees memory the process gives back anyway.
"""

from __future__ import annotations

import gc
import os
import sys

from .gcpause import paused_gc

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable


def _exit_with(main: Callable[[], int]) -> None:
    status = None
    try:
        status = main()  # handles a Ctrl-C during the job itself (exit status 130)
        # _signal: the C functions themselves; `signal` wraps them in enums, whose import
        # was about 4 ms of every kernel module's run (CPython and PyPy both have it).
        import _signal

        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        if sys.implementation.name == "cpython":
            gc.freeze()
    except KeyboardInterrupt:
        if status is None:  # before main could catch it
            print("canonbtf: interrupted", file=sys.stderr)
            status = 130
    _exit_now(status)
    sys.exit(status)


def _exit_now(status: int | None) -> None:
    """os._exit(status) after flushing stdio, on CPython when no atexit callback and no
    other thread waits for the interpreter's end: its teardown was 3.8 M instructions
    (1 ms, 3 %) of a small kernel module's run. Otherwise, or when a flush fails (a
    closed pipe), this returns and sys.exit ends the process as Python always does."""
    import atexit

    if (sys.implementation.name != "cpython" or not isinstance(status, (int, type(None)))
            or atexit._ncallbacks()):
        return
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(status or 0)


def canonbtf() -> None:
    with paused_gc():  # imports make no garbage worth a collection
        from .cli import main

    _exit_with(main)


def canonbtf_pahole() -> None:
    from .native import keep_freed_memory
    from .pahole.front import main

    keep_freed_memory()  # a run per kernel module: short processes

    _exit_with(main)
