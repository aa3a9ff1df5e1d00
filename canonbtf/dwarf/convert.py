"""One unit's type DIEs -> BTF records, mapped the way pahole maps them.

A record is a tuple (kind, name, kflag, size_or_type, extra, items), shaped like
`btf.model.Type` but with names as str and references as unit-local record numbers
(1-based; 0 is void). Only what the unit itself says is used, so a unit converts to the
same records in whatever worker and batch it lands.

The mapping (checked against pahole 1.24 on the golden objects):
- base types: FLOAT for float encodings; INT otherwise (SIGNED for signed and
  signed_char, BOOL for boolean, no CHAR flag), nr_bits = 8 * size. Complex, imaginary
  and decimal floats and ints over 16 bytes have no BTF form: skipped and counted.
- pointer, const, volatile, restrict, typedef: one record each; _Atomic is dropped
  (BTF has no such qualifier; counted). Unspecified type (and a missing DW_AT_type): void.
- struct/class/union: FWD when a declaration; members with DW_AT_bit_size are bitfields
  (kind_flag 1, DWARF 5 DW_AT_data_bit_offset or DWARF <= 4 DW_AT_bit_offset converted
  from the storage unit's most significant bit); static members are not members.
- arrays: one ARRAY, nelems the product of the dimensions (a missing bound counts 0),
  indexed by the unit's `int` (a 4-byte signed `int` when it has none, as pahole does).
- enums: ENUM up to 4 bytes (kind_flag when a value is negative), ENUM64 above
  (kind_flag when the underlying type is signed); a declaration is an empty 4-byte ENUM.
- subroutine types: FUNC_PROTO, parameters named as DWARF names them (usually not);
  `...` or a non-prototyped `()` ends with the {0, void} item.
Anything else that is a type is skipped and counted by tag; so are typedefs, qualifiers,
arrays and prototypes holding a skipped type by value. A pointer to a skipped type points
to void; a member of a skipped type is left out of its struct (counted).

Beyond types (docs/ENCODE.md, each behind a feature):
- functions: a definition (not a declaration, not a concrete instance of an inlined
  function) whose name is exactly an STT_FUNC symbol and whose parameters are all named
  becomes a FUNC *candidate* and its FUNC_PROTO (parameter names included). The FUNC's
  linkage field carries candidate flags until the parent has seen every unit
  (functions.py decides there which names keep one FUNC).
- variables: a unit-level variable at a fixed address (one DW_OP_addr) that a symbol of
  its name confirms becomes a VAR whose `extra` is (linkage, section, offset, size) until
  the parent builds the DATASECs (functions.py).
- annotations (clang): btf_type_tag on a pointer becomes a TYPE_TAG chain between the
  PTR and its target (the last annotation next to the PTR, as pahole does); btf_decl_tag
  on a struct, union, member, typedef, function, parameter or variable becomes a
  DECL_TAG (component_idx -1, or the member or parameter index).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..btf import format as f
from . import constants as c
from .features import DEFAULT as DEFAULT_FEATURES
from .symbols import PERCPU_SECTION, ElfSymbols
from .unit_types import TypeDie, UnitTypes

Record = tuple  # (kind, name, kflag, size_or_type, extra, items)

_MODIFIER_KINDS = {
    c.TAG_pointer_type: f.PTR, c.TAG_const_type: f.CONST, c.TAG_volatile_type: f.VOLATILE,
    c.TAG_restrict_type: f.RESTRICT, c.TAG_typedef: f.TYPEDEF,
}
_SIGNED_ENCODINGS = frozenset({c.ATE_signed, c.ATE_signed_char})
_FLOAT_ENCODINGS = frozenset({c.ATE_float})
_UNSUPPORTED_ENCODINGS = {
    c.ATE_complex_float: "complex float base type",
    c.ATE_imaginary_float: "imaginary float base type",
    c.ATE_decimal_float: "decimal float base type",
}
_SIZED_TAGS = frozenset({c.TAG_base_type, c.TAG_structure_type, c.TAG_union_type,
                         c.TAG_class_type, c.TAG_enumeration_type, c.TAG_pointer_type})
_SEE_THROUGH_TAGS = frozenset({c.TAG_typedef, c.TAG_const_type, c.TAG_volatile_type,
                               c.TAG_restrict_type, c.TAG_atomic_type})
_FAILED = -1  # a DIE that maps to nothing BTF can hold
# Read in the member loop, where a module attribute lookup per use shows.
_TAG_member, _PLAIN_MEMBER = c.TAG_member, c.PLAIN_MEMBER
_PLAIN_PARAMETER, _PLAIN_ENUMERATOR = c.PLAIN_PARAMETER, c.PLAIN_ENUMERATOR
_TAG_formal_parameter, _TAG_subroutine_type = c.TAG_formal_parameter, c.TAG_subroutine_type
_TAG_unspecified_type, _TAG_atomic_type = c.TAG_unspecified_type, c.TAG_atomic_type
_STRUCT_TAGS = frozenset({c.TAG_structure_type, c.TAG_class_type, c.TAG_union_type})
# Types numbered without looking at what they refer to (supported, never failing).
_INDEPENDENT_TAGS = _STRUCT_TAGS | {c.TAG_pointer_type, c.TAG_enumeration_type}
_TAG_pointer_type = c.TAG_pointer_type
_AT_name, _AT_type, _AT_bit_size = c.AT_name, c.AT_type, c.AT_bit_size
_AT_external, _AT_declaration = c.AT_external, c.AT_declaration
_AT_data_bit_offset, _AT_data_member_location = c.AT_data_bit_offset, c.AT_data_member_location
_ANNOTATIONS = c.ANNOTATIONS
_PROGRAM_TAGS = frozenset({c.TAG_subprogram, c.TAG_variable})
DECL_TAG_NAME = "btf_decl_tag"
TYPE_TAG_NAME = "btf_type_tag"
KFUNC_TAG = "bpf_kfunc"
UNNAMED_PERCPU_AT_ZERO = ("per-CPU variable at address 0 named only by its declaration "
                          "(left out as pahole 1.24 does)")

# Flags a FUNC candidate carries in its linkage field until functions.py decides: a
# candidate is never a valid linkage (so it never merges into a base BTF's FUNC), LINKED
# says the definition's code is at an address of its symbol, NOCALL that the function
# was marked DW_CC_nocall (its ABI changed).
FUNC_CANDIDATE = 4
FUNC_LINKED = 1
FUNC_NOCALL = 2


@dataclass(frozen=True)
class ConvertContext:
    """What a unit's conversion needs besides its DIEs: the features asked for and the
    ELF's symbols (None when the file has no symbol table: then every external function
    definition is a candidate, as pahole does, and no variable is)."""

    features: frozenset[str] = DEFAULT_FEATURES
    symbols: ElfSymbols | None = None


class Skips:
    """What a conversion left out, by reason: reported in the summary line, never silent."""

    def __init__(self):
        self.counts: dict[str, int] = {}

    def add(self, reason: str, count: int = 1) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + count



class UnitConverter:
    """Converts one unit; `convert()` returns its records."""

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
        self.programs: list[tuple[int, TypeDie]] = []  # subprograms and variables, in order

    def convert(self) -> list[Record | None]:
        """Records for every type DIE of the unit, in DIE order, then functions and
        variables; [0] is None (void)."""
        dies = self.dies
        local = self.local
        programs = self.programs
        records = self.records
        owners = self.owners
        # Functions and variables listed on the way, for the passes below: two fewer
        # walks over every DIE of the unit. Pointers, structs, unions and enums (two
        # thirds of the types) are numbered and pointers made here, not by the general
        # methods: converting 1/40 of the 6.1 kernel's units took 1,318 M -> 1,172 M
        # instructions (valgrind).
        for offset, die in dies.items():
            tag = die.tag
            if tag in _PROGRAM_TAGS:
                programs.append((offset, die))
            elif offset not in local:
                if tag in _INDEPENDENT_TAGS:
                    local[offset] = len(records)
                    records.append(None)
                    owners.append(offset)
                else:
                    self._number(offset)
        for number, offset in enumerate(owners):
            if offset is not None:
                die = dies[offset]
                if die.tag == _TAG_pointer_type and not die.children:
                    target = die.attrs.get(_AT_type)
                    if target is None:
                        target = 0
                    else:
                        target_number = local.get(target)
                        if target_number is None:
                            target_number = self._number(target)
                        target = 0 if target_number == _FAILED else target_number
                    records[number] = (f.PTR, "", 0, target, 0, ())
                    continue
                records[number] = self._record(die)
                if self.decl_tags:
                    self._add_decl_tags(number)
        if "func" in self.features:
            self._functions()
        if "var" in self.features or "global_var" in self.features:
            self._variables()
        return self.records

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
        for tag, attrs in children:
            if tag == c.TAG_LLVM_annotation and attrs.get(c.AT_name) == DECL_TAG_NAME:
                value = attrs.get(c.AT_const_value)
                if value:
                    self.decl_tags.append((value, component))

    # -- numbering: which DIEs become records, which are void or skipped -------------

    def _number(self, offset: int) -> int:
        """The record number of the type DIE at `offset` (allocating it), 0 or _FAILED.

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
            local[offset] = _FAILED
            return _FAILED
        tag = die.tag
        if tag == _TAG_unspecified_type:
            local[offset] = 0
            return 0
        if tag not in _SUPPORTED_TAGS or tag == _TAG_atomic_type:
            reason = self._unsupported(die)
            if reason is not None:
                self.skips.add(reason)
                local[offset] = _FAILED
                return _FAILED
        local[offset] = _FAILED  # until decided: a cycle of by-value types fails
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
                if dep_number == _FAILED:
                    self.skips.add(f"DW_TAG_{c.TAG_NAMES[tag]} of a skipped type")
                    return _FAILED
            if tag == _TAG_subroutine_type:
                for child_tag, attrs in die.children:
                    if child_tag == _PLAIN_PARAMETER:
                        dep = attrs[1]
                    elif child_tag == _TAG_formal_parameter:
                        dep = attrs.get(_AT_type)
                    else:
                        continue
                    if dep is not None and self._number(dep) == _FAILED:
                        self.skips.add(f"DW_TAG_{c.TAG_NAMES[tag]} of a skipped type")
                        return _FAILED
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
            if encoding not in _FLOAT_ENCODINGS and die.attrs.get(c.AT_byte_size, 0) > 16:
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

    # -- records ----------------------------------------------------------------------

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
            if target == _FAILED:
                target = 0
            if die.children:
                if kind == f.PTR:
                    target = self._type_tags(die.children, target)
                elif kind == f.TYPEDEF:
                    self._collect_decl_tags(die.children, -1)
            return (kind, name, 0, target, 0, ())
        if tag == c.TAG_base_type:
            return self._base_type(attrs)
        if tag in _STRUCT_TAGS:
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
        for tag, attrs in children:
            if tag == c.TAG_LLVM_annotation and attrs.get(c.AT_name) == TYPE_TAG_NAME:
                value = attrs.get(c.AT_const_value)
                if value:
                    target = self._add((f.TYPE_TAG, value, 0, target, 0, ()))
        return target

    def _base_type(self, attrs: dict) -> Record:
        name = attrs.get(c.AT_name, "")
        size = attrs.get(c.AT_byte_size, 0)
        encoding = attrs.get(c.AT_encoding)
        if encoding in _FLOAT_ENCODINGS:
            if "float" not in self.features:  # what pahole made before FLOAT existed
                return (f.INT, name, 0, size, size * 8, ())
            return (f.FLOAT, name, 0, size, 0, ())
        if encoding == c.ATE_boolean:
            flags = f.INT_BOOL
        elif encoding in _SIGNED_ENCODINGS:
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
        # (not bitfield) case of `_member_bit_offset`, and reads constants from locals;
        # measured 1,308 M -> 1,137 M instructions (valgrind) converting 1/80 of the
        # 6.1 kernel's units. Items are made at once, not from a list of members:
        # converting 1/40 of the units took 2,096 M -> 1,626 M instructions with the
        # changes to `_number` (valgrind).
        local = self.local
        for tag, member in die.children:
            if tag == _PLAIN_MEMBER:
                name, target, location = member
                if target is None:
                    type_number = 0
                else:
                    type_number = local.get(target)
                    if type_number is None:
                        type_number = self._number(target)
                    if type_number == _FAILED:
                        self.skips.add("member of a skipped type left out")
                        continue
                append((name if name is not None else "", type_number, (location or 0) * 8))
                continue
            if tag != _TAG_member:
                if tag == c.TAG_LLVM_annotation:
                    self._collect_decl_tags(((tag, member),), -1)
                else:
                    self.skips.add(f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))} in a struct or "
                                   f"union")
                continue
            if member.get(_AT_external) or member.get(_AT_declaration):
                continue  # a static member: not part of the layout
            target = member.get(_AT_type)
            if target is None:
                type_number = 0
            else:
                type_number = local.get(target)
                if type_number is None:
                    type_number = self._number(target)
                if type_number == _FAILED:
                    self.skips.add("member of a skipped type left out")
                    continue
            name = member.get(_AT_name, "")
            bit_size = member.get(_AT_bit_size)
            if bit_size:
                bitfields = True
                bit_offset = self._member_bit_offset(member, bit_size)
            else:
                bit_offset = member.get(_AT_data_bit_offset)
                if bit_offset is None:
                    bit_offset = (member.get(_AT_data_member_location) or 0) * 8
            if _ANNOTATIONS in member:
                self._collect_decl_tags(member[_ANNOTATIONS], len(items))
            # With kind_flag the word is bitfield_size << 24 | bit_offset (size 0 for the
            # members that are not bitfields: the same word as without).
            append((name, type_number, (bit_size << 24) | bit_offset if bit_size else bit_offset))
        kind = f.UNION if union else f.STRUCT
        return (kind, struct_name, int(bitfields), attrs.get(c.AT_byte_size, 0), 0,
                tuple(items))

    def _member_bit_offset(self, member: dict, bit_size: int | None) -> int:
        data_bit_offset = member.get(c.AT_data_bit_offset)
        if data_bit_offset is not None:
            return data_bit_offset
        byte_offset = member.get(c.AT_data_member_location) or 0
        old_bit_offset = member.get(c.AT_bit_offset)
        if not bit_size or old_bit_offset is None:
            return byte_offset * 8
        # DWARF <= 4: DW_AT_bit_offset counts from the most significant bit of the
        # storage unit (DW_AT_byte_size, else the member type's size).
        storage = member.get(c.AT_byte_size)
        if storage is None:
            storage = self._byte_size(member.get(c.AT_type))
        if self.little_endian:
            return byte_offset * 8 + storage * 8 - old_bit_offset - bit_size
        return byte_offset * 8 + old_bit_offset

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
            count = sub.get(c.AT_count)
            if count is None:
                upper = sub.get(c.AT_upper_bound)
                if upper is None:
                    count = 0
                else:
                    lower = sub.get(c.AT_lower_bound) or 0
                    count = max(_signed64(upper) - _signed64(lower) + 1, 0)
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
            if tag == _PLAIN_ENUMERATOR:
                enumerator_name, value = enumerator
                values.append((enumerator_name or "", value or 0))
                continue
            if tag != c.TAG_enumerator:
                self.skips.add(f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))} in an enum")
                continue
            values.append((enumerator.get(c.AT_name, ""), enumerator.get(c.AT_const_value) or 0))
        if size <= 4 or "enum64" not in self.features:
            if size > 4:  # without ENUM64, as pahole's skip_encoding_btf_enum64
                return (f.ENUM, name, 0, size, 0, tuple((n, v & 0xFFFFFFFF) for n, v in values))
            negative = any(v < 0 for _, v in values)
            items = tuple((n, v & 0xFFFFFFFF) for n, v in values)
            return (f.ENUM, name, int(negative), size, 0, items)
        items = tuple((n, v & 0xFFFFFFFFFFFFFFFF) for n, v in values)
        return (f.ENUM64, name, int(self._signed_type(attrs.get(c.AT_type))), size, 0, items)

    def _signed_type(self, offset: int | None) -> bool:
        for _ in range(64):
            die = self.dies.get(offset) if offset is not None else None
            if die is None:
                return False
            if die.tag == c.TAG_base_type:
                return die.attrs.get(c.AT_encoding) in _SIGNED_ENCODINGS
            if die.tag not in _SEE_THROUGH_TAGS:
                return False
            offset = die.attrs.get(c.AT_type)
        return False

    def _func_proto(self, die: TypeDie) -> Record:
        params = []
        for tag, param in die.children:
            if tag == _PLAIN_PARAMETER:
                param_name, target = param
                params.append((param_name or "", self._type_number(target)))
            elif tag == c.TAG_formal_parameter:
                params.append((param.get(c.AT_name, ""), self._ref(param)))
            elif tag == c.TAG_unspecified_parameters:
                params.append(("", 0))
            elif tag != c.TAG_LLVM_annotation:
                self.skips.add(f"DW_TAG_{c.TAG_NAMES.get(tag, hex(tag))} in a prototype")
        return (f.FUNC_PROTO, "", 0, self._ref(die.attrs), 0, tuple(params))

    # -- functions and variables ------------------------------------------------------

    def _declared(self, attrs: dict) -> dict:
        """A definition's attributes over those of the declaration it completes
        (DW_AT_specification), which hold its name, type and external flag."""
        spec = attrs.get(c.AT_specification)
        if spec is None:
            return attrs
        merged = dict(attrs)
        for _ in range(8):
            target = self.dies.get(spec)
            if target is None:
                break
            for key, value in target.attrs.items():
                merged.setdefault(key, value)
            spec = target.attrs.get(c.AT_specification)
            if spec is None:
                break
        return merged

    def _functions(self) -> None:
        symbols = self.context.symbols
        # Out-of-line copies of inlined functions: where their code is, by origin DIE.
        copies: dict[int, list[int]] = {}
        definitions = []
        for offset, die in self.programs:
            if die.tag != c.TAG_subprogram or die.attrs.get(c.AT_declaration):
                continue
            origin = die.attrs.get(c.AT_abstract_origin)
            if origin is None:
                definitions.append((offset, die))
            elif c.AT_low_pc in die.attrs:
                copies.setdefault(origin, []).append(die.attrs[c.AT_low_pc])
        for offset, die in definitions:
            attrs = self._declared(die.attrs)
            name = attrs.get(c.AT_name)
            if not name:
                continue
            if symbols is None:
                addresses = frozenset() if attrs.get(c.AT_external) else None
            else:
                addresses = symbols.functions.get(name)
            if addresses is None:
                continue
            self._function(name, attrs, die.children, addresses,
                           [attrs.get(c.AT_low_pc), *copies.get(offset, ())])

    def _function(self, name: str, attrs: dict, children: list, addresses: frozenset[int],
                  code_at: list) -> None:
        self.decl_tags = []
        params = []
        for tag, param in children:
            if tag == _PLAIN_PARAMETER or tag == c.TAG_formal_parameter:
                if tag == _PLAIN_PARAMETER:
                    param_name, target = param
                else:
                    param_name, target = param.get(c.AT_name), param.get(_AT_type)
                if not param_name:
                    return  # pahole encodes only functions with every parameter named
                param_type = self._type_number(target)
                if param_type == _FAILED:
                    self.skips.add("function with a parameter of a skipped type")
                    return
                params.append((param_name, param_type))
                if tag == c.TAG_formal_parameter and c.ANNOTATIONS in param:
                    self._collect_decl_tags(param[c.ANNOTATIONS], len(params) - 1)
            elif tag == c.TAG_unspecified_parameters:
                params.append(("", 0))
        returns = self._ref(attrs)
        if returns == _FAILED:
            self.decl_tags = []
            self.skips.add("function returning a skipped type")
            return
        self._collect_decl_tags(children, -1)
        flags = FUNC_CANDIDATE
        if any(address in addresses for address in code_at if address is not None):
            flags |= FUNC_LINKED
        if attrs.get(c.AT_calling_convention) == c.CC_nocall:
            flags |= FUNC_NOCALL
        proto = self._add((f.FUNC_PROTO, "", 0, returns, 0, tuple(params)))
        func = self._add((f.FUNC, name, 0, proto, flags, ()))
        symbols = self.context.symbols
        if (symbols is not None and name in symbols.kfuncs
                and "decl_tag_kfuncs" in self.features):
            self.decl_tags.append((KFUNC_TAG, -1))
        self._add_decl_tags(func)

    def _variables(self) -> None:
        symbols = self.context.symbols
        if symbols is None:
            return
        every_section = "global_var" in self.features
        for _, die in self.programs:
            if die.tag != c.TAG_variable or die.attrs.get(c.AT_declaration):
                continue
            address = die.attrs.get(c.AT_location)
            if address is None or address.__class__ is not int:
                continue
            attrs = self._declared(die.attrs)
            name = attrs.get(c.AT_name)
            if not name:
                continue
            place = symbols.place_variable(name, address, every_section)
            if place is None:
                continue
            if (address == 0 and not symbols.relocatable and place[0] == PERCPU_SECTION
                    and c.AT_name not in die.attrs):
                # pahole 1.24 takes address 0 for one of the unnamed helper variables
                # (__UNIQUE_ID, __ADDRESSABLE) unless the DIE names itself; x86-64's
                # fixed_percpu_data is named only by its declaration (docs/ENCODE.md).
                self.skips.add(UNNAMED_PERCPU_AT_ZERO)
                continue
            var_type = self._ref(attrs)
            if var_type == _FAILED or var_type == 0:
                self.skips.add("variable of a skipped or void type")
                continue
            linkage = f.LINKAGE_GLOBAL if attrs.get(c.AT_external) else f.LINKAGE_STATIC
            var = self._add((f.VAR, name, 0, var_type, (linkage, *place), ()))
            self.decl_tags = []
            self._collect_decl_tags(die.children, -1)
            self._add_decl_tags(var)


_SUPPORTED_TAGS = frozenset({
    c.TAG_pointer_type, c.TAG_const_type, c.TAG_volatile_type, c.TAG_restrict_type,
    c.TAG_typedef, c.TAG_structure_type, c.TAG_union_type, c.TAG_class_type,
    c.TAG_array_type, c.TAG_enumeration_type, c.TAG_subroutine_type, c.TAG_atomic_type,
})
# Types that hold their referenced type by value: they fail with it.
_BY_VALUE_TAGS = frozenset({c.TAG_typedef, c.TAG_const_type, c.TAG_volatile_type,
                            c.TAG_restrict_type, c.TAG_array_type, c.TAG_subroutine_type})


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def convert_unit(unit: UnitTypes, little_endian: bool, skips: Skips,
                 context: ConvertContext | None = None) -> list[Record | None]:
    """The unit's BTF records (index = unit-local number, [0] None for void)."""
    return UnitConverter(unit, little_endian, skips, context).convert()
