"""What diff reports: the kind families roots are matched within, and the change
model (`DiffResult` of `TypeChange`s of `Detail`s) that text.py writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..btf import format as f

if TYPE_CHECKING:
    from .pairing import Root

# Families: the kinds a name is matched within, in report order.
FAMILIES = ("struct", "union", "enum", "typedef", "fwd", "func", "var", "datasec", "int",
            "float", "decl_tag")
_FAMILY_OF_KIND = {
    f.STRUCT: "struct", f.UNION: "union", f.ENUM: "enum", f.ENUM64: "enum", f.FWD: "fwd",
    f.TYPEDEF: "typedef", f.INT: "int", f.FLOAT: "float", f.FUNC: "func", f.VAR: "var",
    f.DATASEC: "datasec", f.DECL_TAG: "decl_tag",
}

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


Entry = tuple[str, str, int, str, "Root | None", "Root | None"]
