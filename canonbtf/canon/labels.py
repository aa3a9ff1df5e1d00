"""A type's label: everything about it except the types it references (docs/ORDER.md).

Labels are tuples whose first elements are the primary sort key: (kind, vlen, name, ...)
for the default order, (name, kind, vlen, ...) for `--order name`. Tuples of one kind
always have the same shape, so labels of different kinds never compare past the kind.
"""

from __future__ import annotations

from ..btf import format as f
from ..btf.model import Type
from ..spec import kinds as spec

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

ORDERS = ("kind", "name")


def _int_fields(word: int) -> tuple[int, int, int]:
    return (word >> 24) & 0xF, (word >> 16) & 0xFF, word & 0xFF


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def scalars(t: Type, name: Callable[[int], str]) -> tuple:
    """The kind-specific part of the label, after (kind, vlen, name, kind_flag, size)."""
    kind = t.kind
    items = t.items
    if kind == f.STRUCT or kind == f.UNION:
        if t.kflag:
            return tuple([(name(n), o & 0xFFFFFF, o >> 24) for n, _, o in items])
        return tuple([(name(n), o, 0) for n, _, o in items])
    if kind == f.INT:
        return _int_fields(t.extra)
    if kind == f.ENUM or kind == f.ENUM64:
        if t.kflag:
            bits = 32 if kind == f.ENUM else 64
            return tuple([(name(n), _signed(v, bits)) for n, v in items])
        return tuple([(name(n), v) for n, v in items])
    if kind == f.FUNC_PROTO:
        return tuple([name(n) for n, _ in items])
    if kind == f.ARRAY:
        return (t.extra[2],)
    if kind == f.DATASEC:
        return tuple([(o, s) for _, o, s in items])
    if kind == f.VAR or kind == f.DECL_TAG:
        return (t.extra,)
    return ()


def label_head(t: Type, name: Callable[[int], str], order: str = "kind") -> tuple:
    """The label without its scalars: (kind, vlen, name, kind_flag, size), or with the name
    first for the name order. Most types are told apart by this alone."""
    size = t.size_or_type if t.kind in spec.SIZED else 0
    if order == "name":
        return (name(t.name_off), t.kind, t.vlen, t.kflag, size)
    return (t.kind, t.vlen, name(t.name_off), t.kflag, size)


def label(t: Type, name: Callable[[int], str], order: str = "kind") -> tuple:
    """The full label of `t`, ordered for `order` ("kind" or "name")."""
    return (*label_head(t, name, order), scalars(t, name))
