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
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .. import native
from ..btf import format as f
from ..btf.declarator import MAX_CHAIN, ReferenceSpeller
from ..btf.model import Btf, Type
from ..btf.writer import section_words
from ..gcpause import paused_gc
from .pairing import Lookup, Root, Types, pair_anonymous, pair_named, settle_duplicates

# Families: the kinds a name is matched within, in report order.
FAMILIES = ("struct", "union", "enum", "typedef", "fwd", "func", "var", "datasec", "int",
            "float", "decl_tag")
_FAMILY_OF_KIND = {
    f.STRUCT: "struct", f.UNION: "union", f.ENUM: "enum", f.ENUM64: "enum", f.FWD: "fwd",
    f.TYPEDEF: "typedef", f.INT: "int", f.FLOAT: "float", f.FUNC: "func", f.VAR: "var",
    f.DATASEC: "datasec", f.DECL_TAG: "decl_tag",
}
_AGGREGATES = frozenset({f.STRUCT, f.UNION, f.ENUM, f.ENUM64})
_PASS_THROUGH = frozenset({f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG})

ADDED, REMOVED, CHANGED = "added", "removed", "changed"


@dataclass(frozen=True)
class Detail:
    """One difference inside a changed type.

    `change` names it (see docs in `canonbtf.diff.text`); `path` is the member path,
    parameter or enumerator it concerns ("" for the type itself); `old` and `new` are
    JSON-friendly values (None where that side has nothing).
    """

    change: str
    path: str
    old: object
    new: object


@dataclass
class TypeChange:
    """A root that was added, removed, or changed; `details` only for changes."""

    family: str
    name: str
    status: str
    old_brief: str | None = None
    new_brief: str | None = None
    details: list[Detail] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.family} {self.name}"


@dataclass
class DiffResult:
    changes: list[TypeChange]

    def __bool__(self) -> bool:
        return bool(self.changes)

    def counts(self) -> dict[str, dict[str, int]]:
        """{family: {"added": n, "removed": n, "changed": n}} for families with changes."""
        out: dict[str, dict[str, int]] = {}
        for c in self.changes:
            per = out.setdefault(c.family, {ADDED: 0, REMOVED: 0, CHANGED: 0})
            per[c.status] += 1
        return out

    def totals(self) -> dict[str, int]:
        total = {ADDED: 0, REMOVED: 0, CHANGED: 0}
        for c in self.changes:
            total[c.status] += 1
        return total


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


