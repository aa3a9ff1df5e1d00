"""Output files are never half-written: write to a temporary file beside, then rename."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator

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


@contextlib.contextmanager
def atomic_output(path: str | None, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary stream for `path` (stdout when None or '-') that appears only when complete,
    with permissions `mode` (else those of the file it replaces, or 0644).

    A symlink is followed, so the file it points to is replaced, as a plain write would
    do. A path that is a device or a pipe (/dev/stdout, a FIFO) cannot be replaced by
    renaming and is written straight through. Failing to write is an InputError; on any
    error the temporary file is removed and an existing file at `path` is left as it was.
    """
    if path is None or path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = os.path.realpath(path)
    try:
        existing = os.stat(target).st_mode
    except OSError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing):
        raise InputError(path, "output is a directory")
    if existing is not None and not stat.S_ISREG(existing):
        with _writing(path), open(target, "wb") as fh:
            yield fh
        return
    try:
        fd, tmp = new_temporary(os.path.dirname(target), ".tmp")
    except OSError as e:
        raise InputError(path, f"cannot create output: {e.strerror or e}") from None
    try:
        with _writing(path):
            with os.fdopen(fd, "wb") as fh:
                yield fh
            if mode is None:
                mode = stat.S_IMODE(existing) if existing is not None else NEW_FILE_MODE
            os.chmod(tmp, mode)
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _writing(path: str) -> Iterator[None]:
    """An OSError while writing (disk full, I/O error, rename refused) names the output."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        raise InputError(path, f"cannot write output: {e.strerror or e}") from None


def write_atomically(path: str | None, data: bytes, mode: int | None = None) -> None:
    with atomic_output(path, mode) as fh:
        fh.write(data)
