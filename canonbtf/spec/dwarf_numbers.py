"""The DWARF numbers the type encoder uses (DWARF 5 standard, section 7)."""

from __future__ import annotations

# Tags.
TAG_array_type = 0x01
TAG_class_type = 0x02
TAG_enumeration_type = 0x04
TAG_formal_parameter = 0x05
TAG_member = 0x0D
TAG_pointer_type = 0x0F
TAG_reference_type = 0x10
TAG_compile_unit = 0x11
TAG_string_type = 0x12
TAG_structure_type = 0x13
TAG_subroutine_type = 0x15
TAG_typedef = 0x16
TAG_union_type = 0x17
TAG_unspecified_parameters = 0x18
TAG_variant = 0x19
TAG_inheritance = 0x1C
TAG_ptr_to_member_type = 0x1F
TAG_set_type = 0x20
TAG_subrange_type = 0x21
TAG_subprogram = 0x2E
TAG_base_type = 0x24
TAG_const_type = 0x26
TAG_enumerator = 0x28
TAG_file_type = 0x29
TAG_packed_type = 0x2D
TAG_variant_part = 0x33
TAG_variable = 0x34
TAG_volatile_type = 0x35
TAG_restrict_type = 0x37
TAG_interface_type = 0x38
TAG_unspecified_type = 0x3B
TAG_partial_unit = 0x3C
TAG_shared_type = 0x40
TAG_rvalue_reference_type = 0x42
TAG_coarray_type = 0x44
TAG_generic_subrange = 0x45
TAG_dynamic_type = 0x46
TAG_atomic_type = 0x47
TAG_immutable_type = 0x4B
TAG_LLVM_annotation = 0x6000  # clang's btf_decl_tag / btf_type_tag

TAG_NAMES = {
    TAG_array_type: "array_type", TAG_class_type: "class_type",
    TAG_enumeration_type: "enumeration_type", TAG_formal_parameter: "formal_parameter",
    TAG_member: "member", TAG_pointer_type: "pointer_type",
    TAG_reference_type: "reference_type", TAG_string_type: "string_type",
    TAG_structure_type: "structure_type", TAG_subroutine_type: "subroutine_type",
    TAG_typedef: "typedef", TAG_union_type: "union_type",
    TAG_unspecified_parameters: "unspecified_parameters", TAG_variant: "variant",
    TAG_inheritance: "inheritance", TAG_ptr_to_member_type: "ptr_to_member_type",
    TAG_set_type: "set_type", TAG_subrange_type: "subrange_type",
    TAG_base_type: "base_type", TAG_const_type: "const_type",
    TAG_enumerator: "enumerator", TAG_file_type: "file_type",
    TAG_packed_type: "packed_type", TAG_variant_part: "variant_part",
    TAG_volatile_type: "volatile_type", TAG_restrict_type: "restrict_type",
    TAG_interface_type: "interface_type", TAG_unspecified_type: "unspecified_type",
    TAG_shared_type: "shared_type", TAG_rvalue_reference_type: "rvalue_reference_type",
    TAG_coarray_type: "coarray_type", TAG_generic_subrange: "generic_subrange",
    TAG_dynamic_type: "dynamic_type", TAG_atomic_type: "atomic_type",
    TAG_immutable_type: "immutable_type", TAG_subprogram: "subprogram",
    TAG_variable: "variable", TAG_LLVM_annotation: "LLVM_annotation",
}

# Tags of DIEs that are types: each becomes a BTF type, void, or a counted skip.
TYPE_TAGS = frozenset({
    TAG_array_type, TAG_class_type, TAG_enumeration_type, TAG_pointer_type,
    TAG_reference_type, TAG_string_type, TAG_structure_type, TAG_subroutine_type,
    TAG_typedef, TAG_union_type, TAG_ptr_to_member_type, TAG_set_type, TAG_base_type,
    TAG_const_type, TAG_file_type, TAG_packed_type, TAG_volatile_type, TAG_restrict_type,
    TAG_interface_type, TAG_unspecified_type, TAG_shared_type, TAG_rvalue_reference_type,
    TAG_coarray_type, TAG_dynamic_type, TAG_atomic_type, TAG_immutable_type,
})
# Tags of DIEs read only as children of a type DIE (members, values, dimensions, params)
# or of a function or variable; annotations also as children of members and parameters.
CHILD_TAGS = frozenset({
    TAG_member, TAG_enumerator, TAG_subrange_type, TAG_formal_parameter,
    TAG_unspecified_parameters, TAG_generic_subrange, TAG_inheritance, TAG_variant_part,
    TAG_LLVM_annotation,
})
# Child tags that are not counted as skipped outside a type: the parameters of function
# declarations and concrete instances, annotations of local variables.
QUIET_CHILD_TAGS = frozenset({TAG_formal_parameter, TAG_unspecified_parameters,
                              TAG_LLVM_annotation})
