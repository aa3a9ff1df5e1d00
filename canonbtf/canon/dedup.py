"""Dedup: the quotient of the type graph by structural equivalence (bisimulation).

Types whose final forward rank is equal are structurally identical and merge into one.
The quotient is unique, so it depends neither on input order nor on how the input was
split into pieces. On top of it, forward declarations resolve to the single distinct full
definition of their name, and the graph is refined again until nothing changes.
For split BTF the base takes part: a module type identical to a base type becomes that
base type (the base itself is never changed). VARs merge only inside identical DATASECs.
"""

from __future__ import annotations

from ..btf import format as f
from ..btf.model import Btf, Type
from .order import forward_partition
from .refine import Partition


def deduplicate(btf: Btf) -> Btf:
    """`btf` with structurally identical own types merged; ids are not yet canonical."""
    first = btf.first_id
    all_types = btf.all_types()
    nodes = list(range(1, btf.last_id + 1))
    resolved: dict[int, int] = {}

    def edges_of(node: int) -> tuple:
        refs = all_types[node].refs()
        if resolved and node >= first:
            return tuple([resolved.get(ref, ref) for ref in refs])
        return tuple(refs)

    while True:
        partition = forward_partition(btf, nodes, edges_of, "kind", 1)
        declarations = _resolve_declarations(btf, partition, all_types, first)
        if not declarations:
            break
        resolved.update(declarations)
        nodes = [n for n in nodes if n not in declarations]
    merged = _merge_map(partition, all_types, first)
    for fwd, target in resolved.items():
        merged[fwd] = merged.get(target, target)
    return _quotient(btf, merged)


def _merge_map(partition: Partition, all_types: list, first: int) -> dict[int, int]:
    """Own id -> id of the type it merges into (the lowest base id of its block if the
    block has base types, else the block's lowest own id).

    A VAR merges only as an entry of a DATASEC that merges: two identical sections are
    one section, but two variables of one name and type in different places are not.
    """
    merged: dict[int, int] = {}
    for start in partition.block_end:
        members = partition.members(start)
        kind = all_types[members[0]].kind
        if kind == f.VAR:
            continue
        into = min(members)
        for m in members:
            if m != into and m >= first:
                merged[m] = into
                if kind == f.DATASEC:
                    for (var, _, _), (into_var, _, _) in zip(all_types[m].items,
                                                             all_types[into].items):
                        if var != into_var and var >= first:
                            merged[var] = into_var
    return merged


def _resolve_declarations(
    btf: Btf, partition: Partition, all_types: list, first: int
) -> dict[int, int]:
    """Own FWDs and enum forward declarations (vlen 0) whose name has exactly one distinct
    full definition of the matching kind: declaration id -> a definition's id."""
    definitions: dict[tuple[str, int], set[int]] = {}
    for n in partition.order:
        t = all_types[n]
        kind = t.kind
        if kind == f.STRUCT or kind == f.UNION:
            key = (btf.name(t.name_off), f.UNION if kind == f.UNION else f.STRUCT)
        elif (kind == f.ENUM or kind == f.ENUM64) and t.items:
            key = (btf.name(t.name_off), f.ENUM)
        else:
            continue
        if key[0]:
            definitions.setdefault(key, set()).add(partition.rank[n])
    start_to_node = {partition.rank[n]: n for n in reversed(partition.order)}
    resolved: dict[int, int] = {}
    for n in partition.order:
        if n < first:
            continue
        t: Type = all_types[n]
        if t.kind == f.FWD:
            key = (btf.name(t.name_off), f.UNION if t.kflag else f.STRUCT)
        elif (t.kind == f.ENUM or t.kind == f.ENUM64) and not t.items:
            key = (btf.name(t.name_off), f.ENUM)
        else:
            continue
        blocks = definitions.get(key)
        if blocks is not None and len(blocks) == 1:
            resolved[n] = start_to_node[next(iter(blocks))]
    return resolved


def _quotient(btf: Btf, merged: dict[int, int]) -> Btf:
    """`btf` without the merged own types, references redirected to what they merged into."""
    first = btf.first_id
    kept = [n for n in range(first, btf.last_id + 1) if n not in merged]
    new_id = list(range(btf.last_id + 1))
    for pos, old in enumerate(kept, first):
        new_id[old] = pos
    for old, into in merged.items():
        while into in merged:
            into = merged[into]
        new_id[old] = new_id[into]
    types = [btf.types[old - first].remap(new_id) for old in kept]
    return Btf(types, btf.strings, btf.base, btf.byteorder, btf.header_tail, btf.layout)
