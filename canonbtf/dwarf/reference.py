"""The reference DIE reader: pyelftools' own DIE decoding, turned into `UnitTypes`.

Slow (pyelftools decodes every attribute of every DIE) but independent of dies.py: the
tests hold the fast reader to agree with it DIE for DIE, and `encode --reader pyelftools`
runs the whole encoder on it.
"""

from __future__ import annotations

from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_FORM, ENUM_DW_TAG

from ..spec import dwarf_numbers as c
from .forms import ADDRX_FORMS, BLOCK_FORMS, CONST_FORMS, CU_REF_FORMS, STRING_FORMS
from .locations import LocationList, LocationListIndex, expression_summary, unit_locations
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
        annotations: dict[int, list] = {}  # offset -> the annotations field of a child
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
                    siblings = owner.children
                elif parent is not None and parent.offset in annotations:
                    siblings = annotations[parent.offset]
                else:
                    if tag not in c.QUIET_CHILD_TAGS:
                        self.skipped_tags[tag] = self.skipped_tags.get(tag, 0) + 1
                    continue
                values = _child(self._attrs(die, tag, cu), c.CHILD_FIELDS[tag],
                                die.has_children)
                siblings.append((tag, values))
                if die.has_children:
                    annotations[die.offset] = values[-1]
        top = cu.get_top_DIE().attributes.get("DW_AT_loclists_base")
        return UnitTypes(unit.offset, types, unit_locations(
            self.dwarf, unit, top.value if top is not None else None))

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
            if value is not None or (kind in _EXPRESSION_KINDS and form in BLOCK_FORMS):
                # An expression that is not what was wanted is kept as None, as the fast
                # reader keeps it.
                out[at] = value
        return out


_EXPRESSION_KINDS = frozenset({c.V_LOCATION, c.V_ADDRESS_EXPR})


def _child(attrs: dict, fields: tuple, has_children: bool) -> tuple:
    """A child's values, in the order of its fields (dwarf_numbers.CHILD_FIELDS); a group of
    fields is None when the DIE has none of them."""
    values = []
    for field in fields:
        if field == c.ANNOTATIONS:
            values.append([] if has_children else None)
        elif isinstance(field, tuple):
            group = _child(attrs, field, False)
            values.append(None if all(value is None for value in group) else group)
        else:
            values.append(attrs.get(field))
    return tuple(values)


_OFFSET_OPERATIONS = frozenset({"DW_OP_plus_uconst", "DW_OP_constu"})
_INDEX_OPERATIONS = frozenset({"DW_OP_addrx", "DW_OP_GNU_addr_index"})


def _only_operation(expr, cu):
    """The expression's operation if it is exactly one (pyelftools' parser), else None."""
    try:
        ops = DWARFExprParser(cu.structs).parse_expr(expr)
    except Exception:  # noqa: BLE001 - an expression pyelftools cannot parse is no offset
        return None
    return ops[0] if len(ops) == 1 else None


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
        op = _only_operation(attr.value, cu)
        return op.args[0] if op is not None and op.op_name in _OFFSET_OPERATIONS else None
    if kind == c.V_ADDRESS_EXPR:
        if form not in BLOCK_FORMS:
            return None
        op = _only_operation(attr.value, cu)
        if op is None:
            return None
        if op.op_name == "DW_OP_addr":
            return op.args[0]
        if op.op_name in _INDEX_OPERATIONS:
            return cu.dwarfinfo.get_addr(cu, op.args[0])
        return None
    if kind == c.V_PARAM_LOCATION:
        if form == c.FORM_sec_offset:
            return LocationList(attr.raw_value)
        if form == c.FORM_loclistx:
            return LocationListIndex(attr.raw_value)
        return expression_summary(bytes(attr.value), True) if form in BLOCK_FORMS else None
    if kind == c.V_ADDRESS:
        # pyelftools resolves DW_FORM_addrx* through .debug_addr itself.
        return attr.value if form == c.FORM_addr or form in ADDRX_FORMS else None
    if kind in (c.V_CONST, c.V_LOCATION):
        return attr.value if form in CONST_FORMS else None
    return attr.value
