"""The one error type every layer raises for input it cannot use.

The CLI turns it into a single line on stderr and exit status 2, so the message must name
the file and what is wrong with it (with a byte offset or type id where one helps).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import BinaryIO


class InputError(Exception):
    """Input that cannot be used as it is: missing, malformed, or unsupported."""

    def __init__(self, path: str | None, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class opened_input:  # noqa: N801 - used as a function: `with opened_input(path) as fh:`
    """`path` open for reading; what the system says against it, opening or reading, is an
    InputError. A class, not a contextlib.contextmanager: see gcpause.paused_gc."""

    __slots__ = ("path", "file")

    def __init__(self, path: str):
        self.path = path

    def __enter__(self) -> BinaryIO:
        try:
            self.file = open(self.path, "rb")  # noqa: SIM115 - closed by __exit__
        except OSError as e:
            raise _input_error(self.path, e) from None
        return self.file

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        try:
            self.file.close()
        except OSError as e:
            error = error or e
        if isinstance(error, OSError):
            raise _input_error(self.path, error) from None


def _input_error(path: str, error: OSError) -> InputError:
    if isinstance(error, FileNotFoundError):
        return InputError(path, "no such file")
    if isinstance(error, IsADirectoryError):
        return InputError(path, "is a directory")
    return InputError(path, error.strerror or str(error))