class _Speller(ReferenceSpeller):
    """How one BTF's type references read (btf/declarator.py), with duplicate tags: a
    reference to a type whose name is shared reads `struct irq_info#2`, and `spell` says
    whether a spelling names such a type (its facts may change once tags are known)."""

    def __init__(self, btf: Btf, types: Types | None = None,
                 names: Callable[[int], str] | None = None,
                 made: tuple[dict, dict] | None = None):
        """`made`: spellings and briefs made before (the plan's, `_Plan.made`) of types
        whose spelling depends on nothing but the types, kept when the others are
        forgotten."""
        super().__init__(btf, types, names)  # type: ignore[arg-type]
        self._spelled, self._briefs = made or ({}, {})
        self._expr.update(self._spelled)
        # Ids of named types whose name is shared (on either side) and their tags.
        self.dup_ids: set[int] = set()
        self.tags: dict[int, int] = {}
        self._touches_dup: set[int] = set()
        # Whether the spelling under way named a duplicated type so far.
        self._touched = False

    def spell(self, type_id: int) -> tuple[str, bool]:
        """The C spelling of a type reference, and whether it names a duplicated type."""
        text = self.expr(type_id)
        return text, type_id in self._touches_dup

    def forget(self) -> None:
        """Drop the spellings made before the duplicate tags were known."""
        self._expr.clear()
        self._expr.update(self._spelled)

    def label(self, type_id: int) -> str:
        """A named type as C names it, with its duplicate tag if it has one."""
        text = super().label(type_id)
        if type_id in self.dup_ids:
            self._touched = True
            tag = self.tags.get(type_id)
            if tag:
                text += f"#{tag}"
        return text

    def expr(self, type_id: int) -> str:
        text = self._expr.get(type_id)
        if text is not None:
            if type_id in self._touches_dup:
                self._touched = True
            return text
        outer = self._touched
        self._touched = False
        text = super().expr(type_id)
        if self._touched:
            self._touches_dup.add(type_id)
        self._touched = self._touched or outer
        return text

    def decl_tag_name(self, t: Type) -> str:
        """A decl tag has no identity of its own: it is its value and what it is on."""
        value = self.name(t.name_off)
        target_id = t.size_or_type
        target = self.types[target_id] if target_id else None
        if target is None:
            return f"{value} on void"
        family = _FAMILY_OF_KIND.get(target.kind, f.kind_name(target.kind).lower())
        if target.kind in (f.FUNC, f.VAR, f.TYPEDEF, f.INT, f.FLOAT):
            where = f"{family} {self.name(target.name_off)}"
        else:
            where = self.label(target_id)
        index = t.extra
        if index >= 0:
            where += f" {self._component(target, index)}"
        text = f"{value} on {where}"
        return ("attribute " if t.kflag else "") + text

    def _component(self, target: Type, index: int) -> str:
        if target.kind in (f.STRUCT, f.UNION) and index < len(target.items):
            return f"member {self.name(target.items[index][0]) or index}"
        if target.kind == f.FUNC and target.size_or_type:
            proto = self.types[target.size_or_type]
            if proto.kind == f.FUNC_PROTO and index < len(proto.items):
                return f"param {self.name(proto.items[index][0]) or index}"
        return f"component {index}"

    def brief(self, type_id: int) -> str:
        """A one-line description of an added or removed root."""
        made = self._briefs.get(type_id)
        if made is not None:
            return made
        t = self.types[type_id]
        kind = t.kind
        if kind == f.STRUCT or kind == f.UNION:
            return f"size {t.size_or_type}, {_count(len(t.items), 'member')}"
        if kind == f.ENUM or kind == f.ENUM64:
            return f"size {t.size_or_type}, {_count(len(t.items), 'value')}"
        if kind == f.TYPEDEF:
            return self.expr(t.size_or_type)
        if kind == f.FUNC:
            return self.signature(type_id)
        if kind == f.VAR:
            return self.decl(t.size_or_type, self.name(t.name_off))
        if kind == f.DATASEC:
            return f"size {t.size_or_type}, {_count(len(t.items), 'variable')}"
        if kind in (f.INT, f.FLOAT):
            return f"size {t.size_or_type}"
        if kind == f.FWD:
            return "union" if t.kflag else "struct"
        return ""

    def signature(self, func_id: int) -> str:
        t = self.types[func_id]
        proto = self.types[t.size_or_type] if t.size_or_type else None
        name = self.name(t.name_off)
        if proto is None or proto.kind != f.FUNC_PROTO:
            return f"{name}: {self.expr(t.size_or_type)}"
        params = []
        for p_name, p_type in proto.items:
            if not p_name and not p_type:
                params.append("...")
            else:
                params.append(self.decl(p_type, self.name(p_name)))
        return self.decl(proto.size_or_type, f"{name}({', '.join(params) or 'void'})")


