"""Output files are never half-written: write to a temporary file beside, then rename."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

from .errors import InputError


def refuse_overwriting_input(out_path: str, in_paths: list[str]) -> None:
    """An output that would replace one of the inputs is an error (the input would be lost)."""
    if not os.path.exists(out_path):
        return
    for in_path in in_paths:
        if in_path and os.path.exists(in_path) and os.path.samefile(out_path, in_path):
            raise InputError(out_path, "output file is also an input; refusing to overwrite it")


@contextlib.contextmanager
def atomic_output(path: str | None) -> Iterator[BinaryIO]:
    """A binary stream for `path` (stdout when None or '-') that appears only when complete."""
    if path is None or path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".canonbtf-", suffix=".tmp", dir=directory)
    except OSError as e:
        raise InputError(path, f"cannot create output: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomically(path: str | None, data: bytes) -> None:
    with atomic_output(path) as fh:
        fh.write(data)
