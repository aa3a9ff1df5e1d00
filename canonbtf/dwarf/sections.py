"""The DWARF of an ELF file: its sections as bytes and its units, read once in the parent.

pyelftools reads the ELF (sections, compression, relocations of ET_REL objects); only the
sections the type encoder needs are loaded, because pyelftools' `get_dwarf_info()` would
read (and relocate) every debug section, which on a kernel means hundreds of MB of
location and line data nobody here uses. Unit headers are read here (`list_units`).
Workers forked after `open_dwarf()` share these bytes copy-on-write, so each section is
read once per run.
"""

from __future__ import annotations

import io
import os
import struct

from ..elf.read import ELF_TYPES, ET_REL, MACHINE_NAMES, SHT_NOBITS, SHT_RELA, ElfImage, Unusual
from ..errors import InputError, opened_input
from ..tuples import named_tuple
from .core import compiled_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (ms per run)
if TYPE_CHECKING:
    from elftools.dwarf.dwarfinfo import DWARFInfo
    from elftools.elf.elffile import ELFFile

ELF_MAGIC = b"\x7fELF"

# Sections the encoder reads; the first is required.
SECTION_NAMES = (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str",
                 ".debug_str_offsets", ".debug_addr", ".debug_loclists", ".debug_loc")
# Read unrelocated: the encoder takes only the shape of location lists and their
# expressions from them, never an address (relocating xfs.ko's would cost time).
LOCATION_SECTIONS = (".debug_loclists", ".debug_loc")
# Sections only the pyelftools reference reader needs: it resolves every attribute's
# value, range list indexes included (types never use them).
REFERENCE_SECTION_NAMES = (".debug_rnglists",)

# Unit types (DWARF 5 header field); DWARF 2-4 units are all compile units.
DW_UT_COMPILE = 1
DW_UT_PARTIAL = 3
SUPPORTED_UNIT_TYPES = {DW_UT_COMPILE: "compile", DW_UT_PARTIAL: "partial"}
UNIT_TYPE_NAMES = {2: "type unit", 4: "skeleton unit (split DWARF)",
                   5: "split compile unit", 6: "split type unit"}


class Unit(named_tuple("Unit", "offset end die_offset version offset_size address_size "
                               "abbrev_offset")):
    """One unit of .debug_info, from its header: where its DIEs are and how to read them.
    offset: of the unit header in .debug_info; end: one past the unit's last byte;
    die_offset: of the unit's first DIE; offset_size: 4 for 32-bit DWARF, 8 for 64-bit.
    A named tuple, not a dataclass (see elf/read.Section)."""

    __slots__ = ()

    @property
    def size(self) -> int:
        return self.end - self.offset


class DwarfFile:
    """An ELF file's debug sections (bytes) and units, plus the pyelftools view of them."""

    def __init__(self, path: str, little_endian: bool, elf_type: str,
                 sections: dict[str, bytes], dwarfinfo: DWARFInfo | None):
        self.path = path
        self.little_endian = little_endian
        self.elf_type = elf_type
        self.sections = sections
        self.dwarfinfo = dwarfinfo
        self.info = sections[".debug_info"]
        self.abbrev = sections.get(".debug_abbrev", b"")
        self.str = sections.get(".debug_str", b"")
        self.line_str = sections.get(".debug_line_str", b"")
        self.str_offsets = sections.get(".debug_str_offsets", b"")
        self.machine = ""  # e_machine as pyelftools names it ("EM_X86_64")
        self.units: list[Unit] = []

    def error(self, message: str) -> InputError:
        return InputError(self.path, message)


def _check_extents(path: str, elf: ELFFile, file_size: int) -> None:
    """Every section with contents lies inside the file: pyelftools reads (and allocates)
    what a section header claims, and later readers of the same file (the symbol table)
    rely on this check."""
    for section in elf.iter_sections():
        if section["sh_type"] == "SHT_NOBITS":
            continue
        offset, size = section["sh_offset"], section["sh_size"]
        if offset + size > file_size:
            raise InputError(path, f"ELF section {section.name or '(unnamed)'} (byte offset "
                                   f"{offset}, size {size}) runs past the end of the file "
                                   f"({file_size} bytes)")


