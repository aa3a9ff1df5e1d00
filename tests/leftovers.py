"""Dedup leftovers made on purpose: real BTF plus copies of some of its types.

pahole's parallel dedup leaves equivalent copies behind (two `struct intel_pinctrl`, each
pointing at its own `struct intel_pinctrl_context`). This makes the same pattern from a
corpus blob, so that a diff test meets hundreds of repeated names without the 6.1
generic-flavour kernel.
"""

from __future__ import annotations

import random

from canonbtf.btf import format as f
from canonbtf.btf.model import Btf


def with_leftovers(btf: Btf, seed: int, roots: int = 300, depth: int = 3) -> Btf:
    """`btf` with copies appended: for `roots` named structs chosen at random, the types
    each reaches within `depth` references, the copies referring to each other and, past
    that, to the originals. Every copy is equivalent to its original."""
    rng = random.Random(seed)
    types = btf.all_types()
    first = btf.first_id
    structs = [n for n in range(first, btf.last_id + 1)
               if types[n].kind == f.STRUCT and types[n].name_off]
    chosen: list[int] = []
    seen: set[int] = set()
    for root in sorted(rng.sample(structs, min(roots, len(structs)))):
        frontier = [root]
        for _ in range(depth + 1):
            reached = []
            for node in frontier:
                if node >= first and node not in seen:
                    seen.add(node)
                    chosen.append(node)
                    reached.extend(types[node].refs())
            frontier = reached
    new_id = list(range(btf.last_id + 1))
    for position, old in enumerate(chosen, btf.last_id + 1):
        new_id[old] = position
    copies = [types[old].remap(new_id) for old in chosen]
    return Btf(btf.types + copies, btf.strings, btf.base, btf.byteorder)
