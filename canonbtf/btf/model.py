"""In-memory BTF: one `Type` per record, a `Btf` holding them with their strings.

Records stay close to the wire format (name offsets, raw words) so that reading and writing
are byte-exact; names are looked up through the owning `Btf`. Type ids are positions:
id 0 is void, a base BTF's types are 1..N, a split BTF's continue at N+1.
"""

from __future__ import annotations

from . import format as f
from .strings import StringTable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence


class Type:
    """One BTF type record.

    `extra` holds the fixed kind-specific words: INT the encoding word; ARRAY the tuple
    (elem type, index type, nelems); VAR its linkage; DECL_TAG the signed component_idx;
    FUNC its linkage (stored in vlen on the wire). `items` holds the vlen-counted tuples:
    STRUCT/UNION (name_off, type, offset word), ENUM (name_off, u32 value),
    ENUM64 (name_off, u64 value), FUNC_PROTO (name_off, type), DATASEC (type, offset, size).
    Other kinds have extra 0 and items ().
    """

    __slots__ = ("kind", "name_off", "kflag", "size_or_type", "extra", "items")

    def __init__(
        self,
        kind: int,
        name_off: int = 0,
        kflag: int = 0,
        size_or_type: int = 0,
        extra: int | tuple[int, int, int] = 0,
        items: Sequence[tuple[int, ...]] = (),
    ):
        self.kind = kind
        self.name_off = name_off
        self.kflag = kflag
        self.size_or_type = size_or_type
        self.extra = extra
        self.items = items

    @property
    def vlen(self) -> int:
        if self.kind == f.FUNC:
            return self.extra
        return len(self.items)

    def refs(self) -> list[int]:
        """Referenced type ids, in the order the record holds them (kinds.py)."""
        if not REFS:
            per_kind()
        return REFS[self.kind](self)

    def remap(self, new_id: Sequence[int], new_name: Mapping[int, int] | None = None) -> Type:
        """A copy with every type reference r replaced by new_id[r] and, when `new_name` is
        given, every string offset o (own name, member/param/enumerator names) by new_name[o]."""
        if not REFS:
            per_kind()
        if new_name is None:
            return REMAP[self.kind](self, new_id)
        return REMAP_NAMES[self.kind](self, new_id, new_name)

    def name_offsets(self) -> list[int]:
        """Every string offset the record holds: its name, then member/param/value names."""
        if not REFS:
            per_kind()
        return NAME_OFFSETS[self.kind](self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Type):
            return NotImplemented
        return (
            self.kind == other.kind
            and self.name_off == other.name_off
            and self.kflag == other.kflag
            and self.size_or_type == other.size_or_type
            and self.extra == other.extra
            and list(self.items) == list(other.items)
        )

    __hash__ = None  # mutable record

    def __repr__(self) -> str:
        return (
            f"Type({f.kind_name(self.kind)}, name_off={self.name_off}, kflag={self.kflag}, "
            f"size_or_type={self.size_or_type}, extra={self.extra!r}, items={list(self.items)!r})"
        )


# The `Type` methods' functions per kind (index = kind), generated from kinds.KINDS by
# `per_kind` when first needed: a `sort` through the compiled part needs none (making
# them at import, and compiling kinds.py where no bytecode is cached, was 1.6 % of its
# instructions). The methods read these globals: an attribute lookup per call cost
# Type.refs 13 %.
REFS: tuple[Callable[[Type], list[int]], ...] = ()
NAME_OFFSETS: tuple[Callable[[Type], list[int]], ...] = ()
REMAP: tuple[Callable[..., Type], ...] = ()
REMAP_NAMES: tuple[Callable[..., Type], ...] = ()


def per_kind() -> None:
    """Make the tables above, once; hot loops then take one and call into it."""
    global REFS, NAME_OFFSETS, REMAP, REMAP_NAMES
    if REFS:
        return
    from . import kinds

    NAME_OFFSETS = kinds.specialise("names", "type")
    REMAP = kinds.specialise("remap", "type", Type)
    REMAP_NAMES = kinds.specialise("remap_names", "type", Type)
    REFS = kinds.specialise("refs", "type")


