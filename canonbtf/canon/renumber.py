"""Renumbering: a new Btf whose types come in a given order, references and strings rewritten.

The string section is rebuilt from the ordered types (each type's name, then its member,
parameter or enumerator names, first occurrence wins), so it too depends only on the types.
Split BTF reuses the base's strings, as libbpf and pahole do.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..btf import format as f
from ..btf.model import Btf
from ..btf.strings import StringTable

NAMED_ITEMS = frozenset({f.STRUCT, f.UNION, f.ENUM, f.ENUM64, f.FUNC_PROTO})


def renumber(btf: Btf, order: Sequence[int], merged: dict[int, int] | None = None) -> Btf:
    """`btf`'s own types `order` (old ids), in that order; other own ids must be in `merged`
    (old id -> the old id of the type they merge into, which may be a base id)."""
    first = btf.first_id
    new_id = list(range(btf.last_id + 1))
    for pos, old in enumerate(order, first):
        new_id[old] = pos
    if merged:
        for old, into in merged.items():
            new_id[old] = new_id[into]
    own = btf.types
    base = btf.base
    start = btf.strings.start
    names = btf.names
    base_offset = base.strings.offset_of if base is not None else None
    offset_of: dict[str, int] = {"": 0}
    new_name: dict[int, int] = {}
    chunks = [b"\0"] if base is None else []
    pos = start + len(chunks)
    for old in order:
        t = own[old - first]
        offs = [t.name_off, *[item[0] for item in t.items]] if t.kind in NAMED_ITEMS \
            else (t.name_off,)
        for off in offs:
            if off in new_name:
                continue
            name = names(off)
            new_off = offset_of.get(name)
            if new_off is None and base_offset is not None:
                new_off = base_offset(name)
            if new_off is None:
                new_off = pos
                raw = name.encode("latin-1") + b"\0"
                chunks.append(raw)
                pos += len(raw)
            offset_of[name] = new_off
            new_name[off] = new_off
    table = StringTable(b"".join(chunks), start)
    types = [own[old - first].remap(new_id, new_name) for old in order]
    return Btf(types, table, base, btf.byteorder, btf.header_tail, btf.layout)