def open_dwarf(path: str, for_reference: bool = False) -> DwarfFile:
    """Open `path`, load its debug sections and list its units; InputError if unusable.

    `for_reference` also loads what the pyelftools reference reader needs. An ordinary
    file is read with elf/read.py (a module's encode needs no pyelftools); anything else,
    and every broken file, through pyelftools (then its message is the one given).
    """
    if not for_reference:
        fast = _open_plain(path)
        if fast is not None:
            return fast
    from elftools.common.exceptions import DWARFError, ELFError, ELFParseError

    try:
        with opened_input(path) as fh:
            magic = fh.read(4)
            if magic != ELF_MAGIC:
                raise InputError(path, "not an ELF file")
            return _load(path, fh, for_reference)
    except (ELFError, ELFParseError, DWARFError) as e:
        raise InputError(path, f"corrupt ELF/DWARF: {e}") from None
    except struct.error as e:
        raise InputError(path, f"truncated ELF/DWARF data: {e}") from None
    except (ValueError, OverflowError) as e:
        # pyelftools seeking to an offset no file has
        raise InputError(path, f"corrupt ELF file: {e}") from None
    except OSError as e:  # pyelftools seeking past what the system allows (EINVAL)
        raise InputError(path, f"corrupt ELF file: {e.strerror or e}") from None


def _open_plain(path: str) -> DwarfFile | None:
    """`open_dwarf` of an ordinary file by elf/read.py; None for pyelftools to judge it."""
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != ELF_MAGIC:
                return None
            image = ElfImage(fh)
            sections = _plain_sections(image)
    except (OSError, Unusual, struct.error):
        return None
    if sections is None:
        return None
    dwarf = DwarfFile(path, image.little_endian, ELF_TYPES.get(image.type, ""), sections, None)
    # The calling convention (spec.dwarf_numbers.PARAMETER_REGISTERS) is the machine's.
    dwarf.machine = MACHINE_NAMES.get(image.machine, "")
    dwarf.units = list_units(dwarf)
    return dwarf


def _plain_sections(image: ElfImage) -> dict[str, bytes] | None:
    """The debug sections `_load` would give, or None where it would say something (no
    .debug_info, several, type units, ...) or relocate otherwise than `_relocated`."""
    info = [s for s in image.sections if s.name == ".debug_info"]
    types_section = image.by_name.get(".debug_types")
    if len(info) != 1 or (types_section is not None and types_section.size):
        return None
    sections: dict[str, bytes] = {}
    for name in SECTION_NAMES:
        section = image.by_name.get(name)
        if section is None or section.type == SHT_NOBITS:
            continue
        data = image.data(section)
        relocatable = image.type == ET_REL and name not in LOCATION_SECTIONS
        reloc = image.relocations_for(section) if relocatable else None
        if reloc is not None:
            sizes = _ABSOLUTE_RELOCATIONS.get(MACHINE_NAMES.get(image.machine, ""))
            if sizes is None or reloc.type != SHT_RELA or not image.elf64:
                return None
            symtab = image.data(image.section(reloc.link))
            data = _relocate(data, image.data(reloc), symtab, image.little_endian, sizes)
            if data is None:
                return None
        sections[name] = data
    if not sections.get(".debug_info") or ".debug_abbrev" not in sections:
        return None
    return sections


