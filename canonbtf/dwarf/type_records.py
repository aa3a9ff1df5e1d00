"""The BTF record of each numbered type DIE, mapped the way pahole maps it (the mapping
is in convert.py's docstring).

The second layer of a unit's conversion: `TypeRecords` makes records on top of the
numbering (numbering.py) and is what convert.py's functions and variables build on.
Children are (tag, fields) in the order of dwarf_numbers.CHILD_FIELDS, unpacked here by
position (tests/test_convert.py holds the orders to what this module unpacks).
"""

from __future__ import annotations

from ..btf import format as f
from ..spec import dwarf_numbers as c
from .numbering import FAILED, FLOAT_ENCODINGS, Record, TypeNumbering
from .unit_types import TypeDie

_MODIFIER_KINDS = {
    c.TAG_pointer_type: f.PTR, c.TAG_const_type: f.CONST, c.TAG_volatile_type: f.VOLATILE,
    c.TAG_restrict_type: f.RESTRICT, c.TAG_typedef: f.TYPEDEF,
}
SIGNED_ENCODINGS = frozenset({c.ATE_signed, c.ATE_signed_char})
_SIZED_TAGS = frozenset({c.TAG_base_type, c.TAG_structure_type, c.TAG_union_type,
                         c.TAG_class_type, c.TAG_enumeration_type, c.TAG_pointer_type})
_SEE_THROUGH_TAGS = frozenset({c.TAG_typedef, c.TAG_const_type, c.TAG_volatile_type,
                               c.TAG_restrict_type, c.TAG_atomic_type})
STRUCT_TAGS = frozenset({c.TAG_structure_type, c.TAG_class_type, c.TAG_union_type})
TYPE_TAG_NAME = "btf_type_tag"
# Read in the loops over children, where a module attribute lookup per use shows.
_TAG_member, _TAG_enumerator = c.TAG_member, c.TAG_enumerator
_TAG_formal_parameter, _TAG_LLVM_annotation = c.TAG_formal_parameter, c.TAG_LLVM_annotation
_AT_name, _AT_type = c.AT_name, c.AT_type