class _Facts:
    """One BTF's roots described by facts (see the module docstring), spelled by `speller`;
    `of` says whether a root's facts name a duplicated type."""

    def __init__(self, btf: Btf, types: Types | None = None,
                 names: Callable[[int], str] | None = None,
                 made: tuple[dict, dict] | None = None):
        self.speller = _Speller(btf, types, names, made)
        self.types = self.speller.types
        self.name = self.speller.name
        self.own_first = btf.first_id
        self._protos: dict[int, tuple[tuple, bool]] = {}
        # Anonymous aggregates described inside some root.
        self.expanded: set[int] = set()
        # Whether the facts under way named a duplicated type so far.
        self._dup = False

    def of(self, type_id: int) -> tuple[tuple, bool]:
        """The root's facts as a tuple of (key, value), equal tuples meaning no change, and
        whether they name a duplicated type."""
        self._dup = False
        facts = self._facts(type_id)
        return facts, self._dup

    def forget(self) -> None:
        """Drop what was spelled before the duplicate tags were known."""
        self.speller.forget()
        self._protos.clear()

    def _expr(self, type_id: int) -> str:
        text, dup = self.speller.spell(type_id)
        if dup:
            self._dup = True
        return text

    def anon_end(self, type_id: int) -> tuple[int, str] | None:
        """The anonymous aggregate a reference leads to, through modifiers, arrays and
        pointers, with the path suffix the way leads through ("", "[]" or "->")."""
        suffix = ""
        depth = 0
        while type_id and depth <= MAX_CHAIN:
            t = self.types[type_id]
            kind = t.kind
            if kind in _PASS_THROUGH:
                type_id = t.size_or_type
            elif kind == f.ARRAY:
                suffix += "[]"
                type_id = t.extra[0]
            elif kind == f.PTR:
                suffix += "->"
                type_id = t.size_or_type
            elif kind in _AGGREGATES and not t.name_off:
                return type_id, suffix
            else:
                return None
            depth += 1
        return None

    # --- facts -------------------------------------------------------------------

    def _expand(self, type_id: int, prefix: str, base: int, out: list, seen: set[int]) -> None:
        """Facts for the inside of an anonymous aggregate, under member path `prefix`."""
        if type_id in seen:
            return
        self.expanded.add(type_id)
        t = self.types[type_id]
        if t.kind == f.ENUM or t.kind == f.ENUM64:
            self._values(t, prefix, out)
            return
        seen.add(type_id)
        self._members(t, prefix, base, out, seen)
        seen.discard(type_id)

    def _members(self, t: Type, prefix: str, base: int, out: list, seen: set[int]) -> None:
        name = self.name
        kflag = t.kflag
        for m_name, m_type, word in t.items:
            if kflag:
                bit_offset, bitfield = word & 0xFFFFFF, word >> 24
            else:
                bit_offset, bitfield = word, 0
            text = name(m_name)
            path = prefix + text
            if text:
                out.append((("member", path), (self._expr(m_type), base + bit_offset, bitfield)))
            end = self.anon_end(m_type)
            if end is None:
                continue
            anon, way = end
            if not way:
                self._expand(anon, path + "." if text else prefix, base + bit_offset, out, seen)
            else:
                self._expand(anon, _way_prefix(path if text else prefix + "(anon)", way), 0,
                             out, seen)

    def _values(self, t: Type, path: str, out: list) -> None:
        name = self.name
        where = path[:-1] if path.endswith(".") else path
        if t.kflag:
            bits = 32 if t.kind == f.ENUM else 64
            for v_name, value in t.items:
                out.append((("value", where, name(v_name)), _signed(value, bits)))
        else:
            for v_name, value in t.items:
                out.append((("value", where, name(v_name)), value))

    def _expand_reference(self, type_id: int, out: list) -> None:
        """Facts for an anonymous aggregate a typedef or variable is made of."""
        end = self.anon_end(type_id)
        if end is not None:
            anon, way = end
            self._expand(anon, _way_prefix("", way), 0, out, set())

    def _facts(self, type_id: int) -> tuple:
        t = self.types[type_id]
        kind = t.kind
        out: list = []
        if kind == f.STRUCT or kind == f.UNION:
            out.append((("size",), t.size_or_type))
            self._members(t, "", 0, out, {type_id})
        elif kind == f.ENUM or kind == f.ENUM64:
            out.append((("width",), "64-bit" if kind == f.ENUM64 else "32-bit"))
            out.append((("size",), t.size_or_type))
            out.append((("signed",), bool(t.kflag)))
            self._values(t, "", out)
        elif kind == f.FUNC:
            return ((("linkage",), _linkage(t.extra)),) + self._proto_facts(t.size_or_type)
        elif kind == f.TYPEDEF:
            out.append((("target",), self._expr(t.size_or_type)))
            self._expand_reference(t.size_or_type, out)
        elif kind == f.VAR:
            out.append((("type",), self._expr(t.size_or_type)))
            out.append((("linkage",), _linkage(t.extra)))
            self._expand_reference(t.size_or_type, out)
        elif kind == f.DATASEC:
            out.append((("size",), t.size_or_type))
            for v_type, v_off, v_size in t.items:
                target = self.types[v_type] if v_type else None
                v_name = self.name(target.name_off) if target is not None else ""
                out.append((("entry", v_name), (v_off, v_size)))
        elif kind == f.INT:
            word = t.extra
            out.append((("size",), t.size_or_type))
            out.append((("encoding",), _int_encoding(word >> 24)))
            out.append((("bits",), word & 0xFF))
            out.append((("bit_offset",), (word >> 16) & 0xFF))
        elif kind == f.FLOAT:
            out.append((("size",), t.size_or_type))
        elif kind == f.FWD:
            out.append((("fwd_kind",), "union" if t.kflag else "struct"))
        if kind in _AGGREGATES and len({key for key, _ in out}) != len(out):
            out = _unique_keys(out)
        return tuple(out)

    def _proto_facts(self, proto_id: int) -> tuple:
        """Return and parameter facts, shared by every function of one prototype."""
        cached = self._protos.get(proto_id)
        if cached is not None:
            if cached[1]:
                self._dup = True
            return cached[0]
        outer = self._dup
        self._dup = False
        out: list = []
        proto = self.types[proto_id] if proto_id else None
        if proto is None or proto.kind != f.FUNC_PROTO:
            out.append((("proto",), self._expr(proto_id)))
        else:
            out.append((("return",), self._expr(proto.size_or_type)))
            items = proto.items
            varargs = bool(items) and items[-1] == (0, 0)
            name = self.name
            expr = self._expr
            for index, (p_name, p_type) in enumerate(items[:-1] if varargs else items, 1):
                out.append((("param", index), (name(p_name), expr(p_type))))
            out.append((("varargs",), varargs))
        facts = tuple(out)
        self._protos[proto_id] = (facts, self._dup)
        self._dup = self._dup or outer
        return facts


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


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _way_prefix(path: str, way: str) -> str:
    """Member path prefix for what lies behind `way` ("[]", "->", ...) from `path`."""
    if way.endswith("->"):
        return path + way
    return path + way + "." if path or way else ""


