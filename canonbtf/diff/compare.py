"""Facts compared: the details of a changed root, and the sorted report of entries."""

from __future__ import annotations

from .facts import _Facts
from .model import ADDED, CHANGED, FAMILIES, REMOVED, Detail, Entry, TypeChange


def _anon_title(facts: tuple) -> str:
    """Anonymous roots are shown by their first few members or enumerators."""
    shown = []
    for key, value in facts:
        if key[0] == "value":
            shown.append(key[2])
        elif key[0] == "member" and not any(c in key[1] for c in ".[-"):
            shown.append(f"{value[0]} {key[1]}")
    text = ", ".join(shown[:3]) + (", ..." if len(shown) > 3 else "")
    return "(anon) {" + text + "}"


def _member_value(value: tuple) -> dict:
    expr, bit_offset, bitfield = value
    return {"type": expr, "bit_offset": bit_offset, "bitfield_size": bitfield}


def _compare(old_facts: tuple, new_facts: tuple) -> list[Detail]:
    """Details for every fact that differs, in the order the types list them."""
    old = dict(old_facts)
    new = dict(new_facts)
    details: list[Detail] = []
    keys = [k for k, _ in old_facts] + [k for k, _ in new_facts if k not in old]
    moved_entries = []
    for key in keys:
        a = old.get(key)
        b = new.get(key)
        if a == b:
            continue
        what = key[0]
        if what == "member":
            path = key[1]
            if a is None:
                details.append(Detail("member_added", path, None, _member_value(b)))
            elif b is None:
                details.append(Detail("member_removed", path, _member_value(a), None))
            else:
                if a[0] != b[0]:
                    details.append(Detail("member_retyped", path, a[0], b[0]))
                if a[1] != b[1]:
                    details.append(Detail("member_moved", path, a[1], b[1]))
                if a[2] != b[2]:
                    details.append(Detail("bitfield_changed", path, a[2], b[2]))
        elif what == "value":
            path = f"{key[1]}.{key[2]}" if key[1] else key[2]
            change = ("value_added" if a is None else "value_removed" if b is None
                      else "value_changed")
            details.append(Detail(change, path, a, b))
        elif what == "param":
            index = key[1]
            if a is None:
                details.append(Detail("param_added", str(index), None,
                                      {"name": b[0], "type": b[1]}))
            elif b is None:
                details.append(Detail("param_removed", str(index),
                                      {"name": a[0], "type": a[1]}, None))
            else:
                if a[0] != b[0]:
                    details.append(Detail("param_renamed", str(index), a[0], b[0]))
                if a[1] != b[1]:
                    details.append(Detail("param_retyped", f"{index}", a[1], b[1]))
        elif what == "entry":
            name = key[1]
            if a is None:
                details.append(Detail("var_added", name, None, {"offset": b[0], "size": b[1]}))
            elif b is None:
                details.append(Detail("var_removed", name, {"offset": a[0], "size": a[1]}, None))
            elif a[1] != b[1]:
                details.append(Detail("var_resized", name, {"offset": a[0], "size": a[1]},
                                      {"offset": b[0], "size": b[1]}))
            else:
                moved_entries.append(Detail("var_moved", name, a[0], b[0]))
        else:
            details.append(Detail(f"{what}_changed", "", a, b))
    return details + moved_entries


def _changes(old_side: _Facts, new_side: _Facts, entries: list[Entry]) -> list[TypeChange]:
    """The report: pairs whose facts differ, and what was added or removed, sorted."""
    changes: list[TypeChange] = []
    for family, name, ordinal, status, a, b in entries:
        shown = f"{name}#{ordinal}" if ordinal else name
        if status == "pair":
            if a.facts == b.facts:
                continue
            if not name:
                shown = _anon_title(b.facts)
            changes.append(TypeChange(family, shown, CHANGED,
                                      details=_compare(a.facts, b.facts)))
        elif status == REMOVED:
            if not name:
                shown = _anon_title(a.facts)
            changes.append(TypeChange(family, shown, REMOVED,
                                      old_brief=old_side.speller.brief(a.type_id)))
        else:
            if not name:
                shown = _anon_title(b.facts)
            changes.append(TypeChange(family, shown, ADDED,
                                      new_brief=new_side.speller.brief(b.type_id)))
    order = {family: n for n, family in enumerate(FAMILIES)}
    status_order = {REMOVED: 0, ADDED: 1, CHANGED: 2}
    changes.sort(key=lambda c: (order[c.family], status_order[c.status], c.name))
    return changes
