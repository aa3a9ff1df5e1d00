"""What changed between two BTFs, type by type: the matching and the change model.

Nothing here looks at type ids except to follow references. Each side is described by
*facts*: every named type (and every anonymous aggregate no named type contains) becomes
a root with a list of (key, value) pairs, where a reference to another type is written as
its C spelling ("struct sk_buff *", "int (*)(void *)"). Anonymous structs, unions and enums
are described inside the named type that holds them, under the member path C uses to
reach them (`u.lru`, `stats.rx[].bytes`). Comparing facts is then id-free: a type whose
content is identical, however renumbered, gives the same facts, and a change to
`struct page` is reported once, on `struct page`, not on every type pointing at it.

Roots are matched by kind family and name. Where a name is used more than once (duplicate
static functions, two different `struct irq_info`, dedup leftovers), the candidates are
paired by what the types are (`pairing.py`): the same type first, then the best overall
match; such roots are shown as `name#N` and references to them carry the same tag, so
swapping which duplicate a member points to is reported. Anonymous roots (top-level
`enum { ... }`) are paired by the member or enumerator names they share.

The parts, one idea each: model.py (what is reported), speller.py and facts.py (each
root described), matching.py and pairing.py (roots matched), compare.py (facts compared),
text.py (the report written); plan.py and report.py use the compiled part (csrc/) where it
is built. This module runs them.
"""

from __future__ import annotations

from ..btf.model import Btf
from ..gcpause import paused_gc
from .compare import _changes
from .facts import _Facts
from .matching import (
    _anonymous_entries,
    _anonymous_roots,
    _fill_facts,
    _named_entries,
    _named_roots,
    _refresh_tagged_facts,
)
from .model import DiffResult
from .pairing import Lookup, Root, settle_duplicates
from .plan import _Plan
from .report import compiled_report

__all__ = ["compiled_report", "diff_btfs"]


def diff_btfs(old: Btf, new: Btf) -> DiffResult:
    """Every added, removed and changed root between `old` and `new` (own types only,
    for split BTF; references into a base are compared by their C spelling)."""
    with paused_gc():
        return _diff(old, new)


def _diff(old: Btf, new: Btf) -> DiffResult:
    plan = _Plan(old, new)
    old_side = _Facts(old, plan.old_types, plan.old_names, plan.old_made)
    new_side = _Facts(new, plan.new_types, plan.new_names, plan.new_made)
    old_named, old_tags, old_anon_ids = _named_roots(old_side, plan.old)
    new_named, new_tags, new_anon_ids = _named_roots(new_side, plan.new)

    # Names used more than once on either side are tagged once the pairing is known.
    dup_keys = {key for key, group in old_named.items() if len(group) > 1}
    dup_keys |= {key for key, group in new_named.items() if len(group) > 1}
    old_dups = {key: old_named[key] for key in dup_keys if key in old_named}
    new_dups = {key: new_named[key] for key in dup_keys if key in new_named}
    for side, named, tag_ids, dups, spell in (
            (old_side, old_named, old_tags, old_dups, plan.old_spell),
            (new_side, new_named, new_tags, new_dups, plan.new_spell)):
        for group in dups.values():
            side.speller.dup_ids.update(root.type_id for root in group)
        for group in named.values():
            for root in group:
                if spell is None or spell[root.type_id]:
                    _fill_facts(side, root)
        for type_id in tag_ids:
            text = side.speller.decl_tag_name(side.types[type_id])
            named[("decl_tag", text)].append(Root(type_id, "decl_tag", text))
    # Anonymous roots are paired by their facts without tags, as duplicated names are.
    old_anon = _anonymous_roots(old_side, old_anon_ids)
    new_anon = _anonymous_roots(new_side, new_anon_ids)
    old_chain, new_chain = plan.chains or (None, None)
    settle_duplicates(Lookup(old_side.types, old_side.name, old_chain),
                      Lookup(new_side.types, new_side.name, new_chain), old_dups, new_dups)

    entries = _named_entries(old_side, new_side, old_named, new_named, dup_keys)
    entries += _anonymous_entries(old_anon, new_anon)
    if dup_keys:
        _refresh_tagged_facts(old_side, new_side, entries)
    return DiffResult(_changes(old_side, new_side, entries))