def _linkage(value: int) -> str:
    return f.LINKAGE_NAMES[value] if value < len(f.LINKAGE_NAMES) else str(value)


def _int_encoding(bits: int) -> str:
    words = [text for flag, text in ((f.INT_SIGNED, "signed"), (f.INT_CHAR, "char"),
                                     (f.INT_BOOL, "bool")) if bits & flag]
    return "|".join(words) or "unsigned"


def _unique_keys(pairs: list) -> list:
    """Malformed BTF can repeat a member or enumerator name; keep every one, tagged."""
    seen: set = set()
    out = []
    for key, value in pairs:
        if key in seen:
            n = 2
            while key[:-1] + (f"{key[-1]}#{n}",) in seen:
                n += 1
            key = key[:-1] + (f"{key[-1]}#{n}",)
        seen.add(key)
        out.append((key, value))
    return out


# --- roots and matching ------------------------------------------------------------


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
        elif kind in _AGGREGATES:
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


# --- comparing facts ---------------------------------------------------------------


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


def diff_btfs(old: Btf, new: Btf) -> DiffResult:
    """Every added, removed and changed root between `old` and `new` (own types only,
    for split BTF; references into a base are compared by their C spelling)."""
    with paused_gc():
        return _diff(old, new)


Entry = tuple[str, str, int, str, "Root | None", "Root | None"]


def compiled_report(old: Btf, new: Btf, json: bool = False) -> tuple[bytes, int] | None:
    """The report `render_text` (or with `json`, `render_json`) writes, as its latin-1
    bytes, and how many types differ, made by the compiled part (diff/csrc/diffreport.c) with
    Python pairing the duplicated names and anonymous roots; None where the report is left
    to `diff_btfs` (the pure path; input whose spelling needs the reference's
    placeholders)."""
    compiled = native.compiled("canonbtf._btf", "diff_report")
    if compiled is None:
        return None
    chains = [_chain_words(old), _chain_words(new)]
    if None in chains:
        native.fell_back("diff report", "types not packed as read")
        return None
    sides = [(words, strings, btf.first_id) for (words, strings), btf in zip(chains, (old, new))]
    pairing = _CompiledPairing([_Lookup(btf, chain, compiled) for btf, chain in
                                zip((old, new), chains)])
    with paused_gc():
        made = compiled.diff_report(*sides, pairing, json)
    if made is None:
        native.fell_back("diff report", "diff_report declined")
    return made