def _load(path: str, fh, for_reference: bool) -> DwarfFile:
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor, DwarfConfig, DWARFInfo
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationHandler

    elf = ELFFile(fh)
    _check_extents(path, elf, os.fstat(fh.fileno()).st_size)
    if elf.get_section_by_name(".debug_info") is None:
        if elf.get_section_by_name(".zdebug_info") is not None:
            raise InputError(path, "has only GNU-compressed .zdebug sections, which are not "
                                   "supported (decompress with objcopy --decompress-debug-"
                                   "sections)")
        raise InputError(path, "no .debug_info section (not built with -g, or stripped)")
    if sum(1 for section in elf.iter_sections() if section.name == ".debug_info") > 1:
        raise InputError(path, "has several .debug_info sections (COMDAT type units, from "
                               "-fdebug-types-section), which are not supported")
    types_section = elf.get_section_by_name(".debug_types")
    if types_section is not None and types_section.data_size:
        raise InputError(path, "has DWARF 4 type units (.debug_types, from "
                               "-fdebug-types-section), which are not supported")
    relocatable = elf["e_type"] == "ET_REL"
    sections: dict[str, bytes] = {}
    descriptors: dict[str, DebugSectionDescriptor] = {}
    handler = RelocationHandler(elf) if relocatable else None
    wanted = SECTION_NAMES + (REFERENCE_SECTION_NAMES if for_reference else ())
    for name in wanted:
        section = elf.get_section_by_name(name)
        if section is None or section["sh_type"] == "SHT_NOBITS":
            continue
        data = section.data()
        if handler is not None and name not in LOCATION_SECTIONS:
            # In an ET_REL object, string and cross-unit offsets are relocations.
            reloc = handler.find_relocations_for_section(section)
            fast = _relocated(elf, data, reloc) if reloc is not None else None
            if fast is not None:
                data = fast
            elif reloc is not None:
                stream = io.BytesIO(data)
                handler.apply_section_relocations(stream, reloc)
                data = stream.getvalue()
        sections[name] = data
        descriptors[name] = DebugSectionDescriptor(
            stream=io.BytesIO(data), name=name, global_offset=section["sh_offset"],
            size=len(data), address=section["sh_addr"])
    if not sections.get(".debug_info"):
        raise InputError(path, ".debug_info section is empty")
    if ".debug_abbrev" not in sections:
        raise InputError(path, "no .debug_abbrev section")

    config = DwarfConfig(little_endian=elf.little_endian,
                         default_address_size=elf.elfclass // 8,
                         machine_arch=elf.get_machine_arch())
    names = {
        "debug_info_sec": ".debug_info", "debug_abbrev_sec": ".debug_abbrev",
        "debug_str_sec": ".debug_str", "debug_line_str_sec": ".debug_line_str",
        "debug_str_offsets_sec": ".debug_str_offsets", "debug_addr_sec": ".debug_addr",
        "debug_loclists_sec": ".debug_loclists", "debug_rnglists_sec": ".debug_rnglists",
    }
    absent = ("debug_aranges_sec", "debug_frame_sec", "eh_frame_sec", "debug_loc_sec",
              "debug_ranges_sec", "debug_line_sec", "debug_pubtypes_sec",
              "debug_pubnames_sec", "debug_sup_sec", "gnu_debugaltlink_sec",
              "debug_types_sec")
    kwargs = {key: descriptors.get(name) for key, name in names.items()}
    kwargs.update(dict.fromkeys(absent))
    dwarfinfo = DWARFInfo(config=config, **kwargs)
    dwarf = DwarfFile(path, elf.little_endian, elf["e_type"], sections, dwarfinfo)
    dwarf.machine = elf["e_machine"]
    dwarf.units = list_units(dwarf)
    return dwarf


# Absolute relocations of debug sections, by machine: type -> size in bytes (the low bytes
# of symbol value + addend are stored). Anything else goes through pyelftools'
# RelocationHandler.
_ABSOLUTE_RELOCATIONS = {
    "EM_X86_64": {1: 8, 10: 4, 11: 4},  # R_X86_64_64, _32, _32S
    "EM_AARCH64": {257: 8, 258: 4},  # R_AARCH64_ABS64, _ABS32
    "EM_S390": {22: 8, 4: 4},  # R_390_64, R_390_32
    "EM_PPC64": {38: 8, 1: 4},  # R_PPC64_ADDR64, R_PPC64_ADDR32
    "EM_RISCV": {2: 8, 1: 4},  # R_RISCV_64, R_RISCV_32
}


def _relocated(elf: ELFFile, data: bytes, reloc) -> bytes | None:
    """`data` with the RELA section `reloc` applied (symbol value + addend), or None when
    it holds a relocation this table does not know.

    pyelftools applies about 13,000 relocations a second (56 s for the 729,000 of xfs.ko's
    .debug_info, measured); `apply_relocations` does the same in 0.3 s, the compiled
    core's `relocate` in 0.01 s.
    """
    sizes = _ABSOLUTE_RELOCATIONS.get(elf["e_machine"])
    if sizes is None or reloc["sh_type"] != "SHT_RELA" or elf.elfclass != 64:
        return None
    symtab = elf.get_section(reloc["sh_link"]).data()
    return _relocate(data, reloc.data(), symtab, elf.little_endian, sizes)


