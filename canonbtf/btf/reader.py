"""Reading BTF: raw blobs, `/sys/kernel/btf/*`, the .BTF section of an ELF, split BTF.

Every length and offset is checked against the bytes actually present before it is used,
so a corrupt blob fails with an `InputError` naming the byte offset or type id.
"""

from __future__ import annotations

import os
import struct
import sys

from .. import u32
from ..errors import InputError, opened_input
from ..gcpause import paused_gc
from . import accel
from . import format as f
from .model import Btf, Packed, Type
from .strings import StringTable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import BinaryIO

ELF_MAGIC = b"\x7fELF"
DEFAULT_INPUT = "/sys/kernel/btf/vmlinux"
# A compressed section inflates to its declared size, which is checked first: zlib makes
# at most about 1032 bytes per input byte, and no BTF comes near 1 GiB.
MAX_INFLATE = 1032
MAX_INFLATED = 1 << 30


def read_file(path: str) -> bytes:
    with opened_input(path) as fh:
        return fh.read()


def btf_bytes(path: str) -> bytes:
    """The raw BTF in `path`: the file itself, or its .BTF section if it is an ELF (read
    alone: a vmlinux with DWARF is 590 MB, and reading all of it to take its 4 MB .BTF
    was 0.43 of a module encode's 1.4 s with `--base vmlinux`)."""
    with opened_input(path) as fh:
        if fh.read(4) == ELF_MAGIC:
            return _section(path, fh, os.fstat(fh.fileno()).st_size, ".BTF")
        return _whole(fh)


def _whole(fh: BinaryIO) -> bytes:
    """All of the open file `fh`, from its start: read by its size where it has one (a
    buffered `read()` to the end copies the file once more, joining what it buffered)."""
    size = os.fstat(fh.fileno()).st_size
    fh.seek(0)
    data = fh.read(size) if size else b""
    rest = fh.read()
    return data + rest if rest else data


def elf_section(path: str, data: bytes, name: str) -> bytes:
    """The contents of section `name` of the ELF file `data`; any way the file is broken
    is an InputError."""
    import io

    return _section(path, io.BytesIO(data), len(data), name)


def _section(path: str, stream: BinaryIO, file_size: int, name: str) -> bytes:
    """Section `name` of the ELF file open as `stream` (`file_size` bytes).

    pyelftools trusts the file's offsets and sizes, and a corrupt file surfaces as
    whatever exception it meets first (struct.error, OverflowError, ValueError, ...), so
    the section's extent is checked here and the rest is caught as a whole.
    """
    from ..elf.read import SHT_NOBITS, ElfImage, Unusual

    try:
        image = ElfImage(stream, file_size)
    except (Unusual, struct.error):
        image = None  # pyelftools judges it below
    if image is not None:
        section = image.by_name.get(name)
        if section is None:
            raise InputError(path, f"ELF file has no {name} section")
        if section.type == SHT_NOBITS:
            raise InputError(path, f"ELF section {name} has no contents (NOBITS)")
        return image.data(section)
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    stream.seek(0)
    try:
        elf = ELFFile(stream)
        section = elf.get_section_by_name(name)
        if section is None:
            raise InputError(path, f"ELF file has no {name} section")
        if section["sh_type"] == "SHT_NOBITS":
            raise InputError(path, f"ELF section {name} has no contents (NOBITS)")
        offset, size = section["sh_offset"], section["sh_size"]
        if offset + size > file_size:
            raise InputError(path, f"ELF section {name} (byte offset {offset}, size {size}) "
                             f"runs past the end of the file ({file_size} bytes)")
        if section.compressed and section.data_size > min(MAX_INFLATE * size, MAX_INFLATED):
            raise InputError(path, f"compressed ELF section {name} claims {section.data_size} "
                             f"bytes from {size}, more than zlib or any BTF can make")
        return section.data()
    except InputError:
        raise
    except (ELFError, struct.error) as e:
        raise InputError(path, f"corrupt or truncated ELF file: {e}") from None
    except Exception as e:  # noqa: BLE001 -- pyelftools on corrupt input, see above
        raise InputError(path, f"corrupt ELF file ({type(e).__name__}: {e})") from None


def load(path: str, base: Btf | None = None) -> Btf:
    """Read a BTF file (raw or ELF); split BTF needs its `base`."""
    return parse(btf_bytes(path), path, base)


