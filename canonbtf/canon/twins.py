"""Declarations resolved in context: libbpf's dedup, made order-independent.

A kernel that defines one struct name twice (two different `struct dma_chan` in the
generic 6.1 kernel) leaves the name's declarations unresolved: a declaration stands for a
definition only while its name has one (dedup.py). Then a type copied into several units
stays two types where one unit saw the definition and another only the declaration
(`struct spi_controller` with `struct dma_chan *` pointing at the definition in one copy
and at a FWD in the other). libbpf's btf__dedup merges such copies: inside its type
comparison a FWD equals a definition of its name, and the pairs it meets are merged too.

Here the same is decided on the whole set of types, so that nothing depends on ids or on
which copy comes first. Among the types that share an abstract key (dedup's first
partition: equal labels, references to named types equal by name) X is *below* Y when X
is Y with some definitions replaced by unresolved declarations of the same name, through
any depth of such types: the greatest such relation, found by removing pairs until it is
stable. A class merges into the greatest class above it when there is one (a single
most-defined twin; with two different definitions above it the class stays apart), and
the pairs a merge implies, edge by edge, merge with it unless some class would go two
ways.
"""

from __future__ import annotations


def declared_twins(shared: list[int], keys: list[int], rank: list[int], edges: list,
                   tokens: list, is_declaration: list[bool], stands_for: list[int]
                   ) -> dict[int, int]:
    """Class -> the class it merges into, for the classes (ranks) of the types in
    `shared` and the declarations they reach; empty when every name is resolved."""
    groups: dict[int, dict[int, int]] = {}
    for node in shared:
        groups.setdefault(keys[node], {}).setdefault(rank[node], node)
    node_of: dict[int, int] = {}
    above: dict[int, set[int]] = {}  # class -> the classes it may be below (itself too)
    for group in groups.values():
        if len(group) > 1:
            node_of.update(group)
            for r in group:
                above[r] = set(group)
    if not above:
        return {}

    def cls(s: int) -> int:
        return rank[stands_for[s] or s]

    def open_declaration(sx: int, sy: int) -> bool:
        """sx is an unresolved declaration of the name sy defines."""
        return bool(is_declaration[sx] and not stands_for[sx] and not is_declaration[sy]
                    and tokens[sx] and tokens[sx] == tokens[sy])  # a token is truthy

    def below(x: int, y: int) -> bool:
        for sx, sy in zip(edges[x], edges[y]):
            cx, cy = cls(sx) if sx else 0, cls(sy) if sy else 0
            if cx == cy or (sx and sy and open_declaration(sx, sy)):
                continue
            if cx not in above or cy not in above[cx]:
                return False
        return True

    changed = True
    while changed:
        changed = False
        for r, ups in above.items():
            x = node_of[r]
            gone = [u for u in ups if u != r and not below(x, node_of[u])]
            if gone:
                ups.difference_update(gone)
                changed = True
    targets: dict[int, set[int]] = {}
    work = []
    for r, ups in above.items():
        if len(ups) > 1:
            top = [y for y in ups if all(y in above[z] for z in ups)]
            if len(top) == 1 and top[0] != r:
                work.append((r, top[0]))
    seen = set()
    while work:
        pair = work.pop()
        if pair in seen:
            continue
        seen.add(pair)
        r, y = pair
        targets.setdefault(r, set()).add(y)
        for sx, sy in zip(edges[node_of[r]], edges[node_of[y]]):
            cx, cy = cls(sx) if sx else 0, cls(sy) if sy else 0
            if cx == cy:
                continue
            if open_declaration(sx, sy):
                targets.setdefault(cx, set()).add(cy)
            elif cx in above:
                work.append((cx, cy))
    return {r: next(iter(ys)) for r, ys in targets.items() if len(ys) == 1}
