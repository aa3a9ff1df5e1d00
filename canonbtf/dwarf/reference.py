"""The reference DIE reader: pyelftools' own DIE decoding, turned into `UnitTypes`.

Slow (pyelftools decodes every attribute of every DIE) but independent of dies.py: the
tests hold the fast reader to agree with it DIE for DIE, and `encode --reader pyelftools`
runs the whole encoder on it.
"""

from __future__ import annotations

from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_FORM, ENUM_DW_TAG

from . import constants as c
from .dies import CONST_FORMS, CU_REF_FORMS, location_value
from .sections import DwarfFile, Unit
from .unit_types import DwarfFormatError, TypeDie, UnitTypes

_BLOCK_FORMS = frozenset({c.FORM_exprloc, c.FORM_block, c.FORM_block1, c.FORM_block2,
                          c.FORM_block4})


def _number(table: dict, value) -> int:
    return value if isinstance(value, int) else table[value]


class ReferenceReader:
    """Reads units through pyelftools' DWARFInfo; same interface as dies.DieReader."""

    def __init__(self, dwarf: DwarfFile):
        self.dwarf = dwarf
        self.skipped_tags: dict[int, int] = {}

    def read_unit(self, unit: Unit) -> UnitTypes:
        cu = self.dwarf.dwarfinfo.get_CU_at(unit.offset)
        types: dict[int, TypeDie] = {}
        for die in cu.iter_DIEs():
            if die.is_null():
                continue
            tag = _number(ENUM_DW_TAG, die.tag)
            if tag in c.TYPE_TAGS:
                types[die.offset] = TypeDie(tag, self._attrs(die, tag, cu))
            elif tag in c.CHILD_TAGS:
                parent = die.get_parent()
                owner = types.get(parent.offset) if parent is not None else None
                if owner is not None:
                    owner.children.append((tag, self._attrs(die, tag, cu)))
                elif tag != c.TAG_formal_parameter and tag != c.TAG_unspecified_parameters:
                    self.skipped_tags[tag] = self.skipped_tags.get(tag, 0) + 1
        return UnitTypes(unit.offset, types)

    def _attrs(self, die, tag: int, cu) -> dict:
        wanted = c.WANTED_ATTRS[tag]
        out = {}
        for name, attr in die.attributes.items():
            at = _number(ENUM_DW_AT, name)
            kind = wanted.get(at)
            if kind is None:
                continue
            form = _number(ENUM_DW_FORM, attr.form)
            value = _value(kind, form, attr, cu)
            if value is not None:
                out[at] = value
        return out


def _value(kind: str, form: int, attr, cu):
    if kind == c.V_STRING:
        value = attr.value
        return value.decode("latin-1") if isinstance(value, bytes) else value
    if kind == c.V_REF:
        if form in CU_REF_FORMS:
            return attr.raw_value + cu.cu_offset
        if form == c.FORM_ref_addr:
            return attr.raw_value
        raise DwarfFormatError(f"reference form {attr.form} is not supported")
    if kind == c.V_FLAG:
        return bool(attr.value)
    if kind == c.V_LOCATION and form in _BLOCK_FORMS:
        return location_value(bytes(attr.value))
    if kind in (c.V_CONST, c.V_LOCATION):
        return attr.value if form in CONST_FORMS else None
    return attr.value