UNIT_TAGS = frozenset({TAG_compile_unit, TAG_partial_unit})

# Attributes.
AT_location = 0x02
AT_name = 0x03
AT_language = 0x13
AT_byte_size = 0x0B
AT_bit_offset = 0x0C
AT_bit_size = 0x0D
AT_low_pc = 0x11
AT_const_value = 0x1C
AT_lower_bound = 0x22
AT_upper_bound = 0x2F
AT_abstract_origin = 0x31
AT_calling_convention = 0x36
AT_count = 0x37
AT_data_member_location = 0x38
AT_declaration = 0x3C
AT_encoding = 0x3E
AT_external = 0x3F
AT_specification = 0x47
AT_type = 0x49
AT_signature = 0x69
AT_data_bit_offset = 0x6B
AT_str_offsets_base = 0x72
AT_addr_base = 0x73
AT_loclists_base = 0x8C
# Not a DWARF attribute: the last field of every child (CHILD_FIELDS), its own children
# (annotations of a member or parameter): a list when the DIE has children, else None.
ANNOTATIONS = -1

# DW_AT_calling_convention: the function cannot be called with the normal ABI (clang
# marks functions whose signature an optimization changed).
CC_nocall = 0x03

# How an attribute's value is read: the kind of value the encoder wants from it.
V_STRING = "string"  # a name
V_REF = "ref"  # a DIE offset in .debug_info
V_CONST = "const"  # an integer constant; anything else (expressions, references) is None
V_LOCATION = "location"  # a constant, or a DW_OP_plus_uconst / DW_OP_constu expression
V_FLAG = "flag"
V_SECTION_OFFSET = "section offset"
V_TEXT = "text"  # a string when the form is a string form, else nothing (annotation values)
V_ADDRESS = "address"  # DW_FORM_addr, or an index into .debug_addr (DW_FORM_addrx*)
V_ADDRESS_EXPR = "address expression"  # a location that is one DW_OP_addr / DW_OP_addrx
# A parameter's location: its summary (locations.py) when an expression, else a
# LocationList / LocationListIndex the converter sums up when it needs to.
V_PARAM_LOCATION = "parameter location"

TYPE_ATTRS = {
    AT_name: V_STRING, AT_type: V_REF, AT_byte_size: V_CONST, AT_declaration: V_FLAG,
    AT_encoding: V_CONST, AT_bit_size: V_CONST, AT_signature: V_REF,
}
WANTED_ATTRS = {
    TAG_member: {
        AT_name: V_STRING, AT_type: V_REF, AT_data_member_location: V_LOCATION,
        AT_data_bit_offset: V_CONST, AT_bit_offset: V_CONST, AT_bit_size: V_CONST,
        AT_byte_size: V_CONST, AT_declaration: V_FLAG, AT_external: V_FLAG,
    },
    TAG_enumerator: {AT_name: V_STRING, AT_const_value: V_CONST},
    TAG_subrange_type: {AT_type: V_REF, AT_lower_bound: V_CONST, AT_upper_bound: V_CONST,
                        AT_count: V_CONST},
    # A concrete copy's parameter names its abstract one (DW_AT_abstract_origin).
    TAG_formal_parameter: {AT_name: V_STRING, AT_type: V_REF, AT_location: V_PARAM_LOCATION,
                           AT_abstract_origin: V_REF},
    TAG_unspecified_parameters: {},
    TAG_LLVM_annotation: {AT_name: V_STRING, AT_const_value: V_TEXT},
    TAG_subprogram: {
        AT_name: V_STRING, AT_type: V_REF, AT_declaration: V_FLAG, AT_external: V_FLAG,
        AT_low_pc: V_ADDRESS, AT_abstract_origin: V_REF, AT_specification: V_REF,
        AT_calling_convention: V_CONST,
    },
    TAG_variable: {
        AT_name: V_STRING, AT_type: V_REF, AT_declaration: V_FLAG, AT_external: V_FLAG,
        AT_specification: V_REF, AT_location: V_ADDRESS_EXPR,
    },
    TAG_generic_subrange: {},
    TAG_inheritance: {},
    TAG_variant_part: {},
    # DW_AT_language: pahole's --lang_exclude (pahole/run.py).
    TAG_compile_unit: {AT_str_offsets_base: V_SECTION_OFFSET, AT_addr_base: V_SECTION_OFFSET,
                       AT_loclists_base: V_SECTION_OFFSET, AT_language: V_CONST},
    TAG_partial_unit: {AT_str_offsets_base: V_SECTION_OFFSET, AT_addr_base: V_SECTION_OFFSET,
                       AT_loclists_base: V_SECTION_OFFSET, AT_language: V_CONST},
}
for _tag in TYPE_TAGS:
    WANTED_ATTRS[_tag] = TYPE_ATTRS
