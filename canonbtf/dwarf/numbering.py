"""Which of a unit's type DIEs become BTF records, under which unit-local numbers.

The first layer of a unit's conversion (convert.py): `TypeNumbering` holds the unit's
records as they are made and numbers the DIEs they are made for; type_records.py makes
the records of type DIEs on top of it, convert.py those of functions and variables on
top of that. Nothing here calls up into those layers.
"""

from __future__ import annotations

from ..btf import format as f
from ..spec import dwarf_numbers as c
from ..tuples import named_tuple
from .features import DEFAULT as DEFAULT_FEATURES
from .unit_types import TypeDie, UnitTypes

Record = tuple  # (kind, name, kflag, size_or_type, extra, items)

FAILED = -1  # a DIE that maps to nothing BTF can hold
DECL_TAG_NAME = "btf_decl_tag"
FLOAT_ENCODINGS = frozenset({c.ATE_float})
_UNSUPPORTED_ENCODINGS = {
    c.ATE_complex_float: "complex float base type",
    c.ATE_imaginary_float: "imaginary float base type",
    c.ATE_decimal_float: "decimal float base type",
}
_SUPPORTED_TAGS = frozenset({
    c.TAG_pointer_type, c.TAG_const_type, c.TAG_volatile_type, c.TAG_restrict_type,
    c.TAG_typedef, c.TAG_structure_type, c.TAG_union_type, c.TAG_class_type,
    c.TAG_array_type, c.TAG_enumeration_type, c.TAG_subroutine_type, c.TAG_atomic_type,
})
# Types that hold their referenced type by value: they fail with it.
_BY_VALUE_TAGS = frozenset({c.TAG_typedef, c.TAG_const_type, c.TAG_volatile_type,
                            c.TAG_restrict_type, c.TAG_array_type, c.TAG_subroutine_type})
# Read in `_number`, where a module attribute lookup per use shows.
_TAG_formal_parameter, _TAG_subroutine_type = c.TAG_formal_parameter, c.TAG_subroutine_type
_TAG_unspecified_type, _TAG_atomic_type = c.TAG_unspecified_type, c.TAG_atomic_type
_AT_type = c.AT_type


class ConvertContext(named_tuple("ConvertContext", "features symbols parameter_registers",
                                   defaults=(DEFAULT_FEATURES, None, ()))):
    """What a unit's conversion needs besides its DIEs: the features asked for
    (frozenset[str]) and the ELF's symbols (ElfSymbols, or None when the file has no
    symbol table: then every external function definition is a candidate, as pahole does,
    and no variable is); parameter_registers: the DWARF numbers of the argument registers,
    in order (spec.dwarf_numbers.PARAMETER_REGISTERS), empty: parameter locations are not checked.
    A named tuple, not a dataclass (see elf/read.Section)."""

    __slots__ = ()


class Skips:
    """What a conversion left out, by reason: reported in the summary line, never silent."""

    def __init__(self):
        self.counts: dict[str, int] = {}

    def add(self, reason: str, count: int = 1) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + count