class TypeRecords(TypeNumbering):
    """Makes the record of a numbered type DIE (`_record`)."""

    def _record(self, die: TypeDie) -> Record:
        tag = die.tag
        attrs = die.attrs
        if tag in _MODIFIER_KINDS:
            kind = _MODIFIER_KINDS[tag]
            name = attrs.get(_AT_name, "") if kind == f.TYPEDEF else ""
            target = attrs.get(_AT_type)
            if target is None:
                target = 0
            else:
                number = self.local.get(target)
                target = self._number(target) if number is None else number
            if target == FAILED:
                target = 0
            if die.children:
                if kind == f.PTR:
                    target = self._type_tags(die.children, target)
                elif kind == f.TYPEDEF:
                    self._collect_decl_tags(die.children, -1)
            return (kind, name, 0, target, 0, ())
        if tag == c.TAG_base_type:
            return self._base_type(attrs)
        if tag in STRUCT_TAGS:
            return self._struct(die)
        if tag == c.TAG_array_type:
            return self._array(die)
        if tag == c.TAG_enumeration_type:
            return self._enum(die)
        return self._func_proto(die)

    def _type_tags(self, children: list, target: int) -> int:
        """The TYPE_TAG chain a pointer's btf_type_tag annotations put before `target`."""
        if "type_tag" not in self.features:
            return target
        for tag, fields in children:
            if tag == c.TAG_LLVM_annotation:
                name, value, _ = fields
                if name == TYPE_TAG_NAME and value:
                    target = self._add((f.TYPE_TAG, value, 0, target, 0, ()))
        return target

    def _base_type(self, attrs: dict) -> Record:
        name = attrs.get(c.AT_name, "")
        size = attrs.get(c.AT_byte_size, 0)
        encoding = attrs.get(c.AT_encoding)
        if encoding in FLOAT_ENCODINGS:
            if "float" not in self.features:  # what pahole made before FLOAT existed
                return (f.INT, name, 0, size, size * 8, ())
            return (f.FLOAT, name, 0, size, 0, ())
        if encoding == c.ATE_boolean:
            flags = f.INT_BOOL
        elif encoding in SIGNED_ENCODINGS:
            flags = f.INT_SIGNED
        else:
            flags = 0
        return (f.INT, name, 0, size, (flags << 24) | (size * 8), ())

    def _struct(self, die: TypeDie) -> Record:
        attrs = die.attrs
        struct_name = attrs.get(c.AT_name, "")
        union = die.tag == c.TAG_union_type
        if attrs.get(c.AT_declaration):
            return (f.FWD, struct_name, int(union), 0, 0, ())
        items = []
        append = items.append
        bitfields = False
        # Members are a third of a kernel's DIEs: this loop inlines `_ref` and the plain
        # (not bitfield) case of `_bitfield_offset`, and reads constants from locals;
        # measured 1,308 M -> 1,137 M instructions (valgrind) converting 1/80 of the
        # 6.1 kernel's units. Items are made at once, not from a list of members:
        # converting 1/40 of the units took 2,096 M -> 1,626 M instructions with the
        # changes to `_number` (valgrind).
        local = self.local
        for tag, member in die.children:
            if tag != _TAG_member:
                if tag == _TAG_LLVM_annotation:
                    self._collect_decl_tags(((tag, member),), -1)
                else:
                    self.skips.add(f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))} in a struct or "
                                   f"union")
                continue
            name, target, location, layout, annotations = member
            if layout is not None:  # bit-fields, DWARF 5 bit offsets and static members
                (data_bit_offset, bit_offset, bit_size, byte_size, declaration,
                 external) = layout
                if external or declaration:
                    continue  # a static member: not part of the layout
            if target is None:
                type_number = 0
            else:
                type_number = local.get(target)
                if type_number is None:
                    type_number = self._number(target)
                if type_number == FAILED:
                    self.skips.add("member of a skipped type left out")
                    continue
            if annotations:
                self._collect_decl_tags(annotations, len(items))
            if layout is None:
                append((name or "", type_number, (location or 0) * 8))
            elif bit_size:
                # With kind_flag the word is bitfield_size << 24 | bit_offset (size 0 for
                # the members that are not bitfields: the same word as without).
                bitfields = True
                offset = self._bitfield_offset(data_bit_offset, location, bit_offset,
                                               bit_size, byte_size, target)
                append((name or "", type_number, (bit_size << 24) | offset))
            elif data_bit_offset is None:
                append((name or "", type_number, (location or 0) * 8))
            else:
                append((name or "", type_number, data_bit_offset))
        kind = f.UNION if union else f.STRUCT
        return (kind, struct_name, int(bitfields), attrs.get(c.AT_byte_size, 0), 0,
                tuple(items))

    def _bitfield_offset(self, data_bit_offset: int | None, location: int | None,
                         bit_offset: int | None, bit_size: int, byte_size: int | None,
                         target: int | None) -> int:
        """A bitfield member's bit offset: DWARF 5's DW_AT_data_bit_offset, or DWARF 4's
        DW_AT_bit_offset, which counts from the most significant bit of the storage unit
        (DW_AT_byte_size, else the member type's size)."""
        if data_bit_offset is not None:
            return data_bit_offset
        byte_offset = location or 0
        if bit_offset is None:
            return byte_offset * 8
        storage = byte_size if byte_size is not None else self._byte_size(target)
        if self.little_endian:
            return byte_offset * 8 + storage * 8 - bit_offset - bit_size
        return byte_offset * 8 + bit_offset

    def _byte_size(self, offset: int | None) -> int:
        for _ in range(64):
            die = self.dies.get(offset) if offset is not None else None
            if die is None:
                return 0
            size = die.attrs.get(c.AT_byte_size)
            if size is not None and die.tag in _SIZED_TAGS:
                return size
            if die.tag not in _SEE_THROUGH_TAGS:
                return 0
            offset = die.attrs.get(c.AT_type)
        return 0

    def _array(self, die: TypeDie) -> Record:
        nelems = 1
        dimensions = 0
        for tag, sub in die.children:
            if tag != c.TAG_subrange_type:
                self.skips.add(f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))} in an array")
                continue
            dimensions += 1
            _, lower, upper, count, _ = sub
            if count is None:
                if upper is None:
                    count = 0
                else:
                    count = max(_signed64(upper) - _signed64(lower or 0) + 1, 0)
            nelems = (nelems * count) & 0xFFFFFFFF
        if not dimensions:
            nelems = 0
        return (f.ARRAY, "", 0, 0, (self._ref(die.attrs), self._index(), nelems), ())

    def _enum(self, die: TypeDie) -> Record:
        attrs = die.attrs
        name = attrs.get(c.AT_name, "")
        size = attrs.get(c.AT_byte_size)
        if attrs.get(c.AT_declaration) or size is None:
            return (f.ENUM, name, 0, 4 if size is None else size, 0, ())
        values = []
        for tag, enumerator in die.children:
            if tag != _TAG_enumerator:
                self.skips.add(f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))} in an enum")
                continue
            enumerator_name, value, _ = enumerator
            values.append((enumerator_name or "", value or 0))
        if size <= 4 or "enum64" not in self.features:
            # Without ENUM64 (kernels before 6.0, which reject an ENUM with kind_flag) no
            # sign either: every value a u32, as pahole's skip_encoding_btf_enum64.
            signed = "enum64" in self.features and any(v < 0 for _, v in values)
            items = tuple((n, v & 0xFFFFFFFF) for n, v in values)
            return (f.ENUM, name, int(signed), size, 0, items)
        items = tuple((n, v & 0xFFFFFFFFFFFFFFFF) for n, v in values)
        return (f.ENUM64, name, int(self._signed_type(attrs.get(c.AT_type))), size, 0, items)

    def _signed_type(self, offset: int | None) -> bool:
        for _ in range(64):
            die = self.dies.get(offset) if offset is not None else None
            if die is None:
                return False
            if die.tag == c.TAG_base_type:
                return die.attrs.get(c.AT_encoding) in SIGNED_ENCODINGS
            if die.tag not in _SEE_THROUGH_TAGS:
                return False
            offset = die.attrs.get(c.AT_type)
        return False

    def _func_proto(self, die: TypeDie) -> Record:
        params = []
        for tag, param in die.children:
            if tag == _TAG_formal_parameter:
                params.append((param[0] or "", self._type_number(param[1])))
            elif tag == c.TAG_unspecified_parameters:
                params.append(("", 0))
            elif tag != c.TAG_LLVM_annotation:
                self.skips.add(f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))} in a prototype")
        return (f.FUNC_PROTO, "", 0, self._ref(die.attrs), 0, tuple(params))


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value
