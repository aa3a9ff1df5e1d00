"""Writing BTF: the inverse of the reader, byte for byte, in either byte order."""

from __future__ import annotations

import struct
import sys

from .. import u32
from ..spec import kinds as spec
from . import accel
from . import format as f
from .model import Btf, Type


def type_words(btf: Btf) -> memoryview:
    """The type section of `btf` as 32-bit words in host order (a `u32.view`).

    A record holding a value no 32-bit word can, or a field of the wrong shape (an
    encoder given corrupt input, a hand-built record) is a ValueError naming the type."""
    return u32.view(_section(btf))


def section_words(btf: Btf) -> bytes | None:
    """`type_words` as bytes, without a copy of words the reader kept; None where a record
    holds what no word can (the compiled parts then leave `btf` to the reference)."""
    try:
        return _section(btf)
    except ValueError:
        return None


def _section(btf: Btf) -> bytes:
    if btf.packed is not None:
        return btf.packed.words
    packed = accel.packed_words(btf.types)  # None: the Python path names the record
    if packed is not None:
        return packed
    from array import array  # the pure path's: u32.py says why not at the top

    try:
        return array("I", _words(btf.types)).tobytes()
    except (OverflowError, TypeError):
        raise ValueError(_bad_record(btf)) from None


def _bad_record(btf: Btf) -> str:
    for type_id, t in btf.own():
        try:
            name = repr(btf.name(t.name_off))
        except (AttributeError, KeyError, TypeError):  # the name offset is itself bad
            name = f"name offset {t.name_off!r}"
        where = f"type {type_id} ({f.kind_name(t.kind)} {name})"
        try:
            bad = [w for w in _words([t]) if not 0 <= w <= 0xFFFFFFFF]
        except TypeError:
            return (f"{where} has extra {t.extra!r} and items {list(t.items)!r}, "
                    "not the shape its kind has")
        if bad:
            return f"{where} holds {bad[0]}, which does not fit a 32-bit word"
    return "a value does not fit a 32-bit word"


def _words(types: list[Type]) -> list[int]:
    words: list[int] = []
    append = words.append
    extend = words.extend
    fixed = spec.FIXED_WORDS
    # kinds whose fixed part is a tuple of words (ARRAY's), the rest one plain value
    spread = frozenset(row.number for row in spec.ROWS if row.extra is not None)
    for t in types:
        kind = t.kind
        items = t.items
        vlen = t.extra if kind == f.FUNC else len(items)
        append(t.name_off)
        append((t.kflag << 31) | (kind << 24) | vlen)
        append(t.size_or_type)
        if kind in fixed:
            extra = t.extra
            if kind in spread:
                extend(extra)
            else:
                append(extra & 0xFFFFFFFF)
        if items:
            if kind == f.ENUM64:
                for name, value in items:
                    extend((name, value & 0xFFFFFFFF, value >> 32))
            else:
                for item in items:
                    extend(item)
    return words


def write(btf: Btf, byteorder: str | None = None) -> bytes:
    """Serialize `btf`: header, type section, string section, then any layout section."""
    byteorder = byteorder or btf.byteorder
    type_sec = _section(btf)
    if (byteorder == "<") != (sys.byteorder == "little"):
        type_sec = u32.in_host_order(type_sec, byteorder).tobytes()
    str_sec = btf.strings.data()
    hdr_len = f.HEADER_LEN + len(btf.header_tail)
    header = f.header_struct(byteorder).pack(
        f.MAGIC, f.VERSION, 0, hdr_len, 0, len(type_sec), len(type_sec), len(str_sec)
    )
    tail = btf.header_tail
    if len(tail) >= 8:
        layout_fields = struct.pack(f"{byteorder}II",
                                    len(type_sec) + len(str_sec) if btf.layout else 0,
                                    len(btf.layout))
        tail = layout_fields + tail[8:]
    return header + tail + type_sec + str_sec + btf.layout
