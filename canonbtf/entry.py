"""The process entry points (console scripts, `python -m canonbtf`).

`cli.main` and `pahole_front.main` are also library calls (the tests run them in
process), so what only a process exiting should do happens here: once the job is done,
a Ctrl-C that arrives while the interpreter shuts down is ignored instead of printing a
KeyboardInterrupt traceback after the output is complete; and what the job leaves is
frozen out of the collector, whose collections at exit would walk it all (0.01 s of a
diff of two kernels).
"""

from __future__ import annotations

import gc
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
    sys.exit(status)


def canonbtf() -> None:
    with paused_gc():  # imports make no garbage worth a collection
        from .cli import main

    _exit_with(main)


def canonbtf_pahole() -> None:
    from .pahole.front import main

    _exit_with(main)
