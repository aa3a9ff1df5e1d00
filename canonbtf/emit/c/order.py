"""Where each definition goes in the header: what must come before it, and the order.

A definition needs before it what it holds by value (a struct's embedded structs, through
anonymous members and arrays), every typedef it names, and, for a typedef used by value,
what that typedef holds by value; a struct or union it reaches only through a pointer or a
prototype needs just a forward declaration. The order is the smallest by placement key
that respects these needs, so a definition's place depends on it and its needs only.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ...btf import format as f
from ...btf.model import Type
from ...spec import kinds as spec
from .spell import VALUE, is_builtin_typedef

# What a mentioned definition asks of the order (see `dependencies`).
_COMPOSITE, _TYPEDEF, _BUILTIN, _OTHER = range(4)


def _is_linkage(types: list[Type | None], t: Type, ptr_size: int) -> bool:
    """A struct or union of at most two pointers and nothing else (list_head, hlist_node,
    callback_head): the leaves other structs embed most, placed before all other structs."""
    if t.size_or_type > 2 * ptr_size:
        return False
    for member in t.items:
        held = types[member[1]]
        if held is None or held.kind != f.PTR:
            return False
    return True


@dataclass
class Placement:
    """Dependencies and order of the definitions `defs` of one header, from what each
    mentions (`refs`: (id, VALUE or REF) per definition, as spelled), the by-value
    relation of all types, and the canonical `rank` of each definition."""

    types: list[Type | None]
    names: list[str]
    first_id: int
    by_value: list[tuple[int, ...]]
    ptr_size: int
    defs: list[int]
    refs: dict[int, list[tuple[int, int]]]
    rank: dict[int, int]
    _complete: dict[int, list[int]] = field(default_factory=dict, init=False)
    _role: dict[int, int] = field(default_factory=dict, init=False)

    def complete_deps(self, tid: int) -> list[int]:
        """Own definitions that must come before a by-value use of typedef `tid`: what it
        holds by value, through anonymous structs and unions, up to named types."""
        cached = self._complete.get(tid)
        if cached is not None:
            return cached
        self._complete[tid] = []
        out: list[int] = []
        types = self.types
        names = self.names
        by_value = self.by_value
        first = self.first_id
        stack = list(by_value[tid])
        while stack:
            r = stack.pop()
            kind = types[r].kind
            if kind == f.TYPEDEF:
                if r >= first and not is_builtin_typedef(kind, names[r]):
                    out.append(r)
                out.extend(self.complete_deps(r))
            elif names[r] and (kind in spec.TAGGED or kind == f.FWD):
                if r >= first:
                    out.append(r)
            else:
                stack.extend(by_value[r])
        self._complete[tid] = out
        return out

    def dependencies(self, d: int) -> tuple[set[int], list[int]]:
        """(definitions needed before d, struct/union tags d needs declared)."""
        first = self.first_id
        role = self._role
        before: set[int] = set()
        declared: list[int] = []
        for r, mode in self.refs[d]:
            if r < first:
                continue
            what = role.get(r)
            if what is None:
                what = self._role_of(r)
            if what == _COMPOSITE:
                if mode == VALUE:
                    before.add(r)
                elif r != d:
                    declared.append(r)
            elif what == _OTHER:
                before.add(r)
            else:
                if what == _TYPEDEF:
                    before.add(r)
                if mode == VALUE:
                    before.update(self.complete_deps(r))
        before.discard(d)
        return before, declared

    def _role_of(self, tid: int) -> int:
        kind = self.types[tid].kind
        if kind == f.STRUCT or kind == f.UNION:
            what = _COMPOSITE
        elif kind == f.TYPEDEF:
            what = _BUILTIN if is_builtin_typedef(kind, self.names[tid]) else _TYPEDEF
        else:
            what = _OTHER
        self._role[tid] = what
        return what

    def order(self) -> tuple[list[int], list[int]]:
        """(definitions in header order, tags that need a forward declaration).

        The smallest order by placement key that puts every definition after the ones it
        needs (Kahn's algorithm with a heap); see `_placement_keys`.
        """
        defs = self.defs
        needs: dict[int, set[int]] = {}
        declared_needs: dict[int, list[int]] = {}
        users: dict[int, list[int]] = {d: [] for d in defs}
        for d in defs:
            needs[d], declared_needs[d] = self.dependencies(d)
            for dep in needs[d]:
                users[dep].append(d)
        key = self._placement_keys(needs, users)
        by_key = {k: d for d, k in key.items()}
        waiting = {d: len(needs[d]) for d in defs}
        ready = [key[d] for d in defs if waiting[d] == 0]
        heapq.heapify(ready)
        done: set[int] = set()
        sequence: list[int] = []
        forward: dict[int, None] = {}
        while len(sequence) < len(defs):
            if not ready:
                # A cycle of by-value uses (impossible in C): break it at the smallest key.
                heapq.heappush(ready, min(key[d] for d in defs if d not in done))
            d = by_key[heapq.heappop(ready)]
            if d in done:
                continue
            done.add(d)
            sequence.append(d)
            for tag in declared_needs[d]:
                if tag not in done:
                    forward[tag] = None
            for user in users[d]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    heapq.heappush(ready, key[user])
        return sequence, list(forward)

    def _placement_keys(self, needs: dict[int, set[int]],
                        users: dict[int, list[int]]) -> dict[int, int]:
        """(class, band, canonical rank) of each definition, packed into one integer.

        Class 0 holds enums and forward declarations, 1 typedefs, 2 structs and unions.
        Linkage structs (one or two pointers and nothing else: list_head, hlist_node,
        callback_head) are band 0, so a struct that starts to embed one need not move
        behind it. For the others, the depth is the length of the longest chain of structs
        embedded by value, and the band is 1 + half of it, rounded down. Within a class and
        band the canonical key decides, so most of what a struct embeds sorts before it
        anyway, and a struct that gains an embedded leaf usually stays in its band and in
        its place. All of it is computed from the type and what it depends on.
        """
        types = self.types
        composite = (f.STRUCT, f.UNION)
        level: dict[int, int] = {}
        waiting = {d: len(deps) for d, deps in needs.items()}
        queue = [d for d, n in waiting.items() if n == 0]
        while queue:
            d = queue.pop()
            if types[d].kind in composite:
                level[d] = 1 + max((level[x] for x in needs[d] if types[x].kind in composite),
                                   default=-1)
            for user in users[d]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    queue.append(user)
        rank = self.rank
        keys = {}
        for d in self.defs:
            kind = types[d].kind
            if kind in composite:
                band = 0 if _is_linkage(types, types[d], self.ptr_size) \
                    else 1 + level.get(d, 0) // 2
                group = (2 << 16) + band
            else:
                group = (1 if kind == f.TYPEDEF else 0) << 16
            keys[d] = (group << 32) + rank[d]
        return keys
