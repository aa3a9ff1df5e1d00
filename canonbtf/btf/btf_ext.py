"""CO-RE relocation records from the `.BTF.ext` section of a BPF object.

A slim header is cut to what a BPF program uses (`dump --types-from`), and CO-RE
relocations name the kernel types the program reaches into. Only the relocation part of
`.BTF.ext` is read; its layout is libbpf's `struct btf_ext_header` (magic, version, flags,
hdr_len, then offset/length pairs of func_info, line_info and, when hdr_len >= 32,
core_relo, all relative to the end of the header), each part a record size followed by
blocks of (section name offset, record count, records), and `struct bpf_core_relo`
(insn_off, type_id, access_str_off, kind), four u32 words.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from ..errors import InputError
from . import format as f

# enum bpf_core_relo_kind, as libbpf names them (without the BPF_CORE_ prefix).
RELO_KINDS = ("FIELD_BYTE_OFFSET", "FIELD_BYTE_SIZE", "FIELD_EXISTS", "FIELD_SIGNED",
              "FIELD_LSHIFT_U64", "FIELD_RSHIFT_U64", "TYPE_ID_LOCAL", "TYPE_ID_TARGET",
              "TYPE_EXISTS", "TYPE_SIZE", "ENUMVAL_EXISTS", "ENUMVAL_VALUE", "TYPE_MATCHES")
_CORE_HEADER_LEN = 32
_RELO_SIZE = 16


class CoreRelo(NamedTuple):
    """One CO-RE relocation: where, on which local type, along which access path."""

    section: str
    insn_off: int
    type_id: int
    access: str
    kind: int

    @property
    def kind_name(self) -> str:
        return RELO_KINDS[self.kind] if self.kind < len(RELO_KINDS) else f"KIND_{self.kind}"


def core_relos(data: bytes, string: Callable[[int], str], path: str) -> list[CoreRelo]:
    """The CO-RE relocations of a `.BTF.ext` section, in file order; `string` looks up an
    offset in the object's `.BTF` strings. Malformed sections are an InputError."""
    if len(data) < 8:
        raise InputError(path, f".BTF.ext: truncated header ({len(data)} bytes)")
    for order in ("<", ">"):
        magic, version, _flags, hdr_len = struct.unpack_from(order + "HBBI", data)
        if magic == f.MAGIC:
            break
    else:
        raise InputError(path, f".BTF.ext: bad magic 0x{magic:04x} at byte offset 0")
    if version != 1:
        raise InputError(path, f".BTF.ext: unsupported version {version}")
    if hdr_len > len(data):
        raise InputError(path, f".BTF.ext: header length {hdr_len} past the section's end")
    if hdr_len < _CORE_HEADER_LEN:
        return []
    relo_off, relo_len = struct.unpack_from(order + "II", data, 24)
    start = hdr_len + relo_off
    end = start + relo_len
    if end > len(data):
        raise InputError(path, f".BTF.ext: CO-RE relocations (byte offset {start}, "
                         f"{relo_len} bytes) run past the section's end ({len(data)} bytes)")
    if relo_len == 0:
        return []
    return _relo_blocks(data, start, end, order, string, path)


def _relo_blocks(data: bytes, pos: int, end: int, order: str, string: Callable[[int], str],
                 path: str) -> list[CoreRelo]:
    """Walk the (section, count, records) blocks of the core_relo part."""
    if pos + 4 > end:
        raise InputError(path, f".BTF.ext: truncated CO-RE record size at byte offset {pos}")
    (rec_size,) = struct.unpack_from(order + "I", data, pos)
    if rec_size < _RELO_SIZE:
        raise InputError(path, f".BTF.ext: CO-RE record size {rec_size} is below "
                         f"{_RELO_SIZE} at byte offset {pos}")
    pos += 4
    out: list[CoreRelo] = []
    while pos < end:
        if pos + 8 > end:
            raise InputError(path, f".BTF.ext: truncated CO-RE block at byte offset {pos}")
        name_off, count = struct.unpack_from(order + "II", data, pos)
        section = string(name_off)
        pos += 8
        if pos + count * rec_size > end:
            raise InputError(path, f".BTF.ext: {count} CO-RE records of section "
                             f"'{section}' run past the end at byte offset {pos}")
        for _ in range(count):
            insn_off, type_id, access_off, kind = struct.unpack_from(order + "IIII", data, pos)
            out.append(CoreRelo(section, insn_off, type_id, string(access_off), kind))
            pos += rec_size
    return out