class _Lookup:
    """What pairing reads of one side for the compiled report: the types of the roots it
    is given, decoded when first asked for (`_Decoded`), and names (`_Names`)."""

    def __init__(self, btf: Btf, chain: tuple[bytes, list], compiled):
        self.btf, self.chain, self.compiled = btf, chain, compiled
        self.names = _Names(chain[1]).__getitem__

    def lookup(self, roots: Iterable[Root]) -> Lookup:
        need = array("I", sorted(root.type_id for root in roots)).tobytes()
        return Lookup(_Decoded(self.btf, self.chain, need, self.compiled), self.names,
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


class _Plan:
    """Which roots to describe, from the compiled keys (diff/csrc/diffkeys.c), made before
    any type is decoded: a name with one root on each side whose keys say equal facts is
    left out, a root only added or removed is not spelled (its facts are never read), and
    only the types describing the rest reads are decoded (`_Decoded`); the references
    those types make, and the one-line descriptions of functions and variables, are
    spelled by the compiled part (`made`: ({id: C spelling}, {id: brief})) where the text
    depends on nothing but the types. The pure path (the reference) describes and spells
    every root."""

    def __init__(self, old: Btf, new: Btf):
        self.old = self.new = self.old_spell = self.new_spell = None
        self.old_types = self.new_types = self.old_names = self.new_names = None
        self.old_made = self.new_made = None
        self.chains: list | None = None
        compiled = native.compiled("canonbtf._btf", "diff_plan")
        if compiled is None:
            return
        chains = [_chain_words(old), _chain_words(new)]
        if None in chains:
            native.fell_back("diff plan", "types not packed as read")
            return
        self.chains = chains
        sides = [(words, strings, btf.first_id)
                 for (words, strings), btf in zip(chains, (old, new))]
        (old_roots, self.old_spell, old_anon, old_need, *old_texts), \
            (new_roots, self.new_spell, new_anon, new_need, *new_texts) = compiled.diff_plan(*sides)
        self.old = (_ids(old_roots), _ids(old_anon))
        self.new = (_ids(new_roots), _ids(new_anon))
        self.old_types = _Decoded(old, chains[0], old_need, compiled)
        self.new_types = _Decoded(new, chains[1], new_need, compiled)
        self.old_names = _Names(chains[0][1]).__getitem__
        self.new_names = _Names(chains[1][1]).__getitem__
        self.old_made = _made(old_need, old_roots, *old_texts)
        self.new_made = _made(new_need, new_roots, *new_texts)


class _Decoded(dict):
    """A BTF's types by id, only those `need` names decoded (all a plan's roots read but
    the duplicates' pairing, which may follow them past named types): anything else
    decodes the whole BTF, once. Unchanged types are most of a kernel, and their objects
    most of diff's memory."""

    def __init__(self, btf: Btf, chain: tuple[bytes, list], need: bytes, compiled):
        words, strings = chain
        super().__init__(zip(_ids(need), compiled.decode(words, 1, strings, Type, need)))
        self[0] = None
        self.btf = btf

    def __missing__(self, type_id: int) -> Type | None:
        every = self.btf.all_types()
        self.update(enumerate(every))
        return every[type_id]


class _Names(dict):
    """offset -> name, as `StringTable.get` reads it (latin-1, up to its NUL), each decoded
    when first read: the string table's index of every name was half of diff's memory at
    16 x the kernel, and the plan reads a few of them."""

    def __init__(self, sections: list[tuple[int, bytes]]):
        super().__init__()
        self.sections = sections[::-1]

    def __missing__(self, offset: int) -> str:
        for start, data in self.sections:
            if offset >= start:
                rel = offset - start
                if rel >= len(data):
                    break
                end = data.find(b"\0", rel)
                name = self[offset] = data[rel:end if end >= 0 else len(data)].decode("latin-1")
                return name
        raise KeyError(offset)


def _made(need: bytes, roots: bytes, spellings: list, briefs: list
          ) -> tuple[dict[int, str], dict[int, str]]:
    """({id: `ReferenceSpeller.expr(id)`} of the types read, {id: `_Speller.brief(id)`} of
    the roots) where the compiled part made them (no loop, no duplicated name, not nested
    too deep; briefs of functions and variables)."""
    return ({type_id: text for type_id, text in zip(_ids(need), spellings) if text is not None},
            {type_id: text for type_id, text in zip(_ids(roots), briefs) if text is not None})


def _ids(data: bytes) -> list[int]:
    return memoryview(data).cast("I").tolist()


def _chain_words(btf: Btf) -> tuple[bytes, list] | None:
    """The type sections of `btf` and its bases as one, from id 1, and their strings."""
    parts = []
    part: Btf | None = btf
    while part is not None:
        words = section_words(part)
        if words is None:
            return None
        parts.append(words)
        part = part.base
    return b"".join(reversed(parts)), btf.string_sections()


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


def _refresh_tagged_facts(old_side: _Facts, new_side: _Facts, entries: Iterable) -> None:
    """Recompute the facts of roots that spell a duplicated name, now with its tag."""
    old_side.forget()
    new_side.forget()
    for _, _, _, _, a, b in entries:
        for side, root in ((old_side, a), (new_side, b)):
            if root is not None and root.spells_duplicate:
                root.facts = side.of(root.type_id)[0]
