"""Renumbering: a new Btf whose types come in a given order, references and strings rewritten.

The string section is rebuilt from the ordered types (each type's name, then its member,
parameter or enumerator names, first occurrence wins), so it too depends only on the types.
Split BTF reuses the base's strings, as libbpf and pahole do.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..btf.model import Btf
from ..btf.strings import StringTable


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
    str_start = btf.strings.start
    names: list[str] = []
    seen: set[int] = set()
    for old in order:
        for off in own[old - first].name_offsets():
            if off not in seen:
                seen.add(off)
                names.append(btf.name(off))
    new_name: dict[int, int] = {}
    if base is None:
        table, offset_of = StringTable.build(names)
        for off in seen:
            new_name[off] = offset_of[btf.name(off)]
    else:
        own_names = [n for n in names if base.strings.offset_of(n) is None]
        table, offset_of = StringTable.build(own_names, str_start)
        for off in seen:
            name = btf.name(off)
            base_off = base.strings.offset_of(name)
            new_name[off] = base_off if base_off is not None else offset_of[name]
    types = [own[old - first].remap(new_id, new_name) for old in order]
    return Btf(types, table, base, btf.byteorder, btf.header_tail, btf.layout)