# A child DIE (of a type, function or variable; or an annotation of a member or parameter)
# is (tag, values): values in the order of CHILD_FIELDS[tag], None where the DIE has no
# such attribute. A field that is a tuple of attributes is a group: None when the DIE has
# none of them, else their values in order. One shape for every child, built as a tuple:
# a dict per member instead cost 6.5 % more instructions reading and converting a
# kernel's members (valgrind); a member's rarely present attributes in one group rather
# than six fields of their own took reading 1/80 of the 6.1 kernel's units from 1,335 to
# 1,325 M instructions and converting them from 601 to 582 M (valgrind, collector paused).
MEMBER_LAYOUT = (AT_data_bit_offset, AT_bit_offset, AT_bit_size, AT_byte_size,
                 AT_declaration, AT_external)  # bit-fields and static members
CHILD_FIELDS = {tag: (*WANTED_ATTRS[tag], ANNOTATIONS) for tag in CHILD_TAGS}
CHILD_FIELDS[TAG_member] = (AT_name, AT_type, AT_data_member_location, MEMBER_LAYOUT,
                            ANNOTATIONS)

# Base type encodings (DW_ATE_*).
ATE_boolean = 0x02
ATE_complex_float = 0x03
ATE_float = 0x04
ATE_signed = 0x05
ATE_signed_char = 0x06
ATE_unsigned = 0x07
ATE_unsigned_char = 0x08
ATE_imaginary_float = 0x09
ATE_decimal_float = 0x0F

# Expression opcodes a member location may use, and a variable's fixed address.
OP_addr = 0x03
OP_constu = 0x10
OP_plus_uconst = 0x23
OP_addrx = 0xA1
OP_GNU_addr_index = 0xFB
# ... and those that say where a parameter is (locations.py).
OP_reg0 = 0x50
OP_reg31 = 0x6F
OP_stack_value = 0x9F
OP_entry_value = 0xA3
OP_GNU_entry_value = 0xF3

# Forms.
FORM_addr = 0x01
FORM_block2 = 0x03
FORM_block4 = 0x04
FORM_data2 = 0x05
FORM_data4 = 0x06
FORM_data8 = 0x07
FORM_string = 0x08
FORM_block = 0x09
FORM_block1 = 0x0A
FORM_data1 = 0x0B
FORM_flag = 0x0C
FORM_sdata = 0x0D
FORM_strp = 0x0E
FORM_udata = 0x0F
FORM_ref_addr = 0x10
FORM_ref1 = 0x11
FORM_ref2 = 0x12
FORM_ref4 = 0x13
FORM_ref8 = 0x14
FORM_ref_udata = 0x15
FORM_indirect = 0x16
FORM_sec_offset = 0x17
FORM_exprloc = 0x18
FORM_flag_present = 0x19
FORM_strx = 0x1A
FORM_addrx = 0x1B
FORM_ref_sup4 = 0x1C
FORM_strp_sup = 0x1D
FORM_data16 = 0x1E
FORM_line_strp = 0x1F
FORM_ref_sig8 = 0x20
FORM_implicit_const = 0x21
FORM_loclistx = 0x22
FORM_rnglistx = 0x23
FORM_ref_sup8 = 0x24
FORM_strx1 = 0x25
FORM_strx2 = 0x26
FORM_strx3 = 0x27
FORM_strx4 = 0x28
FORM_addrx1 = 0x29
FORM_addrx2 = 0x2A
FORM_addrx3 = 0x2B
FORM_addrx4 = 0x2C
FORM_GNU_addr_index = 0x1F01
FORM_GNU_str_index = 0x1F02
FORM_GNU_ref_alt = 0x1F20
FORM_GNU_strp_alt = 0x1F21

# e_machine -> DWARF numbers of the argument registers, in order (pahole's
# arch__set_register_params for the architectures checked here): a fact of each ABI, here
# so that a module's run need not import dwarf/locations.py for it.
PARAMETER_REGISTERS = {
    "EM_X86_64": (5, 4, 1, 2, 8, 9),  # rdi, rsi, rdx, rcx, r8, r9
    "EM_AARCH64": (0, 1, 2, 3, 4, 5, 6, 7),  # x0-x7
}
