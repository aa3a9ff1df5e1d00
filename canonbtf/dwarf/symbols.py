"""What the ELF symbol table says about functions, variables and kfuncs, read once in the
parent before the workers fork (they inherit it).

pahole decides from the symbol table which DWARF functions and variables become BTF: a
function only if an STT_FUNC symbol has exactly its name, a per-CPU variable only if an
STT_OBJECT symbol of the same name and a non-zero size sits at its address in
`.data..percpu`, and (with `decl_tag_kfuncs`) a kfunc when its `__BTF_ID__func__` symbol
lies inside a `.BTF_ids` set8 flagged BTF_SET8_KFUNCS. The table is parsed here with
`struct` rather than through pyelftools' Symbol objects: 0.3 s instead of 3.3 s for the
6.1 kernel's symbol table (measured), all of it sequential time in the parent; the
compiled core's `scan_symbols` does the same pass in C.

Addresses are compared as the ELF and the DWARF hold them: absolute in an executable,
section-relative in a relocatable object (whose debug sections are relocated against
section symbols of value 0, so a DW_OP_addr holds the offset in its section).
"""

from __future__ import annotations

import struct

from ..elf.read import SHT_NOBITS, ElfImage, Unusual
from ..errors import InputError
from ..tuples import named_tuple
from .core import compiled_module

STT_OBJECT = 1
STT_FUNC = 2
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHF_ALLOC = 0x2
PERCPU_SECTION = ".data..percpu"
BTF_IDS_SECTION = ".BTF_ids"
BTF_ID_FUNC_PREFIX = "__BTF_ID__func__"
BTF_ID_SET8_PREFIX = "__BTF_ID__set8__"
BTF_SET8_KFUNCS = 1 << 0  # flags word of struct btf_id_set8: the set holds kfuncs


class Section(named_tuple("Section", "name address size")):
    """A section's name, address and size (a named tuple: see elf/read.Section)."""

    __slots__ = ()


class ElfSymbols:
    """The symbol table, reduced to what the encoder asks of it. A plain class, not a
    dataclass (see elf/read.Section)."""

    def __init__(self, relocatable: bool = False,
                 functions: dict[str, frozenset[int]] | None = None,
                 objects: dict[tuple[str, int], list[tuple[int, int]]] | None = None,
                 sections: dict[int, Section] | None = None, percpu_index: int | None = None,
                 kfuncs: frozenset[str] = frozenset(), ambiguous: frozenset[str] = frozenset()):
        self.relocatable = relocatable
        # STT_FUNC name -> the addresses of the symbols of that exact name.
        self.functions = {} if functions is None else functions
        # (STT_OBJECT name, address) -> (section index, size) for symbols of non-zero size.
        self.objects = {} if objects is None else objects
        self.sections = {} if sections is None else sections
        self.percpu_index = percpu_index
        self.kfuncs = kfuncs
        # Names whose code sits at more than one address (ambiguous_functions).
        self.ambiguous = ambiguous

    def __eq__(self, other: object) -> bool:
        """Equal tables, field by field (the readers' tests compare them)."""
        return isinstance(other, ElfSymbols) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"ElfSymbols({vars(self)!r})"

    def place_variable(self, name: str, address: int, every_section: bool
                       ) -> tuple[str, int, int] | None:
        """(section name, offset in it, size) of the variable `name` at `address`, if a
        symbol confirms it: per-CPU only unless `every_section`."""
        for index, size in self.objects.get((name, address), ()):
            if not every_section and index != self.percpu_index:
                continue
            section = self.sections[index]
            offset = address - section.address
            if self.relocatable or 0 <= offset < section.size:
                return section.name, offset, size
        return None


def read_symbols(path: str) -> ElfSymbols | None:
    """The symbols of the ELF file `path`, or None when it has no symbol table;
    InputError when the table cannot be read."""
    try:
        with open(path, "rb") as fh:
            try:
                table = _plain_table(ElfImage(fh))
            except Unusual:
                table = _pyelftools_table(fh)  # also gives its message for a broken file
        return None if table is None else _symbols(*table)
    except OSError as e:
        raise InputError(path, f"cannot read the symbol table: {e.strerror or e}") from None
    except (struct.error, ValueError, IndexError) as e:
        raise InputError(path, f"corrupt symbol table: {e}") from None


