"""A relocatable ELF file (a kernel module, a .o) with sections added or replaced, laid
out again in this process.

Kbuild's modules get their .BTF from pahole, which starts `sh -c "objcopy
--add-section ..."` for each: two more processes, and objcopy reading and writing the
whole module again. A relocatable file has no program headers, so its sections may sit
anywhere in the file: this lays them out again in section-index order, each at its own
alignment, with the new contents, and the section header table last, as objcopy does.
Section indices never change (a new section is appended to the table), so symbols,
relocations and groups that name sections by index stay right. A file this does not
take whole (not ET_REL, program headers, extended section numbering, a header out of
bounds) is left to objcopy: `planned` says None.
"""

from __future__ import annotations

import struct

from .read import ET_REL, LAYOUTS, MAGIC, SHT_NOBITS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

SHT_PROGBITS = 1
SHN_LORESERVE = 0xFF00
# A larger section alignment is left to objcopy: padding to it is written out here, and a
# damaged header could ask for terabytes (a kernel's largest is a page).
MAX_ALIGN = 1 << 16


def _aligned(offset: int, alignment: int) -> int:
    return offset if alignment <= 1 else -(-offset // alignment) * alignment


class Extent:
    """A piece of the output that is bytes [offset, offset + size) of the source file as
    they are: the writer copies it (elf/write.py), so a 35 MB module is not read into
    this process to be written out again."""

    __slots__ = ("offset", "size")

    def __init__(self, offset: int, size: int):
        self.offset, self.size = offset, size

    def __len__(self) -> int:
        return self.size


def planned(read: Callable[[int, int], bytes], file_size: int, sections: dict[str, bytes]
            ) -> list[bytes | Extent] | None:
    """The file of `file_size` bytes that `read(offset, size)` reads, with each of
    `sections` (name -> contents) replacing the section of that name, or added as a
    non-allocated PROGBITS section (flags 0, alignment 1, as pahole's objcopy run adds
    .BTF), as the pieces to write one after the other: only its header, section table
    and section names are read, the sections kept are Extents; None where objcopy should
    do it."""
    ident = read(0, 64)
    if file_size < 52 or len(ident) < 52 or ident[:4] != MAGIC or ident[4] not in LAYOUTS \
            or ident[5] not in (1, 2):
        return None
    order = "<" if ident[5] == 1 else ">"
    head_format, row_format = LAYOUTS[ident[4]]
    head = struct.Struct(order + head_format)
    row = struct.Struct(order + row_format)
    if len(ident) < 16 + head.size:
        return None
    fields = list(head.unpack_from(ident, 16))
    e_type, shoff, ehsize, phnum = fields[0], fields[5], fields[7], fields[9]
    shentsize, shnum, shstrndx = fields[10:13]
    if e_type != ET_REL or phnum or ehsize != 16 + head.size or shentsize != row.size \
            or not 0 < shstrndx < shnum or shoff + shnum * row.size > file_size:
        return None
    table = read(shoff, shnum * row.size)
    if len(table) != shnum * row.size:
        return None
    rows = [list(r) for r in row.iter_unpack(table)]
    if any(rows[0]):  # extended numbering keeps counts in section 0
        return None
    contents: list[bytes | Extent] = []
    for _, kind, _, _, offset, size, _, _, align, _ in rows:
        if align & (align - 1) or align > MAX_ALIGN \
                or (kind != SHT_NOBITS and offset + size > file_size):
            return None
        contents.append(b"" if kind == SHT_NOBITS else Extent(offset, size))
    names_at = contents[shstrndx]
    names = read(names_at.offset, names_at.size) if isinstance(names_at, Extent) else b""
    if len(names) != len(names_at):
        return None
    by_name = {}
    for index, r in enumerate(rows):
        end = names.find(b"\0", r[0])
        if r[0] >= len(names) or end < 0:
            return None
        by_name.setdefault(names[r[0]:end].decode("latin-1"), index)
    new_names = bytearray(names)
    for name, data in sections.items():
        index = by_name.get(name)
        if index is None:
            rows.append([len(new_names), SHT_PROGBITS, 0, 0, 0, 0, 0, 0, 1, 0])
            contents.append(data)
            new_names += name.encode("latin-1") + b"\0"
        elif rows[index][1] == SHT_NOBITS or index == shstrndx:
            return None
        else:
            contents[index] = data
    contents[shstrndx] = bytes(new_names)
    if len(rows) >= SHN_LORESERVE:
        return None
    return _laid_out(ident[:ehsize], head, row, fields, rows, contents)


def _laid_out(ident_and_head: bytes, head: struct.Struct, row: struct.Struct,
              fields: list[int], rows: list[list[int]],
              contents: list[bytes | Extent]) -> list[bytes | Extent] | None:
    """The file's pieces: the ELF header, the sections in index order, the section
    table."""
    header = bytearray(ident_and_head)
    pieces: list[bytes | Extent] = [header]
    end = len(header)
    for r, data in zip(rows[1:], contents[1:]):
        start = _aligned(end, r[8])
        pieces.append(bytes(start - end))
        r[4], r[5] = start, (r[5] if r[1] == SHT_NOBITS else len(data))
        pieces.append(data)
        end = start + len(data)
    shoff = _aligned(end, 8 if row.size == 64 else 4)
    pieces.append(bytes(shoff - end))
    fields[5], fields[11] = shoff, len(rows)
    try:
        pieces.append(b"".join([row.pack(*r) for r in rows]))
        head.pack_into(header, 16, *fields)
    except struct.error:  # an offset past what ELFCLASS32 holds
        return None
    return pieces
