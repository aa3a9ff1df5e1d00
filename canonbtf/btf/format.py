"""The BTF binary format, declared once: header, kinds, record shapes, info bits.

Every record of the type section is a sequence of 32-bit words, so the reader and writer
work on word arrays; its kinds are spec/kinds.py's table.
"""

from __future__ import annotations

import struct

MAGIC = 0xEB9F
VERSION = 1
HEADER_LEN = 24
# The 2026 header adds u32 layout_off, u32 layout_len.
HEADER_LEN_WITH_LAYOUT = 32
HEADER_FIELDS = "HBBIIIII"  # magic, version, flags, hdr_len, type_off, type_len, str_off, str_len

MAX_TYPE_ID = 0xFFFFF
MAX_BLOB_SIZE = 16 * 1024 * 1024  # the kernel's limit for BPF_BTF_LOAD

# The kinds' numbers (and kind_name), from the one table of kinds: re-exported because
# most modules name kinds as format's; every other per-kind fact is read from spec.kinds.
from ..spec.kinds import (  # noqa: E402, F401
    ARRAY,
    CONST,
    DATASEC,
    DECL_TAG,
    ENUM,
    ENUM64,
    FLOAT,
    FUNC,
    FUNC_PROTO,
    FWD,
    INT,
    MAX_KIND,
    PTR,
    RESTRICT,
    STRUCT,
    TYPE_TAG,
    TYPEDEF,
    UNION,
    UNKN,
    VAR,
    VOLATILE,
    kind_name,
)

# INT encoding bits.
INT_SIGNED = 1
INT_CHAR = 2
INT_BOOL = 4

# FUNC linkage (held in vlen) and VAR linkage.
LINKAGE_STATIC = 0
LINKAGE_GLOBAL = 1
LINKAGE_EXTERN = 2
LINKAGE_NAMES = ("static", "global", "extern")


def info_vlen(info: int) -> int:
    # 24 bits since 2026; older writers leave bits 16-23 zero, so this reads both.
    return info & 0xFFFFFF


def info_kind(info: int) -> int:
    return (info >> 24) & 0x7F


def header_struct(byteorder: str) -> struct.Struct:
    return struct.Struct(byteorder + HEADER_FIELDS)

