/* The DWARF numbers the compiled core uses, as canonbtf/dwarf/constants.py declares
 * them (tests/test_core.py checks that every one here equals its namesake there). */
#ifndef CANONBTF_DWARF_H
#define CANONBTF_DWARF_H

enum {
    TAG_array_type = 0x01, TAG_class_type = 0x02, TAG_enumeration_type = 0x04,
    TAG_formal_parameter = 0x05, TAG_member = 0x0D, TAG_pointer_type = 0x0F,
    TAG_reference_type = 0x10, TAG_compile_unit = 0x11, TAG_string_type = 0x12,
    TAG_structure_type = 0x13, TAG_subroutine_type = 0x15, TAG_typedef = 0x16,
    TAG_union_type = 0x17, TAG_unspecified_parameters = 0x18, TAG_inheritance = 0x1C,
    TAG_ptr_to_member_type = 0x1F, TAG_set_type = 0x20, TAG_subrange_type = 0x21,
    TAG_base_type = 0x24, TAG_const_type = 0x26, TAG_enumerator = 0x28,
    TAG_file_type = 0x29, TAG_packed_type = 0x2D, TAG_subprogram = 0x2E,
    TAG_variant_part = 0x33, TAG_variable = 0x34, TAG_volatile_type = 0x35,
    TAG_restrict_type = 0x37, TAG_interface_type = 0x38, TAG_unspecified_type = 0x3B,
    TAG_partial_unit = 0x3C, TAG_shared_type = 0x40, TAG_rvalue_reference_type = 0x42,
    TAG_coarray_type = 0x44, TAG_generic_subrange = 0x45, TAG_dynamic_type = 0x46,
    TAG_atomic_type = 0x47, TAG_immutable_type = 0x4B, TAG_LLVM_annotation = 0x6000,
};
enum {
    AT_location = 0x02, AT_name = 0x03, AT_byte_size = 0x0B, AT_bit_offset = 0x0C,
    AT_bit_size = 0x0D, AT_low_pc = 0x11, AT_const_value = 0x1C, AT_lower_bound = 0x22,
    AT_upper_bound = 0x2F, AT_abstract_origin = 0x31, AT_calling_convention = 0x36,
    AT_count = 0x37, AT_data_member_location = 0x38, AT_declaration = 0x3C,
    AT_encoding = 0x3E, AT_external = 0x3F, AT_specification = 0x47, AT_type = 0x49,
    AT_signature = 0x69, AT_data_bit_offset = 0x6B, AT_str_offsets_base = 0x72,
    AT_addr_base = 0x73, AT_loclists_base = 0x8C,
};
enum {
    FORM_addr = 0x01, FORM_block2 = 0x03, FORM_block4 = 0x04, FORM_data2 = 0x05,
    FORM_data4 = 0x06, FORM_data8 = 0x07, FORM_string = 0x08, FORM_block = 0x09,
    FORM_block1 = 0x0A, FORM_data1 = 0x0B, FORM_flag = 0x0C, FORM_sdata = 0x0D,
    FORM_strp = 0x0E, FORM_udata = 0x0F, FORM_ref_addr = 0x10, FORM_ref1 = 0x11,
    FORM_ref2 = 0x12, FORM_ref4 = 0x13, FORM_ref8 = 0x14, FORM_ref_udata = 0x15,
    FORM_indirect = 0x16, FORM_sec_offset = 0x17, FORM_exprloc = 0x18,
    FORM_flag_present = 0x19, FORM_strx = 0x1A, FORM_addrx = 0x1B, FORM_ref_sup4 = 0x1C,
    FORM_strp_sup = 0x1D, FORM_data16 = 0x1E, FORM_line_strp = 0x1F, FORM_ref_sig8 = 0x20,
    FORM_implicit_const = 0x21, FORM_loclistx = 0x22, FORM_rnglistx = 0x23,
    FORM_ref_sup8 = 0x24, FORM_strx1 = 0x25, FORM_strx2 = 0x26, FORM_strx3 = 0x27,
    FORM_strx4 = 0x28, FORM_addrx1 = 0x29, FORM_addrx2 = 0x2A, FORM_addrx3 = 0x2B,
    FORM_addrx4 = 0x2C, FORM_GNU_addr_index = 0x1F01, FORM_GNU_str_index = 0x1F02,
    FORM_GNU_ref_alt = 0x1F20, FORM_GNU_strp_alt = 0x1F21,
};
enum { OP_addr = 0x03, OP_constu = 0x10, OP_plus_uconst = 0x23, OP_addrx = 0xA1,
       OP_GNU_addr_index = 0xFB, OP_reg0 = 0x50, OP_reg31 = 0x6F, OP_stack_value = 0x9F,
       OP_entry_value = 0xA3, OP_GNU_entry_value = 0xF3 };
enum { ATE_boolean = 2, ATE_complex_float = 3, ATE_float = 4, ATE_signed = 5,
       ATE_signed_char = 6, ATE_imaginary_float = 9, ATE_decimal_float = 0xF };
enum { CC_nocall = 3 };

#endif