SymbolTable = tuple  # (sections, data, strtab, btf_ids_data, little, elf64, relocatable)


def _plain_table(elf: ElfImage) -> SymbolTable | None:
    """What `_symbols` reads, by elf/read.py."""
    symtab = elf.by_name.get(".symtab")
    if symtab is None or symtab.type != 2:  # SHT_SYMTAB
        return None
    sections = {s.index: Section(s.name, s.address, s.size) for s in elf.sections
                if s.flags & SHF_ALLOC}
    strtab = elf.data(elf.section(symtab.link))
    btf_ids = elf.by_name.get(BTF_IDS_SECTION)
    btf_ids_data = (elf.data(btf_ids) if btf_ids is not None and btf_ids.type != SHT_NOBITS
                    else b"")
    return (sections, elf.data(symtab), strtab, btf_ids_data, elf.little_endian, elf.elf64,
            elf.type == 1)


def _pyelftools_table(fh) -> SymbolTable | None:
    """What `_symbols` reads, by pyelftools (a file elf/read.py leaves to it); its
    errors as ValueError (pyelftools is imported only for such a file)."""
    from elftools.common.exceptions import ELFError, ELFParseError

    try:
        return _read_by_pyelftools(fh)
    except (ELFError, ELFParseError) as e:
        raise ValueError(str(e)) from None


def _read_by_pyelftools(fh) -> SymbolTable | None:
    from elftools.elf.elffile import ELFFile

    fh.seek(0)
    elf = ELFFile(fh)
    symtab = elf.get_section_by_name(".symtab")
    if symtab is None or symtab["sh_type"] != "SHT_SYMTAB":
        return None
    sections: dict[int, Section] = {}
    for index, section in enumerate(elf.iter_sections()):
        if section["sh_flags"] & SHF_ALLOC:
            sections[index] = Section(section.name, section["sh_addr"], section["sh_size"])
    strtab = elf.get_section(symtab["sh_link"]).data()
    data = symtab.data()
    btf_ids = elf.get_section_by_name(BTF_IDS_SECTION)
    btf_ids_data = (btf_ids.data() if btf_ids is not None
                    and btf_ids["sh_type"] != "SHT_NOBITS" else b"")
    little = elf.little_endian
    elf64 = elf.elfclass == 64
    relocatable = elf["e_type"] == "ET_REL"
    return sections, data, strtab, btf_ids_data, little, elf64, relocatable


def _symbols(sections: dict[int, Section], data: bytes, strtab: bytes, btf_ids_data: bytes,
             little: bool, elf64: bool, relocatable: bool) -> ElfSymbols:
    btf_ids_index = next((i for i, s in sections.items() if s.name == BTF_IDS_SECTION), -1)
    alloc = bytearray(max(sections, default=-1) + 1)
    for index in sections:
        alloc[index] = 1
    core = compiled_module()
    scan = core.scan_symbols if core is not None else scan_symbols
    functions, objects, btf_id_symbols = scan(data, strtab, elf64, little, btf_ids_index,
                                              bytes(alloc))
    percpu = next((i for i, s in sorted(sections.items()) if s.name == PERCPU_SECTION), None)
    kfuncs = _kfuncs(btf_id_symbols, sections.get(btf_ids_index), btf_ids_data,
                     "<" if little else ">")
    return ElfSymbols(relocatable, functions, objects, sections, percpu, kfuncs,
                      ambiguous_functions(functions))


NOT_A_FUNCTION_SUFFIXES = (".cold", ".part")


def ambiguous_functions(functions: dict[str, frozenset[int]]) -> frozenset[str]:
    """Names that stand for code at several addresses, pahole 1.31's `ambiguous_addr`:
    STT_FUNC symbols grouped by their name up to the first '.', leaving out the pieces
    of one function (`.cold` and `.part` in the suffix); a group whose symbols sit at
    more than one address is ambiguous. So are two static functions of one name in two
    units, and a function beside its `.isra`/`.constprop` clone: fentry, fexit and
    kprobe-multi attach by name, and such a name does not say which code is meant."""
    # Names without a '.' first (most of them; one pass in C), then the few thousand
    # suffixed ones onto their groups: 0.14 -> 0.03 s for the 6.1 kernel's table.
    out = {name for name, at in functions.items() if len(at) > 1 and "." not in name}
    groups: dict[str, set[int]] = {}
    for name in [name for name in functions if "." in name]:
        dot = name.index(".")
        if any(suffix in name[dot:] for suffix in NOT_A_FUNCTION_SUFFIXES):
            continue
        prefix = name[:dot]
        group = groups.get(prefix)
        if group is None:
            group = groups[prefix] = set(functions.get(prefix, ()))
        group.update(functions[name])
        if len(group) > 1:
            out.add(prefix)
    return frozenset(out)