class TypeNumbering:
    """A unit's records so far, and the record number of each DIE numbered."""

    def __init__(self, unit: UnitTypes, little_endian: bool, skips: Skips,
                 context: ConvertContext | None = None):
        self.dies = unit.types
        self.little_endian = little_endian
        self.skips = skips
        self.context = context or ConvertContext()
        self.features = self.context.features
        self.records: list[Record | None] = [None]  # index 0: void
        self.local: dict[int, int] = {}  # DIE offset -> record number, 0 void, -1 skipped
        self.owners: list[int | None] = [None]  # record number -> the DIE it was made for
        self.index_type: int | None = None
        self.decl_tags: list[tuple[str, int]] = []  # of the record being made: (value, idx)

    def _add(self, record: Record) -> int:
        """Append a record made for no DIE of its own; returns its number."""
        self.records.append(record)
        self.owners.append(None)
        return len(self.records) - 1

    def _add_decl_tags(self, target: int) -> None:
        if "decl_tag" in self.features:
            for value, component in self.decl_tags:
                self._add((f.DECL_TAG, value, 0, target, component, ()))
        self.decl_tags = []

    def _collect_decl_tags(self, children, component: int) -> None:
        for tag, fields in children:
            if tag == c.TAG_LLVM_annotation:
                name, value, _ = fields
                if name == DECL_TAG_NAME and value:
                    self.decl_tags.append((value, component))

    def _number(self, offset: int) -> int:
        """The record number of the type DIE at `offset` (allocating it), 0 or FAILED.

        A type fails when BTF cannot hold it, or holds it by value and a type it holds
        fails (typedefs, qualifiers, arrays, prototypes); a pointer to a failed type is a
        pointer to void, a member of a failed type is left out of its struct.
        """
        local = self.local
        number = local.get(offset)
        if number is not None:
            return number
        die = self.dies.get(offset)
        if die is None:
            self.skips.add("reference to a DIE that is not a type of its unit")
            local[offset] = FAILED
            return FAILED
        tag = die.tag
        if tag == _TAG_unspecified_type:
            local[offset] = 0
            return 0
        if tag not in _SUPPORTED_TAGS or tag == _TAG_atomic_type:
            reason = self._unsupported(die)
            if reason is not None:
                self.skips.add(reason)
                local[offset] = FAILED
                return FAILED
        local[offset] = FAILED  # until decided: a cycle of by-value types fails
        if tag == _TAG_atomic_type:
            self.skips.add("_Atomic qualifier dropped")
            number = self._ref(die.attrs)
            local[offset] = number
            return number
        if tag in _BY_VALUE_TAGS:
            # The type, then a prototype's parameter types; the first that fails fails
            # this one. Without a list of them and with the numbered case looked up in
            # line, converting 1/8 of the 6.1 kernel's units took 1.50 -> 1.29 s.
            dep = die.attrs.get(_AT_type)
            if dep is not None:
                dep_number = local.get(dep)
                if dep_number is None:
                    dep_number = self._number(dep)
                if dep_number == FAILED:
                    self.skips.add(f"DW_TAG_{c.TAG_NAMES[tag]} of a skipped type")
                    return FAILED
            if tag == _TAG_subroutine_type:
                for child_tag, fields in die.children:
                    if child_tag == _TAG_formal_parameter:
                        dep = fields[1]  # (name, type, location, origin, annotations)
                        if dep is not None and self._number(dep) == FAILED:
                            self.skips.add(f"DW_TAG_{c.TAG_NAMES[tag]} of a skipped type")
                            return FAILED
        number = len(self.records)
        self.records.append(None)
        self.owners.append(offset)
        self.local[offset] = number
        return number

    def _unsupported(self, die: TypeDie) -> str | None:
        tag = die.tag
        if tag == c.TAG_base_type:
            encoding = die.attrs.get(c.AT_encoding)
            if encoding in _UNSUPPORTED_ENCODINGS:
                return _UNSUPPORTED_ENCODINGS[encoding]
            if encoding not in FLOAT_ENCODINGS and die.attrs.get(c.AT_byte_size, 0) > 16:
                return "integer base type over 16 bytes"
            return None
        if tag in _SUPPORTED_TAGS:
            return None
        return f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))}"

    def _ref(self, attrs: dict) -> int:
        return self._type_number(attrs.get(_AT_type))

    def _type_number(self, target: int | None) -> int:
        """The record number of the type DIE at `target`; 0 (void) for None."""
        if target is None:
            return 0
        number = self.local.get(target)
        return self._number(target) if number is None else number

    def _index(self) -> int:
        """The unit's `int` base type; a 4-byte signed `int` when it has none (pahole's)."""
        if self.index_type is None:
            for offset, die in self.dies.items():
                if die.tag == c.TAG_base_type and die.attrs.get(c.AT_name) == "int":
                    number = self._number(offset)
                    if number > 0:
                        self.index_type = number
                        return number
            self.index_type = len(self.records)
            self.records.append((f.INT, "int", 0, 4, (f.INT_SIGNED << 24) | 32, ()))
            self.owners.append(None)
        return self.index_type
