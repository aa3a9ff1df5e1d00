"""What a DIE reader gives the converter: a unit's type DIEs with the attributes BTF needs.

Both readers (the fast one in dies.py and the pyelftools reference in reference.py) make
exactly this, so the converter cannot tell them apart and tests can compare them.
"""

from __future__ import annotations


class DwarfFormatError(Exception):
    """DWARF this encoder cannot read; the caller adds the file name."""


class TypeDie:
    """A type DIE: its tag, wanted attributes (DW_AT number -> value) and children.

    Values: names are str, references absolute .debug_info offsets, constants int, flags
    bool. Children (members, enumerators, subranges, parameters, annotations) are
    (tag, fields): the tuple of their values in the order of dwarf_numbers.CHILD_FIELDS (a
    member's bit-field and static attributes one group, None when it has none of them).
    """

    __slots__ = ("tag", "attrs", "children")

    def __init__(self, tag: int, attrs: dict):
        self.tag = tag
        self.attrs = attrs
        self.children: list[tuple[int, tuple]] = []

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeDie):
            return NotImplemented
        return (self.tag, self.attrs, self.children) == (other.tag, other.attrs, other.children)

    __hash__ = None

    def __repr__(self) -> str:
        return f"TypeDie({self.tag:#x}, {self.attrs!r}, {self.children!r})"


class UnitTypes:
    """The type DIEs of one unit, by DIE offset, in DIE order."""

    __slots__ = ("offset", "types", "locations")

    def __init__(self, offset: int, types: dict[int, TypeDie], locations=None):
        self.offset = offset
        self.types = types
        # locations.UnitLocations: sums up the parameters' location lists (None: none).
        self.locations = locations
