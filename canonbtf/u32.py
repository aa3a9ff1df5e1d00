"""Arrays of u32s in host order, without the `array` module.

Importing `array` imports `collections` (the module registers its type as a
MutableSequence when it loads): 8.3 M instructions, 6 % of a small kernel module's whole
`-J` run. The compiled parts take and give u32s as buffers; these are the two directions:
ints packed into bytes, and bytes read as a sequence of ints (a memoryview of format "I",
which the C takes as it takes an array('I')). Words in the other byte order, which only
the pure path and foreign files meet, go through `array` (`in_host_order`), imported then.
"""

from __future__ import annotations

import struct
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from array import array
    from collections.abc import Iterable


def pack(values: Iterable[int]) -> bytes:
    """`values` as host-order u32s, as array("I", values).tobytes() gives them;
    OverflowError where one is not an int from 0 to 2**32 - 1."""
    if isinstance(values, (list, tuple)):
        seq = values
    elif is_view(values):
        return values.tobytes()
    else:
        seq = list(values)
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


def in_host_order(raw: bytes, byteorder: str) -> array:
    """The u32s of `raw` as an array('I') in host order, `raw` being in `byteorder` ("<"
    or ">"); host-order words given the other order come back in it (a swap is its own
    inverse)."""
    from array import array

    words = array("I")
    words.frombytes(raw)
    if (byteorder == "<") != (sys.byteorder == "little"):
        words.byteswap()
    return words
