"""The shuffler: the same types under random ids and a random string-table order.

Canonical output must not change under it: sort(shuffle(x)) == sort(x).
"""

from __future__ import annotations

import random

from canonbtf.btf.model import Btf
from canonbtf.btf.strings import StringTable


def shuffle(btf: Btf, seed: int) -> Btf:
    """Permute the own types' ids and the own strings' order; base ids stay as they are."""
    rng = random.Random(seed)
    first = btf.first_id
    n = len(btf.types)
    order = list(range(n))
    rng.shuffle(order)
    # order[new_pos] = old_pos; new_id[old_id] = first + new_pos
    total = first + n
    new_id = list(range(total))
    for new_pos, old_pos in enumerate(order):
        new_id[first + old_pos] = first + new_pos

    names = sorted({btf.name(off) for t in btf.types for off in t.name_offsets()
                    if off >= btf.strings.start} - {""})
    rng.shuffle(names)
    table, offsets = StringTable.build(names, btf.strings.start)

    new_name = {off: (off if off < btf.strings.start else offsets[btf.name(off)])
                for t in btf.types for off in t.name_offsets()}
    types = [btf.types[old_pos].remap(new_id, new_name) for old_pos in order]
    return Btf(types, table, btf.base, btf.byteorder)