def load_with_base(path: str, base_path: str | None) -> Btf:
    """Read `path`, first reading `base_path` as its base when one is given."""
    base = load(base_path) if base_path else None
    return load(path, base)


def parse(data: bytes, path: str = "<bytes>", base: Btf | None = None) -> Btf:
    """Parse one BTF blob. Raises InputError for anything malformed."""
    size = len(data)
    if size < f.HEADER_LEN:
        raise InputError(path, f"not BTF: truncated header ({size} bytes, need {f.HEADER_LEN})")
    magic_le = int.from_bytes(data[:2], "little")
    if magic_le == f.MAGIC:
        byteorder = "<"
    elif magic_le == 0x9FEB:
        byteorder = ">"
    else:
        raise InputError(path, f"not BTF: bad magic 0x{magic_le:04x} at byte offset 0")
    (_, version, flags, hdr_len, type_off, type_len, str_off, str_len) = f.header_struct(
        byteorder
    ).unpack_from(data)
    if version != f.VERSION:
        raise InputError(path, f"unsupported BTF version {version} at byte offset 2")
    if flags != 0:
        raise InputError(path, f"unsupported BTF header flags 0x{flags:x} at byte offset 3")
    if hdr_len < f.HEADER_LEN or hdr_len > size:
        raise InputError(
            path, f"header length {hdr_len} at byte offset 4 is out of range (file is {size} bytes)"
        )
    sections = [("type", type_off, type_len), ("string", str_off, str_len)]
    layout_off = layout_len = 0
    if hdr_len >= f.HEADER_LEN_WITH_LAYOUT:
        layout_off, layout_len = struct.unpack(f"{byteorder}II", data[24:32])
        sections.append(("layout", layout_off, layout_len))
    body = size - hdr_len
    for sec, off, length in sections:
        if off + length > body:
            raise InputError(
                path,
                f"{sec} section (offset {off}, length {length}) runs past the end of the data "
                f"({body} bytes after the {hdr_len}-byte header)",
            )
    placed = sorted((off, length, sec) for sec, off, length in sections if length)
    for (off1, len1, sec1), (off2, _, sec2) in zip(placed, placed[1:]):
        if off1 + len1 > off2:
            raise InputError(path, f"{sec1} and {sec2} sections overlap at byte offset "
                             f"{hdr_len + off2}")
    if type_len % 4 or type_off % 4:
        raise InputError(path, f"type section (offset {type_off}, length {type_len}) "
                         "is not 4-byte aligned")
    strs = data[hdr_len + str_off : hdr_len + str_off + str_len]
    if base is None:
        if not strs:
            raise InputError(path, "string section is empty")
        if strs[0] != 0:
            raise InputError(path, "string section does not start with NUL: this looks like "
                             "split (module) BTF; give its base BTF with --base")
    if strs and strs[-1] != 0:
        raise InputError(path, f"string section is not NUL-terminated (last byte at byte "
                         f"offset {hdr_len + str_off + str_len - 1})")
    str_start = base.strings.end if base is not None else 0
    strings = StringTable(strs, str_start)
    raw = data[hdr_len + type_off : hdr_len + type_off + type_len]
    first_id = base.last_id + 1 if base is not None else 1
    header_tail = bytes(data[24:hdr_len])
    layout = bytes(data[hdr_len + layout_off : hdr_len + layout_off + layout_len])
    packed = _packed(raw, byteorder, path, first_id, strings, base)
    if packed is not None:
        return Btf(None, strings, base, byteorder, header_tail, layout, packed)
    with paused_gc():
        parsed = _parse_types(raw, byteorder, path, hdr_len + type_off, first_id)
    btf = Btf(parsed.types, strings, base, byteorder, header_tail, layout)
    if parsed.max_ref > btf.last_id or parsed.max_name >= strings.end:
        _check_references(btf, path)
    return btf


_HOST_ORDER = "<" if sys.byteorder == "little" else ">"


