"""Sizes, alignments and what a type holds by value: one definition for every user.

The C header lays structs out with them (emit/c/header.py), the C shape check bounds padding and
finds by-value loops with them (emit/c/shape.py), and the validator sizes types the way
the kernel's btf_type_id_size does by the same per-kind rule (check/validator.py). Each kind
is sized one way: by its own size field, as a pointer, as an array of its element, through
the type it names (typedefs, qualifiers, type tags), or not at all.

`TypeSizes` is the view of a C compiler for the target: a scalar is aligned to its size
(up to 16), a struct to its most aligned member unless it must be packed to reach the BTF
offsets, and `layout` says how a struct is declared so that a compiler gives exactly the
BTF's member offsets and size.
"""

from __future__ import annotations

from ..spec import kinds as spec
from . import format as f
from .model import Btf, Type

# How a kind's size is found.
OWN, POINTER, ARRAY, TARGET, NONE = range(5)
# The rule by kind (index: kind, up to the 7 bits a record has for it; unknown kinds have
# none). A VAR has no C type to size; the validator follows the kernel, which sizes it
# through its type.
SIZE_RULE = tuple(
    OWN if kind in spec.SIZED else POINTER if kind == f.PTR else ARRAY if kind == f.ARRAY
    else TARGET if kind in spec.MODIFIER else NONE
    for kind in range(128)
)

# (packed, alignment, explicit alignment or 0, {member index: (from bit, to bit) of padding})
Layout = tuple[bool, int, int, dict[int, tuple[int, int]]]


def pointer_size(btf: Btf) -> int:
    """The target's pointer size: that of `long`, as on every Linux ABI (8 when the BTF
    has no long). Split BTF takes its base's."""
    if btf.base is not None:
        return pointer_size(btf.base)
    name = btf.name
    for t in btf.types:
        if t.kind == f.INT and t.size_or_type in (4, 8) \
                and name(t.name_off) in ("long int", "long unsigned int"):
            return t.size_or_type
    return 8


def by_value_edges(types: list[Type | None]) -> list[tuple[int, ...]]:
    """Per type id, what must be complete for it to be: its members, an array's element,
    the type a typedef, qualifier or type tag names (void left out). Its size depends on
    these and nothing else; a loop here is a type that holds itself."""
    edges: list[tuple[int, ...]] = [()] * len(types)
    for type_id in range(1, len(types)):
        edges[type_id] = _by_value(types[type_id])
    return edges


def _by_value(t: Type | None) -> tuple[int, ...]:
    """One type's entry of `by_value_edges` (void and unknown ids: none)."""
    kind = t.kind if t is not None else 0
    if kind == f.STRUCT or kind == f.UNION:
        return tuple([m[1] for m in t.items if m[1]])
    if kind == f.ARRAY:
        return (t.extra[0],) if t.extra[0] else ()
    if kind in spec.MODIFIER:
        return (t.size_or_type,) if t.size_or_type else ()
    return ()


class LazyByValue:
    """`by_value_edges(types)` read one id at a time, each computed on first use: the C
    header's placement asks for a few thousand ids, and making all 100 k took 8 % of
    `dump --format c` once the rest of it was compiled."""

    def __init__(self, types: list[Type | None]):
        self.types = types
        self._edges: dict[int, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, type_id: int) -> tuple[int, ...]:
        out = self._edges.get(type_id)
        if out is None:
            out = self._edges[type_id] = _by_value(self.types[type_id])
        return out


def round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def bitfield_position(cur: int, bits: int, unit: int) -> int:
    """Where the compiler puts a bit-field of `bits` bits after bit `cur`: inside one unit."""
    if cur // unit == (cur + bits - 1) // unit:
        return cur
    return round_up(cur, unit)


def _natural_align(size: int) -> int:
    """A scalar's alignment: the largest power of two dividing its size, at most 16."""
    align = 1
    while align < size and align < 16 and size % (align * 2) == 0:
        align *= 2
    return align


