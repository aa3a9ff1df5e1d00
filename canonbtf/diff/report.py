"""The whole report made by the compiled part (diff/csrc/diffreport.c), with Python
pairing the duplicated names and anonymous roots as the reference pairs them."""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from ..btf.model import Btf
from ..gcpause import paused_gc
from . import accel
from .matching import _anonymous_entries
from .model import ADDED, FAMILIES, REMOVED
from .pairing import Lookup, Root, pair_named, settle_duplicates
from .plan import _chain_words, _Decoded, _Names


def compiled_report(old: Btf, new: Btf, json: bool = False) -> tuple[bytes, int] | None:
    """The report `render_text` (or with `json`, `render_json`) writes, as its latin-1
    bytes, and how many types differ, made by the compiled part (diff/csrc/diffreport.c) with
    Python pairing the duplicated names and anonymous roots; None where the report is left
    to `diff_btfs` (the pure path; input whose spelling needs the reference's
    placeholders)."""
    if not accel.wanted("diff_report"):
        return None
    chains = [_chain_words(old), _chain_words(new)]
    if None in chains:
        accel.fell_back("diff report", "types not packed as read")
        return None
    sides = [(words, strings, btf.first_id) for (words, strings), btf in zip(chains, (old, new))]
    pairing = _CompiledPairing([_Lookup(btf, chain) for btf, chain in
                                zip((old, new), chains)])
    with paused_gc():
        return accel.report(*sides, pairing, json)


class _Lookup:
    """What pairing reads of one side for the compiled report: the types of the roots it
    is given, decoded when first asked for (`_Decoded`), and names (`_Names`)."""

    def __init__(self, btf: Btf, chain: tuple[bytes, list]):
        self.btf, self.chain = btf, chain
        self.names = _Names(chain[1]).__getitem__

    def lookup(self, roots: Iterable[Root]) -> Lookup:
        need = array("I", sorted(root.type_id for root in roots)).tobytes()
        return Lookup(_Decoded(self.btf, self.chain, need), self.names,
                      self.chain)


class _CompiledPairing:
    """compiled_report's `pairing`: duplicated names paired and numbered (`settle_duplicates`,
    `pair_named`) and anonymous roots paired (`pair_anonymous`) from the facts without tags
    the compiled part gives, as `_diff` pairs them; answered as ids, (ordinal, status,
    old id, new id) with status 0 a pair, 1 removed, 2 added (0 where a side has none)."""

    def __init__(self, sides: list[_Lookup]):
        self.sides = sides

    def __call__(self, duplicates: list, old_anon: list, new_anon: list) -> tuple[list, list]:
        groups: tuple[dict, dict] = ({}, {})
        for family, name, *both in duplicates:
            key = (FAMILIES[family], name)
            for side, made in zip(groups, both):
                if made:
                    side[key] = [_made_root(key[0], name, *root) for root in made]
        if duplicates:
            settle_duplicates(*(side.lookup(_all(group)) for side, group in
                                zip(self.sides, groups)), *groups)
        named = []
        for family, name, *_ in duplicates:
            key = (FAMILIES[family], name)
            pairs, removed, added = pair_named(groups[0].get(key, []), groups[1].get(key, []))
            named.append(_numbered_ids(pairs, removed, added))
        anonymous = _anonymous_entries(
            [_made_root(FAMILIES[family], "", type_id, *rest)
             for type_id, family, *rest in old_anon],
            [_made_root(FAMILIES[family], "", type_id, *rest)
             for type_id, family, *rest in new_anon])
        return named, [_id_entry(0, *entry[3:]) for entry in anonymous]


def _made_root(family: str, name: str, type_id: int, facts: tuple, spells_duplicate: bool
               ) -> Root:
    root = Root(type_id, family, name, facts)
    root.spells_duplicate = spells_duplicate
    return root


def _all(groups: dict) -> Iterable[Root]:
    return (root for group in groups.values() for root in group)


def _numbered_ids(pairs: list, removed: list, added: list) -> list:
    """The entries of a duplicated name's pairing, numbered as `_named_entries` numbers
    them: pairs, then removed, then added."""
    entries = [("pair", a, b) for a, b in pairs]
    entries += [(REMOVED, a, None) for a in removed] + [(ADDED, None, b) for b in added]
    return [_id_entry(n, *entry) for n, entry in enumerate(entries, 1)]


_STATUS_CODE = {"pair": 0, REMOVED: 1, ADDED: 2}


def _id_entry(ordinal: int, status: str, a: Root | None, b: Root | None) -> tuple:
    """An entry as the compiled report reads it: (ordinal, status code, old id, new id)."""
    return ordinal, _STATUS_CODE[status], a.type_id if a else 0, b.type_id if b else 0
