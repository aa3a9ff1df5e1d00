"""The reference DIE reader: pyelftools' own DIE decoding, turned into `UnitTypes`.

Slow (pyelftools decodes every attribute of every DIE) but independent of dies.py: the
tests hold the fast reader to agree with it DIE for DIE, and `encode --reader pyelftools`
runs the whole encoder on it.
"""

from __future__ import annotations

from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_FORM, ENUM_DW_TAG

from . import constants as c
from .dies import (
    ADDRX_FORMS,
    BLOCK_FORMS,
    CONST_FORMS,
    CU_REF_FORMS,
    STRING_FORMS,
    AddressIndex,
    address_expression,
    location_value,
)
from .sections import DwarfFile, Unit
from .unit_types import DwarfFormatError, TypeDie, UnitTypes


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
        child_attrs: dict[int, dict] = {}  # offset -> attributes of a DIE kept as a child
        for die in cu.iter_DIEs():
            if die.is_null():
                continue
            tag = _number(ENUM_DW_TAG, die.tag)
            parent = die.get_parent()
            if (tag in c.TYPE_TAGS or (tag == c.TAG_subprogram and not _declares(die))
                    or (tag == c.TAG_variable and parent is not None
                        and _number(ENUM_DW_TAG, parent.tag) in c.UNIT_TAGS)):
                types[die.offset] = TypeDie(tag, self._attrs(die, tag, cu))
            elif tag in c.CHILD_TAGS:
                owner = types.get(parent.offset) if parent is not None else None
                if owner is not None:
                    attrs = self._attrs(die, tag, cu)
                    owner.children.append(_child(tag, attrs, die.has_children))
                    child_attrs[die.offset] = attrs
                elif parent is not None and parent.offset in child_attrs:
                    attrs = self._attrs(die, tag, cu)
                    child_attrs[parent.offset].setdefault(c.ANNOTATIONS, []).append(
                        _child(tag, attrs, die.has_children))
                    child_attrs[die.offset] = attrs
                elif tag not in c.QUIET_CHILD_TAGS:
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
            if value.__class__ is AddressIndex:
                value = self.dwarf.dwarfinfo.get_addr(cu, value)
            if value is not None or (kind in _EXPRESSION_KINDS and form in BLOCK_FORMS):
                # An expression that is not what was wanted is kept as None, as the fast
                # reader keeps it.
                out[at] = value
        return out


_EXPRESSION_KINDS = frozenset({c.V_LOCATION, c.V_ADDRESS_EXPR})


def _child(tag: int, attrs: dict, has_children: bool) -> tuple:
    """A child as the fast reader gives it: plain (constants.PLAIN_CHILDREN) when it can."""
    plain = c.PLAIN_CHILDREN.get(tag)
    if plain is not None and not has_children and attrs.keys() <= set(plain[1]):
        return (plain[0], tuple(attrs.get(a) for a in plain[1]))
    return (tag, attrs)


def _declares(die) -> bool:
    attr = die.attributes.get("DW_AT_declaration")
    return attr is not None and attr.form == "DW_FORM_flag_present"


def _value(kind: str, form: int, attr, cu):
    if kind == c.V_TEXT:
        if form not in STRING_FORMS:
            return None
        kind = c.V_STRING
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
    if kind == c.V_LOCATION and form in BLOCK_FORMS:
        return location_value(bytes(attr.value))
    if kind == c.V_ADDRESS_EXPR:
        if form not in BLOCK_FORMS:
            return None
        return address_expression(bytes(attr.value), cu["address_size"],
                                  cu.dwarfinfo.config.little_endian)
    if kind == c.V_ADDRESS:
        # pyelftools resolves DW_FORM_addrx* through .debug_addr itself.
        return attr.value if form == c.FORM_addr or form in ADDRX_FORMS else None
    if kind in (c.V_CONST, c.V_LOCATION):
        return attr.value if form in CONST_FORMS else None
    return attr.value
