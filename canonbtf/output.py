"""Output files are never half-written: write to a temporary file beside, then rename."""

from __future__ import annotations

import os
import stat
import sys

from .errors import InputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import BinaryIO

TEMP_PREFIX = ".canonbtf-"
NEW_FILE_MODE = 0o644


def refuse_overwriting_input(out_path: str, in_paths: list[str | None]) -> None:
    """An output that would replace one of the inputs is an error (the input would be lost).

    Compared by device and inode, so a symlink or a hard link to an input counts as it.
    """
    if not os.path.exists(out_path):
        return
    for in_path in in_paths:
        if in_path and os.path.exists(in_path) and os.path.samefile(out_path, in_path):
            raise InputError(out_path, "output file is also an input; refusing to overwrite it")


def new_temporary(directory: str, suffix: str) -> tuple[int, str]:
    """A new file in `directory` named TEMP_PREFIX...`suffix`, open for writing: made as
    tempfile.mkstemp makes one (O_EXCL, mode 0600), whose import (random, shutil, bz2,
    lzma) was about 15 ms of every kernel module's run."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        path = os.path.join(directory, f"{TEMP_PREFIX}{os.urandom(8).hex()}{suffix}")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:  # 64 random bits: the next name is free
            continue


class atomic_output:  # noqa: N801 - used as a function: `with atomic_output(path) as fh:`
    """A binary stream for `path` (stdout when None or '-') that appears only when complete,
    with permissions `mode` (else those of the file it replaces, or 0644).

    A symlink is followed, so the file it points to is replaced, as a plain write would
    do. A path that is a device or a pipe (/dev/stdout, a FIFO) cannot be replaced by
    renaming and is written straight through. Failing to write is an InputError; on any
    error the temporary file is removed and an existing file at `path` is left as it was.
    A class, not a contextlib.contextmanager: see gcpause.paused_gc.
    """

    __slots__ = ("path", "mode", "target", "existing", "tmp", "fh")

    def __init__(self, path: str | None, mode: int | None = None):
        self.path, self.mode = path, mode
        self.tmp = self.fh = None

    def __enter__(self) -> BinaryIO:
        path = self.path
        if path is None or path == "-":
            return sys.stdout.buffer
        self.target = target = os.path.realpath(path)
        try:
            self.existing = existing = os.stat(target).st_mode
        except OSError:
            self.existing = existing = None
        if existing is not None and stat.S_ISDIR(existing):
            raise InputError(path, "output is a directory")
        if existing is not None and not stat.S_ISREG(existing):
            try:
                self.fh = open(target, "wb")  # noqa: SIM115 - closed by __exit__
            except OSError as e:
                raise _write_error(path, e) from None
            return self.fh
        try:
            fd, self.tmp = new_temporary(os.path.dirname(target), ".tmp")
        except OSError as e:
            raise InputError(path, f"cannot create output: {e.strerror or e}") from None
        self.fh = os.fdopen(fd, "wb")
        return self.fh

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if self.fh is None:  # stdout
            if error is None:
                sys.stdout.buffer.flush()
            return
        try:
            self.fh.close()
            if error is None and self.tmp is not None:
                mode = self.mode
                if mode is None:
                    existing = self.existing
                    mode = stat.S_IMODE(existing) if existing is not None else NEW_FILE_MODE
                os.chmod(self.tmp, mode)
                os.replace(self.tmp, self.target)
                self.tmp = None
        except OSError as e:
            if error is None:
                error = e
        finally:
            if self.tmp is not None:
                try:
                    os.unlink(self.tmp)
                except OSError:
                    pass
        if isinstance(error, OSError) and not isinstance(error, BrokenPipeError):
            raise _write_error(self.path, error) from None
        if error is not None and kind is None:
            raise error  # a broken pipe closing the file


def _write_error(path: str, error: OSError) -> InputError:
    """An OSError while writing (disk full, I/O error, rename refused) names the output."""
    return InputError(path, f"cannot write output: {error.strerror or error}")


def write_atomically(path: str | None, data: bytes, mode: int | None = None) -> None:
    with atomic_output(path, mode) as fh:
        fh.write(data)