class Packed:
    """A type section kept as words until someone reads its `Type`s: what the compiled
    order (canon/accel.py) reads and writes, so `sort` never makes 95 k objects.

    `words` are the records in host byte order (a bytes-like of 32-bit words), already
    checked as the reader checks them; `decode()` makes their `Type`s. `kinds` keeps
    their kinds once read, `view` the compiled part's index of them (canon/accel.py: a
    module's run reads vmlinux's kinds twice and its types one at a time)."""

    __slots__ = ("words", "count", "decode", "kinds", "view")

    def __init__(self, words: bytes, count: int, decode: Callable[[], list[Type]]):
        self.words = words
        self.count = count
        self.decode = decode
        self.kinds: bytes | None = None
        self.view: tuple | None = None

    def view_for(self, first_id: int, sections: list[tuple[int, bytes]]) -> object | None:
        """The compiled part's view of the words kept for this first id and string chain
        (the same string objects), else None."""
        kept = self.view
        if kept is None or kept[1] != first_id or len(kept[2]) != len(sections):
            return None
        return kept[0] if all(a is b for (_, a), (_, b) in zip(kept[2], sections)) else None

    def keep_view(self, view: object, first_id: int, sections: list[tuple[int, bytes]]) -> None:
        self.view = (view, first_id, sections)


class Btf:
    """A BTF blob's types and strings; split BTF keeps a reference to its base."""

    def __init__(
        self,
        types: list[Type] | None,
        strings: StringTable,
        base: Btf | None = None,
        byteorder: str = "<",
        header_tail: bytes = b"",
        layout: bytes = b"",
        packed: Packed | None = None,
    ):
        """`types`, or None with `packed` holding them undecoded."""
        self._types = types
        self._packed = packed if types is None else None
        self.strings = strings
        self.base = base
        self.byteorder = byteorder
        # Header bytes past the 24 we model (the 2026 layout fields), kept for round trips.
        self.header_tail = header_tail
        self.layout = layout

    @property
    def types(self) -> list[Type]:
        if self._types is None:
            self._types = self._packed.decode()
            self._packed = None
        return self._types

    @types.setter
    def types(self, types: list[Type]) -> None:
        self._types = types
        self._packed = None

    @property
    def packed(self) -> Packed | None:
        """The undecoded type section, until `types` is first read."""
        return self._packed

    @property
    def first_id(self) -> int:
        """Id of this BTF's first own type: 1, or one past the base's last."""
        return self.base.last_id + 1 if self.base is not None else 1

    @property
    def last_id(self) -> int:
        return self.first_id + len(self) - 1

    def __len__(self) -> int:
        return self._packed.count if self._types is None else len(self._types)

    def string_sections(self) -> list[tuple[int, bytes]]:
        """(start offset, bytes) of each string section a name may come from: the deepest
        base's first, this BTF's last (what the compiled order reads names from)."""
        own = (self.strings.start, self.strings.data())
        return [own] if self.base is None else [*self.base.string_sections(), own]

    def type_by_id(self, type_id: int) -> Type | None:
        """The type with that id (from the base for base ids); None for void."""
        if type_id == 0:
            return None
        first = self.first_id
        if type_id >= first:
            return self.types[type_id - first]
        return self.base.type_by_id(type_id)

    def name(self, offset: int) -> str:
        if offset < self.strings.start:
            return self.base.name(offset)
        return self.strings.get(offset)

    @property
    def names(self) -> Callable[[int], str]:
        """The fastest offset -> name function for this BTF (same results as `name`)."""
        return self.strings.lookup if self.base is None else self.name

    def type_name(self, t: Type) -> str:
        return self.name(t.name_off)

    def own(self) -> Iterator[tuple[int, Type]]:
        """(id, type) for this BTF's own types."""
        return enumerate(self.types, self.first_id)

    def all_types(self) -> list[Type | None]:
        """Every type by id, base included: index 0 is void (None)."""
        if self.base is None:
            return [None, *self.types]
        return self.base.all_types() + self.types