def _packed(raw: bytes, byteorder: str, path: str, first_id: int, strings: StringTable,
            base: Btf | None) -> Packed | None:
    """The type section checked by the compiled part and kept as words, decoded into
    `Type`s when first read; None without it, or for a section it would not take as
    `_parse_types` and `_check_references` do (they then give the message)."""
    if not accel.wanted("check"):
        return None
    # In host order the section's bytes are the words already: no two more copies.
    words = bytes(raw) if byteorder == _HOST_ORDER else u32.in_host_order(raw, byteorder).tobytes()
    sections = [*(base.string_sections() if base is not None else ()),
                (strings.start, strings.data())]
    checked = accel.checked_view(words, first_id, sections)
    if checked is None:
        return None
    count, view = checked
    packed = Packed(words, count, lambda: unpacked_types(words, first_id, sections))
    packed.keep_view(view, first_id, sections)
    return packed


def unpacked_types(words: bytes, first_id: int, sections: list[tuple[int, bytes]]
                   ) -> list[Type]:
    """The `Type`s of a type section in host byte order (`Packed.words`) that the
    compiled part checked against the string `sections` (Btf.string_sections)."""
    with paused_gc():
        types = accel.decoded(words, first_id, sections, Type)
        if types is not None:
            return types
        return _parse_types(words, _HOST_ORDER, "<packed>", 0, first_id).types


_REFERENCE_KINDS = frozenset({f.PTR, f.TYPEDEF, f.VOLATILE, f.CONST, f.RESTRICT, f.TYPE_TAG})


class _Parsed:
    """The types of one type section, with the largest type id and name offset they use."""

    __slots__ = ("types", "max_ref", "max_name")

    def __init__(self, types: list[Type], max_ref: int, max_name: int):
        self.types = types
        self.max_ref = max_ref
        self.max_name = max_name