def scan_symbols(data: bytes, strtab: bytes, elf64: bool, little_endian: bool,
                 btf_ids_index: int, alloc: bytes) -> tuple[dict, dict, list]:
    """The symbol table `data` (names in `strtab`) reduced to: STT_FUNC name -> frozenset
    of addresses; (STT_OBJECT name, address) -> sorted (section index, size) places of
    the sized ones in a section `alloc` flags; and (section index, value, size, name) of
    every symbol in section `btf_ids_index` (-1: none). The reference of the compiled
    core's `scan_symbols` (0.2 s against 0.03 s for the 6.1 kernel's table)."""
    order = "<" if little_endian else ">"
    if elf64:
        layout = struct.Struct(order + "IBBHQQ")  # name, info, other, shndx, value, size
    else:
        layout = struct.Struct(order + "IIIBBH")  # name, value, size, info, other, shndx
    names: dict[int, str] = {}
    functions: dict[str, set[int]] = {}
    objects: dict[tuple[str, int], list[tuple[int, int]]] = {}
    btf_id_symbols: list[tuple[int, int, int, str]] = []
    count = len(data) // layout.size
    for entry in layout.iter_unpack(data[:count * layout.size]):
        if elf64:
            name_off, info, _, shndx, value, size = entry
        else:
            name_off, value, size, info, _, shndx = entry
        kind = info & 0xF
        if shndx == SHN_UNDEF or shndx >= SHN_LORESERVE:
            continue
        if kind != STT_FUNC and kind != STT_OBJECT and shndx != btf_ids_index:
            continue
        name = names.get(name_off)
        if name is None:
            end = strtab.find(b"\0", name_off)
            name = strtab[name_off:end if end >= 0 else len(strtab)].decode("latin-1")
            names[name_off] = name
        if shndx == btf_ids_index:
            btf_id_symbols.append((shndx, value, size, name))
        if kind == STT_FUNC:
            functions.setdefault(name, set()).add(value)
        elif kind == STT_OBJECT and size and shndx < len(alloc) and alloc[shndx]:
            objects.setdefault((name, value), []).append((shndx, size))
    for places in objects.values():
        places.sort()
    return {n: frozenset(a) for n, a in functions.items()}, objects, btf_id_symbols


def _kfuncs(btf_id_symbols: list, section: Section | None, data: bytes, order: str
            ) -> frozenset[str]:
    """Names of the functions listed in set8s of .BTF_ids whose flags say BTF_SET8_KFUNCS.

    A set8 is `u32 cnt, u32 flags` then (u32 id, u32 flags) pairs, each id carrying a
    `__BTF_ID__func__<name>__<n>` symbol; the set's own symbol is sized over all of it.
    Kernels before 6.9 have no such flag (their set8 flags word is 0), so none qualify,
    as with pahole.
    """
    if section is None or not data:
        return frozenset()
    sets: list[tuple[int, int]] = []
    for _, value, size, name in btf_id_symbols:
        if name.startswith(BTF_ID_SET8_PREFIX):
            offset = value - section.address
            if 0 <= offset and offset + 8 <= len(data):
                (flags,) = struct.unpack_from(order + "I", data, offset + 4)
                if flags & BTF_SET8_KFUNCS:
                    sets.append((value, value + size))
    found = set()
    for _, value, _, name in btf_id_symbols:
        if name.startswith(BTF_ID_FUNC_PREFIX) and any(lo <= value < hi for lo, hi in sets):
            # __BTF_ID__func__<name>__<unique number>
            found.add(name[len(BTF_ID_FUNC_PREFIX):].rsplit("__", 1)[0])
    return frozenset(found)