def _relocate(data: bytes, entries: bytes, symtab: bytes, little_endian: bool,
              sizes: dict[int, int]) -> bytes | None:
    core = compiled_module()
    if core is not None:
        return core.relocate(data, entries, symtab, little_endian, sizes)
    return apply_relocations(data, entries, symtab, little_endian, sizes)


def apply_relocations(data: bytes, entries: bytes, symtab: bytes, little_endian: bool,
                      sizes: dict[int, int]) -> bytes | None:
    """`data` with the ELF64 RELA `entries` applied, each storing the low bytes of its
    symbol's value (from `symtab`) + addend; None for an entry whose type `sizes` does
    not list, whose symbol is past the table or whose place is past the end. The
    reference of the compiled core's `relocate`."""
    order = "<" if little_endian else ">"
    values = [value for (value,) in struct.iter_unpack(order + "8xQ8x",
                                                       symtab[:len(symtab) // 24 * 24])]
    patched = bytearray(data)
    size = len(patched)
    codes = {4: (struct.Struct(order + "I"), 0xFFFFFFFF),
             8: (struct.Struct(order + "Q"), 0xFFFFFFFFFFFFFFFF)}
    for offset, info, addend in struct.iter_unpack(order + "QQq",
                                                   entries[:len(entries) // 24 * 24]):
        width = sizes.get(info & 0xFFFFFFFF)
        symbol = info >> 32
        if width is None or symbol >= len(values) or offset + width > size:
            return None
        code, mask = codes[width]
        code.pack_into(patched, offset, (values[symbol] + addend) & mask)
    return bytes(patched)


def list_units(dwarf: DwarfFile) -> list[Unit]:
    """Every unit of .debug_info from its header, checking what this encoder can read.

    Read here rather than through pyelftools' iter_CUs, which rejects an unknown DWARF
    version with a bare assertion message and builds an object per unit.
    """
    data = dwarf.info
    order = "<" if dwarf.little_endian else ">"
    units = []
    size = len(data)
    abbrev_size = len(dwarf.abbrev)
    offset = 0
    while offset < size:
        where = f"unit at .debug_info offset {offset:#x}"
        if offset + 4 > size:
            raise dwarf.error(f"{where}: truncated unit header")
        (length,) = struct.unpack_from(order + "I", data, offset)
        pos = offset + 4
        offset_size = 4
        if length == 0xFFFFFFFF:
            if pos + 8 > size:
                raise dwarf.error(f"{where}: truncated unit header")
            (length,) = struct.unpack_from(order + "Q", data, pos)
            pos += 8
            offset_size = 8
        elif length >= 0xFFFFFFF0:
            raise dwarf.error(f"{where}: reserved unit length {length:#x}")
        end = pos + length
        if end > size:
            raise dwarf.error(f"{where}: unit length {length} runs past the end of "
                              f".debug_info ({size} bytes)")
        (version,) = struct.unpack_from(order + "H", data, pos)
        pos += 2
        if not 2 <= version <= 5:
            raise dwarf.error(f"{where}: DWARF version {version} is not supported (2 to 5 are)")
        offset_code = order + ("I" if offset_size == 4 else "Q")
        if version >= 5:
            unit_type, address_size = data[pos], data[pos + 1]
            pos += 2
            if unit_type not in SUPPORTED_UNIT_TYPES:
                label = UNIT_TYPE_NAMES.get(unit_type, f"unit type {unit_type:#x}")
                raise dwarf.error(f"{where}: {label} is not supported")
            (abbrev_offset,) = struct.unpack_from(offset_code, data, pos)
            pos += offset_size
        else:
            (abbrev_offset,) = struct.unpack_from(offset_code, data, pos)
            pos += offset_size
            address_size = data[pos]
            pos += 1
        if pos > end:
            raise dwarf.error(f"{where}: truncated unit header")
        if abbrev_offset >= abbrev_size:
            raise dwarf.error(f"{where}: abbreviation table offset {abbrev_offset:#x} is past "
                              f"the end of .debug_abbrev")
        units.append(Unit(offset=offset, end=end, die_offset=pos, version=version,
                          offset_size=offset_size, address_size=address_size,
                          abbrev_offset=abbrev_offset))
        offset = end
    return units
