"""Writing BTF: the inverse of the reader, byte for byte, in either byte order."""

from __future__ import annotations

import sys
from array import array

from . import format as f
from .model import Btf


def type_words(btf: Btf) -> array:
    """The type section of `btf` as 32-bit words in host order."""
    words: list[int] = []
    append = words.append
    extend = words.extend
    fixed = f.FIXED_WORDS
    for t in btf.types:
        kind = t.kind
        items = t.items
        vlen = t.extra if kind == f.FUNC else len(items)
        append(t.name_off)
        append((t.kflag << 31) | (kind << 24) | vlen)
        append(t.size_or_type)
        if kind in fixed:
            extra = t.extra
            if kind == f.ARRAY:
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
    return array("I", words)


def write(btf: Btf, byteorder: str | None = None) -> bytes:
    """Serialize `btf`: header, type section, string section, then any layout section."""
    byteorder = byteorder or btf.byteorder
    words = type_words(btf)
    if (byteorder == "<") != (sys.byteorder == "little"):
        words.byteswap()
    type_sec = words.tobytes()
    str_sec = btf.strings.data()
    hdr_len = f.HEADER_LEN + len(btf.header_tail)
    header = f.header_struct(byteorder).pack(
        f.MAGIC, f.VERSION, 0, hdr_len, 0, len(type_sec), len(type_sec), len(str_sec)
    )
    tail = btf.header_tail
    if len(tail) >= 8:
        layout_fields = array("I", [len(type_sec) + len(str_sec) if btf.layout else 0,
                                    len(btf.layout)])
        if (byteorder == "<") != (sys.byteorder == "little"):
            layout_fields.byteswap()
        tail = layout_fields.tobytes() + tail[8:]
    return header + tail + type_sec + str_sec + btf.layout
