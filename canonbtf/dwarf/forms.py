"""Every DW_FORM this encoder knows: how its bytes are laid out and what class of value
it carries, declared once (as pyelftools' `DWARFStructs._create_dw_form` does).

Both DIE readers take their form sets from here: the fast reader (dies.py) to generate
its readers, the reference reader (reference.py) to decide which values it keeps. The
decoding stays each reader's own, so the reference still checks the fast reader; only
the declaration is shared (tests/test_forms.py holds it to pyelftools' table).
"""

from __future__ import annotations

from ..spec import dwarf_numbers as c
from ..tuples import named_tuple

# Layouts that are not a fixed byte count.
OFFSET = "offset"  # the unit's offset size (4 or 8 bytes)
ADDRESS = "address"  # the unit's address size
REF_ADDR = "ref_addr"  # the address size in DWARF 2, the offset size from DWARF 3
ULEB = "uleb"
SLEB = "sleb"
CSTRING = "cstring"  # bytes up to a NUL
BLOCK = "block"  # a ULEB128 length, then that many bytes
BLOCK1 = "block1"  # a 1-, 2- or 4-byte length, then that many bytes
BLOCK2 = "block2"
BLOCK4 = "block4"
INDIRECT = "indirect"  # a ULEB128 form code, then a value of that form
# The byte count of a block form's length field (BLOCK: a ULEB128).
BLOCK_LENGTH_SIZES = {BLOCK1: 1, BLOCK2: 2, BLOCK4: 4}


class Form(named_tuple("Form", "layout cls")):
    """A form's layout (a byte count, or one of the names above: int | str) and class
    (DWARF 5 section 7.5.5's classes, split where the readers treat forms apart). A
    named tuple (tuples.py): typing.NamedTuple's import was milliseconds of every run."""

    __slots__ = ()


FORMS: dict[int, Form] = {
    c.FORM_addr: Form(ADDRESS, "address"),
    c.FORM_addrx: Form(ULEB, "addrx"),
    c.FORM_addrx1: Form(1, "addrx"),
    c.FORM_addrx2: Form(2, "addrx"),
    c.FORM_addrx3: Form(3, "addrx"),
    c.FORM_addrx4: Form(4, "addrx"),
    c.FORM_GNU_addr_index: Form(ULEB, "addrx"),
    c.FORM_block: Form(BLOCK, "block"),
    c.FORM_block1: Form(BLOCK1, "block"),
    c.FORM_block2: Form(BLOCK2, "block"),
    c.FORM_block4: Form(BLOCK4, "block"),
    c.FORM_exprloc: Form(BLOCK, "exprloc"),
    c.FORM_data1: Form(1, "constant"),
    c.FORM_data2: Form(2, "constant"),
    c.FORM_data4: Form(4, "constant"),
    c.FORM_data8: Form(8, "constant"),
    c.FORM_sdata: Form(SLEB, "constant"),
    c.FORM_udata: Form(ULEB, "constant"),
    c.FORM_implicit_const: Form(0, "constant"),  # the value is in the abbreviation
    c.FORM_data16: Form(16, "data16"),  # a constant too wide for an integer here
    c.FORM_flag: Form(1, "flag"),
    c.FORM_flag_present: Form(0, "flag"),
    c.FORM_ref1: Form(1, "reference"),  # the references: unit-relative
    c.FORM_ref2: Form(2, "reference"),
    c.FORM_ref4: Form(4, "reference"),
    c.FORM_ref8: Form(8, "reference"),
    c.FORM_ref_udata: Form(ULEB, "reference"),
    c.FORM_ref_addr: Form(REF_ADDR, "ref_addr"),  # an offset in .debug_info
    c.FORM_ref_sig8: Form(8, "ref_sig8"),  # a type unit's signature
    c.FORM_ref_sup4: Form(4, "ref_sup"),  # into a supplementary file
    c.FORM_ref_sup8: Form(8, "ref_sup"),
    c.FORM_GNU_ref_alt: Form(OFFSET, "ref_sup"),
    c.FORM_string: Form(CSTRING, "string"),
    c.FORM_strp: Form(OFFSET, "string"),
    c.FORM_line_strp: Form(OFFSET, "string"),
    c.FORM_strx: Form(ULEB, "string"),
    c.FORM_strx1: Form(1, "string"),
    c.FORM_strx2: Form(2, "string"),
    c.FORM_strx3: Form(3, "string"),
    c.FORM_strx4: Form(4, "string"),
    c.FORM_GNU_str_index: Form(ULEB, "string"),
    c.FORM_strp_sup: Form(OFFSET, "string_sup"),  # in a supplementary file
    c.FORM_GNU_strp_alt: Form(OFFSET, "string_sup"),
    c.FORM_sec_offset: Form(OFFSET, "sec_offset"),
    c.FORM_loclistx: Form(ULEB, "loclist"),
    c.FORM_rnglistx: Form(ULEB, "rnglist"),
    c.FORM_indirect: Form(INDIRECT, "indirect"),
}


def forms_of(*classes: str) -> frozenset[int]:
    """The forms of the given classes."""
    return frozenset(form for form, spec in FORMS.items() if spec.cls in classes)


def forms_laid_out(*layouts: int | str) -> frozenset[int]:
    """The forms with one of the given layouts."""
    return frozenset(form for form, spec in FORMS.items() if spec.layout in layouts)


STRING_FORMS = forms_of("string")
STRX_FORMS = STRING_FORMS - {c.FORM_string, c.FORM_strp, c.FORM_line_strp}
ADDRX_FORMS = forms_of("addrx")
BLOCK_FORMS = forms_of("block", "exprloc")
CU_REF_FORMS = forms_of("reference")
CONST_FORMS = forms_of("constant")
