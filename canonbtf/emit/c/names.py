"""The header's canonical key of each definition and the names that need a `___N` suffix.

The key is (name, kind rank, tie-break): only definitions that share a name and a kind
rank need the tie-break, which comes from what they are (`_break_ties`), never from ids.
Same-name definitions take `___2`, `___3` in key order.
"""

from __future__ import annotations

from ...btf import format as f
from ...spec import kinds as spec

# Rank of each defining kind in the key, after the name: the tie-break between a struct and
# a typedef of the same name (different C namespaces, so both keep the plain name).
_KIND_RANK = {f.ENUM: 0, f.ENUM64: 0, f.FWD: 1, f.STRUCT: 2, f.UNION: 2, f.TYPEDEF: 3}
# The kind in a type's `info` byte (the top byte of its info word; the kind_flag is bit 7).
KIND_MASK = 0x7F
# The key without its tie-break is (name, kind rank, struct or union for a FWD), spelled as
# one string, name + this suffix by info byte: names hold no NUL, so it sorts as the tuple
# would, and sorting strings is a third of sorting tuples (a hot path: 10 k definitions).
_KEY_SUFFIX = tuple(
    f"\0{_KIND_RANK[info & KIND_MASK]}{info >> 7 if info & KIND_MASK == f.FWD else 0}"
    if info & KIND_MASK in _KIND_RANK else None for info in range(256))


def canonical_ranks(defs: list[int], info: bytes, names: list[str], text: dict[int, str],
                    refs: dict[int, list[tuple[int, int]]]) -> dict[int, int]:
    """Position of each definition in the canonical key order, from its text with plain
    names and the references it makes (`info`, `names`: per type id)."""
    groups: dict[str, list[int]] = {}
    suffix = _KEY_SUFFIX
    for d in defs:
        key = names[d] + suffix[info[d]]
        members = groups.get(key)
        if members is None:
            groups[key] = [d]
        else:
            members.append(d)
    keys = sorted(groups)
    shared = [groups[key] for key in keys if len(groups[key]) > 1]
    position = _break_ties(shared, info, names, text, refs) if shared else {}
    ordered: list[int] = []
    for key in keys:
        members = groups[key]
        if len(members) > 1:  # _break_ties leaves no two members of a group alike
            members.sort(key=position.__getitem__)
        ordered.extend(members)
    return {d: i for i, d in enumerate(ordered)}


def _break_ties(groups: list[list[int]], info: bytes, names: list[str], text: dict[int, str],
                refs: dict[int, list[tuple[int, int]]]) -> dict[int, int]:
    """Positions within `groups` of same-key definitions (in key order), from what they
    are; no two members of a group share one.

    Definitions of a group are told apart by their text with plain names, by the keys
    of the named types they mention and by the keys of the definitions that mention
    them, refined until stable (keys inside the groups being these positions). Where
    members are still alike, the first one is set apart and the refinement runs
    again: alike members look the same from everywhere in the header, so whichever
    is set apart, the text comes out the same.
    """
    position = {d: 0 for members in groups for d in members}
    referrers: dict[int, list[int]] = {}
    for d, mentioned in refs.items():
        for r, _ in mentioned:
            if r in position and r != d:
                referrers.setdefault(r, []).append(d)
    set_apart: dict[int, int] = {}
    unmarked = len(position)

    def token(r: int) -> tuple:
        return (names[r], info[r] & KIND_MASK, position.get(r, 0))

    def signature(d: int) -> tuple:
        return (text[d], [token(r) for r, _ in refs[d]],
                sorted(token(u) for u in referrers.get(d, ())), set_apart.get(d, unmarked))

    def refine() -> bool:
        changed = False
        for members in groups:
            signatures = {d: signature(d) for d in members}
            members.sort(key=signatures.__getitem__)
            pos = 0
            for i, d in enumerate(members):
                if i and signatures[d] != signatures[members[i - 1]]:
                    pos = i
                if position[d] != pos:
                    position[d] = pos
                    changed = True
        return changed

    while True:
        for _ in range(len(position)):
            if not refine():
                break
        alike = next((members[i] for members in groups for i in range(1, len(members))
                      if position[members[i]] == position[members[i - 1]]), None)
        if alike is None:
            return position
        set_apart[alike] = len(set_apart)


class NameClaims:
    """How often each name is claimed so far, per C namespace: tags (struct, union, enum)
    and identifiers (typedefs, enumerators). A module's claims follow all of its base's."""

    def __init__(self, base: NameClaims | None = None):
        self.tags: dict[str, int] = dict(base.tags) if base is not None else {}
        self.idents: dict[str, int] = dict(base.idents) if base is not None else {}

    def claim(self, ordered: list[int], info: bytes, names: list[str],
              enumerators: dict[int, list[str]], display: dict[int, str]
              ) -> dict[int, dict[int, str]]:
        """Claim the names of definitions `ordered` (in canonical order): `___N` names go
        into `display`; returns the suffixes of enumerators, by definition and occurrence.
        An enum claims its tag when it has enumerators (else it is only declared)."""
        tag_count = self.tags
        ident_count = self.idents
        enumerator_suffix: dict[int, dict[int, str]] = {}
        for d in ordered:
            kind = info[d] & KIND_MASK
            name = names[d]
            printed = enumerators[d]
            if kind == f.TYPEDEF or kind == f.STRUCT or kind == f.UNION or (
                    kind in spec.TAGGED and name and printed):
                counts = ident_count if kind == f.TYPEDEF else tag_count
                n = counts.get(name, 0) + 1
                counts[name] = n
                if n > 1:
                    display[d] = f"{name}___{n}"
            if not printed:
                continue
            suffixes = {}
            for i, enumerator in enumerate(printed):
                n = ident_count.get(enumerator, 0) + 1
                ident_count[enumerator] = n
                if n > 1:
                    suffixes[i] = f"___{n}"
            if suffixes:
                enumerator_suffix[d] = suffixes
        return enumerator_suffix
