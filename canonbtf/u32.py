"""Arrays of u32s in host order, without the `array` module.

Importing `array` imports `collections` (the module registers its type as a
MutableSequence when it loads): 8.3 M instructions, 6 % of a small kernel module's whole
`-J` run. The compiled parts take and give u32s as buffers; these are the two directions:
ints packed into bytes, and bytes read as a sequence of ints (a memoryview of format "I",
which the C takes as it takes an array('I')).
"""

from __future__ import annotations

import struct

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable


def pack(values: Iterable[int]) -> bytes:
    """`values` as host-order u32s, as array("I", values).tobytes() gives them;
    OverflowError where one is not an int from 0 to 2**32 - 1."""
    if is_view(values):
        return values.tobytes()
    seq = values if isinstance(values, (list, tuple)) else list(values)
    try:
        return struct.pack(f"{len(seq)}I", *seq)
    except struct.error as e:
        raise OverflowError(f"not a u32: {e}") from None


def view(raw: bytes) -> memoryview:
    """`raw` (host-order u32s, or a buffer of them such as an array('I')) as a sequence
    of ints, without a copy."""
    values = memoryview(raw)
    return values if values.format == "I" else values.cast("I")


def is_view(values: object) -> bool:
    """Whether `values` holds u32s in a buffer the C reads in place: a `view`, or an
    array('I') of the pure path's."""
    try:
        return memoryview(values).format == "I"
    except TypeError:
        return False
