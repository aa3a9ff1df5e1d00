"""References spelled as C for the facts: the declarator speller (btf/declarator.py)
with duplicate tags, and the one-line descriptions of added and removed roots."""

from __future__ import annotations

from collections.abc import Callable

from ..btf import format as f
from ..btf.declarator import ReferenceSpeller
from ..btf.model import Btf, Type
from .model import _FAMILY_OF_KIND
from .pairing import Types


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


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