def _parse_types(raw: bytes, byteorder: str, path: str, base_offset: int,
                 first_id: int) -> _Parsed:
    """Decode the type section into `Type` records.

    One branch per record shape, most frequent first (FUNC, FUNC_PROTO, PTR, STRUCT in
    vmlinux); the largest referenced id and name offset are tracked on the way, so the
    range checks cost two comparisons per record instead of a second pass.

    A hot path of the pure reader, kept whole (over 80 lines) and by hand rather than
    from kinds.py's table (measured on the 6.1 kernel's BTF, pure, best of 20, this
    function alone): one branch for every kind with items, its columns from the table,
    took 119 -> 123 ms; the items read by a function of their own, 137 -> 167 ms for
    the whole `parse`. tests/test_roundtrip.py holds it to the writer byte for byte.
    """
    words = u32.in_host_order(raw, byteorder).tolist()
    n = len(words)
    types: list[Type] = []
    append = types.append
    new_type = Type
    reference_kinds = _REFERENCE_KINDS
    FUNC, FUNC_PROTO, STRUCT, UNION = f.FUNC, f.FUNC_PROTO, f.STRUCT, f.UNION
    ARRAY, ENUM, ENUM64, INT, VAR = f.ARRAY, f.ENUM, f.ENUM64, f.INT, f.VAR
    DATASEC, DECL_TAG, MAX_KIND = f.DATASEC, f.DECL_TAG, f.MAX_KIND
    max_ref = max_name = 0
    pos = 0
    while pos < n:
        if pos + 3 > n:
            raise InputError(path, f"type {first_id + len(types)} at byte offset "
                             f"{base_offset + 4 * pos}: record truncated")
        name_off = words[pos]
        info = words[pos + 1]
        sot = words[pos + 2]
        pos += 3
        if name_off > max_name:
            max_name = name_off
        kind = (info >> 24) & 0x7F
        vlen = info & 0xFFFFFF
        if kind == FUNC:
            if sot > max_ref:
                max_ref = sot
            append(new_type(FUNC, name_off, info >> 31, sot, vlen, ()))
            continue
        if kind in reference_kinds:
            if vlen:
                _vlen_not_zero(path, first_id + len(types), kind, vlen)
            if sot > max_ref:
                max_ref = sot
            append(new_type(kind, name_off, info >> 31, sot, 0, ()))
            continue
        if kind == FUNC_PROTO:
            if sot > max_ref:
                max_ref = sot
            items = ()
            if vlen:
                end = pos + 2 * vlen
                if end > n:
                    _vlen_past_end(path, first_id + len(types), kind, vlen, base_offset, pos)
                names = words[pos:end:2]
                refs = words[pos + 1 : end : 2]
                top = max(names)
                if top > max_name:
                    max_name = top
                top = max(refs)
                if top > max_ref:
                    max_ref = top
                items = list(zip(names, refs))
                pos = end
            append(new_type(kind, name_off, info >> 31, sot, 0, items))
            continue
        if kind == STRUCT or kind == UNION or kind == DATASEC or kind == ENUM64:
            items = ()
            if vlen:
                end = pos + 3 * vlen
                if end > n:
                    _vlen_past_end(path, first_id + len(types), kind, vlen, base_offset, pos)
                first = words[pos:end:3]
                second = words[pos + 1 : end : 3]
                third = words[pos + 2 : end : 3]
                pos = end
                if kind == ENUM64:
                    top = max(first)
                    if top > max_name:
                        max_name = top
                    items = [(name, lo | (hi << 32)) for name, lo, hi in zip(first, second, third)]
                else:
                    names, refs = (first, second) if kind != DATASEC else ((0,), first)
                    top = max(names)
                    if top > max_name:
                        max_name = top
                    top = max(refs)
                    if top > max_ref:
                        max_ref = top
                    items = list(zip(first, second, third))
            append(new_type(kind, name_off, info >> 31, sot, 0, items))
            continue
        if kind == ENUM:
            items = ()
            if vlen:
                end = pos + 2 * vlen
                if end > n:
                    _vlen_past_end(path, first_id + len(types), kind, vlen, base_offset, pos)
                names = words[pos:end:2]
                top = max(names)
                if top > max_name:
                    max_name = top
                items = list(zip(names, words[pos + 1 : end : 2]))
                pos = end
            append(new_type(kind, name_off, info >> 31, sot, 0, items))
            continue
        if kind == 0 or kind > MAX_KIND:
            raise InputError(path, f"type {first_id + len(types)} at byte offset "
                             f"{base_offset + 4 * pos - 12}: unknown kind {kind}")
        if vlen:
            _vlen_not_zero(path, first_id + len(types), kind, vlen)
        if kind == ARRAY:
            if pos + 3 > n:
                _record_truncated(path, first_id + len(types), kind, base_offset, pos)
            elem = words[pos]
            index = words[pos + 1]
            if elem > max_ref:
                max_ref = elem
            if index > max_ref:
                max_ref = index
            append(new_type(kind, name_off, info >> 31, sot, (elem, index, words[pos + 2]), ()))
            pos += 3
            continue
        extra = 0
        if kind == INT or kind == VAR or kind == DECL_TAG:
            if pos >= n:
                _record_truncated(path, first_id + len(types), kind, base_offset, pos)
            extra = words[pos]
            pos += 1
            if kind == DECL_TAG and extra >= 0x80000000:
                extra -= 0x100000000
            if kind != INT and sot > max_ref:
                max_ref = sot
        append(new_type(kind, name_off, info >> 31, sot, extra, ()))
    return _Parsed(types, max_ref, max_name)


def _vlen_not_zero(path: str, type_id: int, kind: int, vlen: int) -> None:
    raise InputError(path, f"type {type_id} ({f.kind_name(kind)}): vlen {vlen} must be 0 "
                     "for this kind")


def _vlen_past_end(path: str, type_id: int, kind: int, vlen: int, base_offset: int,
                   pos: int) -> None:
    raise InputError(path, f"type {type_id} ({f.kind_name(kind)}) at byte offset "
                     f"{base_offset + 4 * pos - 12}: vlen {vlen} runs past the end of the type "
                     "section")


def _record_truncated(path: str, type_id: int, kind: int, base_offset: int, pos: int) -> None:
    raise InputError(path, f"type {type_id} ({f.kind_name(kind)}) at byte offset "
                     f"{base_offset + 4 * pos - 12}: record truncated")


def _check_references(btf: Btf, path: str) -> None:
    """Every type id and string offset must point inside the BTF (base included)."""
    last_id = btf.last_id
    str_end = btf.strings.end
    for type_id, t in btf.own():
        for ref in t.refs():
            if ref > last_id:
                raise InputError(
                    path, f"type {type_id} ({f.kind_name(t.kind)}) references type {ref}, "
                    f"past the last type id {last_id}")
        for off in t.name_offsets():
            if off >= str_end:
                raise InputError(
                    path, f"type {type_id} ({f.kind_name(t.kind)}): name offset {off} is past "
                    f"the end of the string section ({str_end})")
