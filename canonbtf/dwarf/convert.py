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
  Without the enum64 feature every enum is an ENUM without kind_flag, its values u32.
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
  (functions.py decides there which names keep one FUNC). An out-of-line copy of the
  definition whose parameters differ (a `.part` piece) adds a FUNC_PIECE candidate with
  its own FUNC_PROTO, for the parent's comparison only.
- variables: a unit-level variable at a fixed address (one DW_OP_addr) that a symbol of
  its name confirms becomes a VAR whose `extra` is (linkage, section, offset, size) until
  the parent builds the DATASECs (functions.py).
- annotations (clang): btf_type_tag on a pointer becomes a TYPE_TAG chain between the
  PTR and its target (the last annotation next to the PTR, as pahole does); btf_decl_tag
  on a struct, union, member, typedef, function, parameter or variable becomes a
  DECL_TAG (component_idx -1, or the member or parameter index).
"""

from __future__ import annotations

from ..btf import format as f
from ..spec import dwarf_numbers as c
from ..spec.features import FUNC_CANDIDATE, FUNC_LINKED, FUNC_MOVED, FUNC_NOCALL, FUNC_PIECE
from .locations import unexpected_register
from .numbering import FAILED, ConvertContext, Record, Skips
from .type_records import STRUCT_TAGS, TypeRecords
from .unit_types import TypeDie, UnitTypes

__all__ = ["ConvertContext", "Record", "Skips", "UnitConverter", "convert_unit"]

# Types numbered without looking at what they refer to (supported, never failing).
_INDEPENDENT_TAGS = STRUCT_TAGS | {c.TAG_pointer_type, c.TAG_enumeration_type}
_PROGRAM_TAGS = frozenset({c.TAG_subprogram, c.TAG_variable})
_TAG_pointer_type, _TAG_formal_parameter = c.TAG_pointer_type, c.TAG_formal_parameter
_TAG_unspecified_parameters = c.TAG_unspecified_parameters
_AT_type = c.AT_type
KFUNC_TAG = "bpf_kfunc"


class UnitConverter(TypeRecords):
    """Converts one unit; `convert()` returns its records. The layers below: the records
    of type DIEs (type_records.py) on their numbering (numbering.py)."""

    def __init__(self, unit: UnitTypes, little_endian: bool, skips: Skips,
                 context: ConvertContext | None = None):
        super().__init__(unit, little_endian, skips, context)
        self.unit_locations = unit.locations
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
                    target = self._type_number(die.attrs.get(_AT_type))
                    records[number] = (f.PTR, "", 0, 0 if target == FAILED else target, 0, ())
                    continue
                records[number] = self._record(die)
                if self.decl_tags:
                    self._add_decl_tags(number)
        if "func" in self.features:
            self._functions()
        if "var" in self.features or "global_var" in self.features:
            self._variables()
        return self.records

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
        # Out-of-line copies of inlined functions (and clones): by origin DIE.
        copies: dict[int, list[TypeDie]] = {}
        definitions = []
        for offset, die in self.programs:
            if die.tag != c.TAG_subprogram or die.attrs.get(c.AT_declaration):
                continue
            origin = die.attrs.get(c.AT_abstract_origin)
            if origin is None:
                definitions.append((offset, die))
            elif c.AT_low_pc in die.attrs:
                copies.setdefault(origin, []).append(die)
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
            self._function(name, attrs, die.children, addresses, copies.get(offset, ()))

    def _moved(self, children: list) -> bool:
        """Whether a parameter among `children` is in an unexpected register."""
        registers = self.context.parameter_registers
        index = 0
        for tag, param in children:
            if tag != _TAG_formal_parameter:
                continue
            if index == len(registers):
                break
            location = param[2]
            if location is not None and self.unit_locations is not None and \
                    unexpected_register(self.unit_locations.summary(location),
                                        registers[index]):
                return True
            index += 1
        return False

    def _function(self, name: str, attrs: dict, children: list, addresses: frozenset[int],
                  copies: list[TypeDie]) -> None:
        self.decl_tags = []
        params = []
        for tag, param in children:
            if tag == _TAG_formal_parameter:
                param_name, target, _, _, annotations = param
                if not param_name:
                    return  # pahole encodes only functions with every parameter named
                param_type = self._type_number(target)
                if param_type == FAILED:
                    self.skips.add("function with a parameter of a skipped type")
                    return
                params.append((param_name, param_type))
                if annotations:
                    self._collect_decl_tags(annotations, len(params) - 1)
            elif tag == c.TAG_unspecified_parameters:
                params.append(("", 0))
        returns = self._ref(attrs)
        if returns == FAILED:
            self.decl_tags = []
            self.skips.add("function returning a skipped type")
            return
        self._collect_decl_tags(children, -1)
        flags = FUNC_CANDIDATE
        code_at = [attrs.get(c.AT_low_pc), *(copy.attrs[c.AT_low_pc] for copy in copies)]
        if any(address in addresses for address in code_at if address is not None):
            flags |= FUNC_LINKED
        if attrs.get(c.AT_calling_convention) == c.CC_nocall:
            flags |= FUNC_NOCALL
        if self.context.parameter_registers and (
                self._moved(children) or any(self._moved(copy.children) for copy in copies)):
            flags |= FUNC_MOVED
        proto = self._add((f.FUNC_PROTO, "", 0, returns, 0, tuple(params)))
        func = self._add((f.FUNC, name, 0, proto, flags, ()))
        symbols = self.context.symbols
        if (symbols is not None and name in symbols.kfuncs
                and "decl_tag_kfuncs" in self.features):
            self.decl_tags.append((KFUNC_TAG, -1))
        self._add_decl_tags(func)
        for copy in copies:
            items = _copy_parameters(copy.children, params)
            if items is not None:
                piece = self._add((f.FUNC_PROTO, "", 0, returns, 0, items))
                self._add((f.FUNC, name, 0, piece, FUNC_CANDIDATE | FUNC_PIECE, ()))

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
            var_type = self._ref(attrs)
            if var_type == FAILED or var_type == 0:
                self.skips.add("variable of a skipped or void type")
                continue
            linkage = f.LINKAGE_GLOBAL if attrs.get(c.AT_external) else f.LINKAGE_STATIC
            var = self._add((f.VAR, name, 0, var_type, (linkage, *place), ()))
            self.decl_tags = []
            self._collect_decl_tags(die.children, -1)
            self._add_decl_tags(var)


def _copy_parameters(copied: list, params: list) -> tuple | None:
    """The parameters of an out-of-line copy of a definition (the copy's children
    `copied`; the definition's parameters `params`, "..." as ("", 0)) in the copy's
    order; None when they are the definition's. pahole 1.31 reads such a copy (a `.part`
    piece, a clone) as one more definition of the name, and gcc may list a piece's
    parameters in another order, or fewer of them.

    A copy's parameter names the definition's by DW_AT_abstract_origin. The definition's
    parameters are its first children, so their offsets rise with their index: when
    the copy lists as many, each with an origin of its own, the rank of an origin among
    the copy's is the index of the parameter it stands for. When it lists another
    number, only the number counts (pahole's "param count mismatch")."""
    listed = [(tag, fields) for tag, fields in copied
              if tag == _TAG_formal_parameter or tag == _TAG_unspecified_parameters]
    if len(listed) != len(params):
        return tuple(("", 0) for _ in listed)
    named = [p for p in params if p[0]]
    origins = [fields[3] for tag, fields in listed if tag == _TAG_formal_parameter]
    if len(origins) != len(named) or None in origins or len(set(origins)) != len(origins):
        return None
    by_origin = dict(zip(sorted(origins), named))
    items = tuple(by_origin[fields[3]] if tag == _TAG_formal_parameter else ("", 0)
                  for tag, fields in listed)
    return None if items == tuple(params) else items


def convert_unit(unit: UnitTypes, little_endian: bool, skips: Skips,
                 context: ConvertContext | None = None) -> list[Record | None]:
    """The unit's BTF records (index = unit-local number, [0] None for void)."""
    return UnitConverter(unit, little_endian, skips, context).convert()
