"""The one error type every layer raises for input it cannot use.

The CLI turns it into a single line on stderr and exit status 2, so the message must name
the file and what is wrong with it (with a byte offset or type id where one helps).
"""

from __future__ import annotations


class InputError(Exception):
    """Input that cannot be used as it is: missing, malformed, or unsupported."""

    def __init__(self, path: str | None, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
