"""Roots found on each side and matched: by family and name, duplicated names and
anonymous roots paired by pairing.py, as entries (family, name, #N, status, old, new)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ..btf import format as f
from ..spec import kinds as spec
from .facts import _Facts
from .model import _FAMILY_OF_KIND, ADDED, REMOVED, Entry
from .pairing import Root, pair_anonymous, pair_named


def _named_roots(side: _Facts, plan: tuple[list[int], list[int]] | None
                 ) -> tuple[dict[tuple[str, str], list[Root]], list[int], list[int]]:
    """Named roots grouped by (family, name), decl tag ids, anonymous aggregate ids: of
    every own type, or of the `_Plan`'s (roots, anonymous roots)."""
    named: dict[tuple[str, str], list[Root]] = defaultdict(list)
    decl_tags: list[int] = []
    anon_candidates: list[int] = []
    types = side.types
    name = side.name
    family_of = _FAMILY_OF_KIND
    ids: Iterable[int] = range(side.own_first, len(types)) if plan is None else plan[0]
    for type_id in ids:
        t = types[type_id]
        kind = t.kind
        family = family_of.get(kind)
        if family is None:
            continue
        if kind == f.DECL_TAG:
            decl_tags.append(type_id)
        elif t.name_off:
            text = name(t.name_off)
            named[(family, text)].append(Root(type_id, family, text))
        elif kind in spec.TAGGED:
            anon_candidates.append(type_id)
    return named, decl_tags, anon_candidates if plan is None else plan[1]


def _fill_facts(side: _Facts, root: Root) -> None:
    root.facts, root.spells_duplicate = side.of(root.type_id)


def _anonymous_roots(side: _Facts, candidates: list[int]) -> list[Root]:
    """Anonymous aggregates no named root describes: first those no other such aggregate
    holds, then any still undescribed (only cycles of anonymous types remain by then)."""
    left = [type_id for type_id in candidates if type_id not in side.expanded]
    held: set[int] = set()
    for type_id in left:
        t = side.types[type_id]
        if t.kind in (f.STRUCT, f.UNION):
            for _, m_type, _ in t.items:
                end = side.anon_end(m_type)
                if end is not None and end[0] != type_id:
                    held.add(end[0])
    roots: list[Root] = []
    made: set[int] = set()
    for type_id in [i for i in left if i not in held] + left:
        if type_id in made or (type_id in held and type_id in side.expanded):
            continue
        made.add(type_id)
        root = Root(type_id, _FAMILY_OF_KIND[side.types[type_id].kind], "")
        _fill_facts(side, root)
        roots.append(root)
    return roots


def _named_entries(old_side: _Facts, new_side: _Facts, old_named: dict, new_named: dict,
                   dup_keys: set) -> list[Entry]:
    """(family, name, #N or 0, status, old root, new root) for every named root that may
    differ; duplicated names get their tags on both sides, a pair sharing one."""
    entries: list[Entry] = []
    # Order does not matter here: each name's pairing stands alone, and the report is
    # sorted at the end.
    for key in [*old_named, *(k for k in new_named if k not in old_named)]:
        family, name = key
        olds = old_named.get(key, [])
        news = new_named.get(key, [])
        if len(olds) == 1 and len(news) == 1:
            a, b = olds[0], news[0]
            # Most types did not change: skip them here already, unless duplicate tags,
            # known only after pairing, could still tell them apart.
            if a.facts != b.facts or a.spells_duplicate or b.spells_duplicate:
                entries.append((family, name, 0, "pair", a, b))
            continue
        tagged = key in dup_keys
        if not tagged and not (olds and news):
            # Only added or removed (most of a kernel upgrade's changes): in id order, as
            # pair_named leaves roots of equal sort keys.
            entries += [(family, name, 0, REMOVED, a, None) for a in olds]
            entries += [(family, name, 0, ADDED, None, b) for b in news]
            continue
        pairs, removed, added = pair_named(olds, news)
        ordinal = 0
        for a, b in pairs:
            ordinal += 1
            if tagged:
                old_side.speller.tags[a.type_id] = new_side.speller.tags[b.type_id] = ordinal
            entries.append((family, name, ordinal if tagged else 0, "pair", a, b))
        for a in removed:
            ordinal += 1
            if tagged:
                old_side.speller.tags[a.type_id] = ordinal
            entries.append((family, name, ordinal if tagged else 0, REMOVED, a, None))
        for b in added:
            ordinal += 1
            if tagged:
                new_side.speller.tags[b.type_id] = ordinal
            entries.append((family, name, ordinal if tagged else 0, ADDED, None, b))
    return entries


def _anonymous_entries(old_anon: list[Root], new_anon: list[Root]) -> list[Entry]:
    anon_by_family: dict[str, tuple[list[Root], list[Root]]] = defaultdict(lambda: ([], []))
    for root in old_anon:
        anon_by_family[root.family][0].append(root)
    for root in new_anon:
        anon_by_family[root.family][1].append(root)
    entries: list[Entry] = []
    for family in sorted(anon_by_family):
        olds, news = anon_by_family[family]
        pairs, removed, added = pair_anonymous(olds, news)
        for a, b in pairs:
            entries.append((family, "", 0, "pair", a, b))
        for a in removed:
            entries.append((family, "", 0, REMOVED, a, None))
        for b in added:
            entries.append((family, "", 0, ADDED, None, b))
    return entries


def _refresh_tagged_facts(old_side: _Facts, new_side: _Facts, entries: Iterable) -> None:
    """Recompute the facts of roots that spell a duplicated name, now with its tag."""
    old_side.forget()
    new_side.forget()
    for _, _, _, _, a, b in entries:
        for side, root in ((old_side, a), (new_side, b)):
            if root is not None and root.spells_duplicate:
                root.facts = side.of(root.type_id)[0]
