"""The one error type every layer raises for input it cannot use.

The CLI turns it into a single line on stderr and exit status 2, so the message must name
the file and what is wrong with it (with a byte offset or type id where one helps).
"""

from __future__ import annotations

import contextlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO


class InputError(Exception):
    """Input that cannot be used as it is: missing, malformed, or unsupported."""

    def __init__(self, path: str | None, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


@contextlib.contextmanager
def opened_input(path: str) -> Iterator[BinaryIO]:
    """`path` open for reading; what the system says against it is an InputError."""
    try:
        with open(path, "rb") as fh:
            yield fh
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory") from None
    except OSError as e:
        raise InputError(path, e.strerror or str(e)) from None