class TypeSizes:
    """Sizes and alignments as a C compiler for the target sees them, memoized per id.

    Callers make sure the types hold nothing by value in a loop (emit/c/shape.py), since
    sizing follows what a type holds.
    """

    def __init__(self, types: list[Type | None], ptr_size: int):
        self.types = types
        self.ptr_size = ptr_size
        self._measured: dict[int, tuple[int, int]] = {}
        self._layout: dict[int, Layout] = {}

    def size_of(self, tid: int) -> int:
        return self.measure(tid)[0]

    def measure(self, tid: int) -> tuple[int, int]:
        """(size, alignment) of type `tid`, by its kind's rule."""
        found = self._measured.get(tid)
        if found is not None:
            return found
        t = self.types[tid]
        rule = SIZE_RULE[t.kind] if t is not None else NONE
        if rule == OWN:
            size = t.size_or_type
            if t.kind == f.STRUCT or t.kind == f.UNION:
                found = (size, self.layout(tid)[1])
            else:
                found = (size, _natural_align(size))
        elif rule == POINTER:
            found = (self.ptr_size, self.ptr_size)
        elif rule == ARRAY:
            size, align = self.measure(t.extra[0])
            found = (t.extra[2] * size, align)
        elif rule == TARGET:
            found = self.measure(t.size_or_type)
        else:
            found = (0, 1)
        self._measured[tid] = found
        return found

    def layout(self, tid: int) -> Layout:
        """How a struct or union is declared: (packed, alignment, explicit `aligned` value
        or 0, {member index or len(members) for the end: (from bit, to bit) of padding}).

        A struct is packed when the natural rules cannot reach the BTF offsets: a member
        below its natural position, a bit-field straddling its storage unit, or a size that
        is not a multiple of the alignment. Gaps the rules leave short are filled with
        unnamed bit-fields, which add no alignment. A union larger than its members gets
        an unnamed bit-field of its size when that fits in 64 bits (BTF keeps no members of
        a transparent union), else the smallest `aligned` attribute that rounds it up.
        """
        cached = self._layout.get(tid)
        if cached is not None:
            return cached
        t = self.types[tid]
        members, packed, max_align, largest = self._members(t)
        size = t.size_or_type
        if size % max_align:
            packed = True
        align = 1 if packed else max_align
        explicit_align = 0
        padding: dict[int, tuple[int, int]] = {}
        if t.kind == f.STRUCT:
            _struct_padding(members, packed, size, align, padding)
        elif not packed and round_up(largest, max_align) < size:
            if size <= 8:
                padding[len(members)] = (0, size * 8)
            else:
                wider = max_align * 2
                while wider <= size and round_up(largest, wider) < size:
                    wider *= 2
                if round_up(largest, wider) == size:
                    align = explicit_align = wider
        result = (packed, align, explicit_align, padding)
        self._layout[tid] = result
        return result

    def _members(self, t: Type) -> tuple[list[tuple[int, int, int, int]], bool, int, int]:
        """([(bit offset, bit-field bits or 0, alignment, width in bits)] per member,
        whether natural placement misses a BTF offset, the largest alignment of a member
        that counts for it, the widest member in bytes)."""
        is_struct = t.kind == f.STRUCT
        kflag = t.kflag
        measure = self.measure
        members = []
        max_align = 1
        packed = False
        cur = 0
        largest = 0
        for name_off, mtype, offset in t.items:
            if kflag:
                bits = offset >> 24
                offset &= 0xFFFFFF
            else:
                bits = 0
            size, align = measure(mtype)
            if bits:
                members.append((offset, bits, align, bits))
                if name_off and align > max_align:
                    max_align = align
                if is_struct:
                    unit = align * 8
                    if offset < bitfield_position(cur, bits, unit) \
                            or offset % unit + bits > size * 8:
                        packed = True
                    cur = offset + bits
                largest = max(largest, -(-bits // 8))
            else:
                members.append((offset, 0, align, size * 8))
                if align > max_align:
                    max_align = align
                if offset % (align * 8) or (is_struct and offset < round_up(cur, align * 8)):
                    packed = True
                cur = offset + size * 8
                largest = max(largest, size)
        return members, packed, max_align, largest


def _struct_padding(members: list[tuple[int, int, int, int]], packed: bool, size: int,
                    align: int, padding: dict[int, tuple[int, int]]) -> None:
    """The gaps between a struct's members (and before its end) that the compiler's own
    placement would not bridge, into `padding`."""
    cur = 0
    for i, (offset, bits, member_align, width) in enumerate(members):
        if offset > cur:
            if packed:
                pos = cur if bits else round_up(cur, 8)
            elif bits:
                pos = bitfield_position(cur, bits, member_align * 8)
            else:
                pos = round_up(cur, member_align * 8)
            if offset > pos:
                padding[i] = (cur, offset)
        cur = offset + width
    if cur < size * 8 and round_up(cur, align * 8) != size * 8:
        padding[len(members)] = (cur, size * 8)
