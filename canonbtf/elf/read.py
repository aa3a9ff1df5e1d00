"""An ELF file's section table, read with `struct`: what a module's encode needs of it.

pyelftools parses each section header through `construct` and costs about 60 ms to
import; for a kernel module's BTF (a few dozen ms with pahole) both were a large share,
paid three times per run (the DWARF, the symbol table, objcopy's section test). This
reads the headers and section names once, checking every offset against the file, and
takes only what it is sure of: a file it finds anything odd in (a header out of bounds,
a compressed section) is `Unusual`, and the callers then read it through pyelftools as
before, which also gives the established message for a broken file.
"""

from __future__ import annotations

import os
import struct

from ..tuples import named_tuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import BinaryIO

MAGIC = b"\x7fELF"
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_RELA = 4
SHT_NOBITS = 8
SHT_REL = 9
# Section types pyelftools makes a class of its own for, with checks of their own, that
# this reader does not repeat: their files are left to it.
LEFT_TO_PYELFTOOLS = frozenset({5, 6, 11, 18, 19, 0x6FFFFFF3, 0x6FFFFFF6, 0x6FFFFFFC,
                                0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF, 0x70000003})
SHF_COMPRESSED = 0x800
ET_REL = 1
# ELF class (e_ident[EI_CLASS]) -> (the header's layout after e_ident, a section header's):
# what ElfImage reads and relayout.py writes back.
LAYOUTS = {
    1: ("HHIIIIIHHHHHH", "IIIIIIIIII"),  # ELFCLASS32
    2: ("HHIQQQIHHHHHH", "IIQQQQIIQQ"),  # ELFCLASS64
}
ELF_TYPES = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}  # pyelftools'
# e_machine -> the name pyelftools gives it, for the machines the fast relocation knows.
MACHINE_NAMES = {62: "EM_X86_64", 183: "EM_AARCH64", 22: "EM_S390", 21: "EM_PPC64",
                 243: "EM_RISCV"}


class Unusual(Exception):
    """The file is not one this reader takes whole; the caller uses pyelftools."""


class Section(named_tuple("Section", "index name type flags address offset size link info")):
    """A section header: index, name (str) and the header's numbers. A named tuple, not a
    dataclass: importing dataclasses and making the classes was ~15 ms of a module's run
    (and not collections' namedtuple either: tuples.py)."""

    __slots__ = ()


class ElfImage:
    """The section table of the ELF file open as `fh` (`file_size` bytes, by default its
    size on disk); section contents are read on demand. Raises Unusual where pyelftools
    should judge the file (then `fh` is to be read again from its start)."""

    def __init__(self, fh: BinaryIO, file_size: int | None = None):
        self.fh = fh
        self.file_size = os.fstat(fh.fileno()).st_size if file_size is None else file_size
        fh.seek(0)
        head = fh.read(64)
        if len(head) < 52 or head[:4] != MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
            raise Unusual("not a plain ELF header")
        self.elf64 = head[4] == 2
        self.little_endian = head[5] == 1
        order = "<" if self.little_endian else ">"
        head_layout, row_layout = LAYOUTS[head[4]]
        if len(head) < 16 + struct.calcsize(order + head_layout):
            raise Unusual("short header")
        e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx = \
            struct.unpack_from(order + head_layout, head, 16)
        layout = struct.Struct(order + row_layout)
        self.type, self.machine = e_type, machine
        if not shoff or shnum == 0 or shstrndx == 0 or shstrndx >= shnum \
                or shentsize != layout.size or shoff + shnum * shentsize > self.file_size:
            raise Unusual("section table out of the ordinary")
        fh.seek(shoff)
        table = fh.read(shnum * shentsize)
        if len(table) != shnum * shentsize:
            raise Unusual("short section table")
        try:
            raw = list(layout.iter_unpack(table))
        except struct.error:
            raise Unusual("section table unreadable") from None
        names = self._contents(raw[shstrndx])
        self.sections: list[Section] = []
        for index, (name_off, kind, flags, addr, offset, size, link, info, _, entsize) in \
                enumerate(raw):
            if kind != SHT_NOBITS and offset + size > self.file_size:
                raise Unusual("a section runs past the end of the file")
            if flags & SHF_COMPRESSED:
                raise Unusual("a compressed section")
            if not self._as_pyelftools_takes(kind, size, link, entsize, len(raw)):
                raise Unusual("a section pyelftools would judge")
            end = names.find(b"\0", name_off)
            if name_off >= len(names) or end < 0:
                raise Unusual("a section name out of bounds")
            name = names[name_off:end].decode("latin-1")
            if name == ".stab":
                raise Unusual("a .stab section")
            self.sections.append(Section(index, name, kind, flags, addr, offset, size, link,
                                         info))
        if any(s.type == SHT_SYMTAB and self.sections[s.link].type != SHT_STRTAB
               for s in self.sections):
            raise Unusual("a symbol table whose names are not a string table")
        self.by_name: dict[str, Section] = {}
        for section in self.sections:
            self.by_name.setdefault(section.name, section)

    def _as_pyelftools_takes(self, kind: int, size: int, link: int, entsize: int,
                             count: int) -> bool:
        """Whether pyelftools' checks of a section of this type pass (relocation entry
        sizes, a symbol table's entries and string table)."""
        if kind in LEFT_TO_PYELFTOOLS:
            return False
        if kind in (SHT_REL, SHT_RELA):
            return entsize == (8 if kind == SHT_REL else 12) * (2 if self.elf64 else 1)
        if kind == SHT_SYMTAB:
            return entsize > 0 and size % entsize == 0 and link < count
        return True

    def _contents(self, header: tuple) -> bytes:
        kind, offset, size = header[1], header[4], header[5]
        if kind == SHT_NOBITS or offset + size > self.file_size:
            raise Unusual("section names unreadable")
        self.fh.seek(offset)
        return self.fh.read(size)

    def data(self, section: Section) -> bytes:
        """The section's bytes (empty for NOBITS; extents were checked on opening)."""
        if section.type == SHT_NOBITS:
            return b""
        self.fh.seek(section.offset)
        return self.fh.read(section.size)

    def relocations_for(self, section: Section) -> Section | None:
        """The REL/RELA section named for `section`, as pyelftools' RelocationHandler
        finds it (first by name, in section order)."""
        wanted = (".rel" + section.name, ".rela" + section.name)
        for candidate in self.sections:
            if candidate.type in (SHT_REL, SHT_RELA) and candidate.name in wanted:
                return candidate
        return None

    def section(self, index: int) -> Section:
        if not 0 <= index < len(self.sections):
            raise Unusual("a section link out of range")
        return self.sections[index]

