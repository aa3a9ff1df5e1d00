"""The BTF binary format, declared once: header, kinds, record shapes, info bits.

Every record of the type section is a sequence of 32-bit words, so the reader and writer
work on word arrays; this module says how many words each kind has and what they mean.
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

# Kinds.
UNKN = 0
INT = 1
PTR = 2
ARRAY = 3
STRUCT = 4
UNION = 5
ENUM = 6
FWD = 7
TYPEDEF = 8
VOLATILE = 9
CONST = 10
RESTRICT = 11
FUNC = 12
FUNC_PROTO = 13
VAR = 14
DATASEC = 15
FLOAT = 16
DECL_TAG = 17
TYPE_TAG = 18
ENUM64 = 19
MAX_KIND = ENUM64

KIND_NAMES = (
    "UNKN", "INT", "PTR", "ARRAY", "STRUCT", "UNION", "ENUM", "FWD", "TYPEDEF", "VOLATILE",
    "CONST", "RESTRICT", "FUNC", "FUNC_PROTO", "VAR", "DATASEC", "FLOAT", "DECL_TAG",
    "TYPE_TAG", "ENUM64",
)
KIND_BY_NAME = {name: kind for kind, name in enumerate(KIND_NAMES)}

# Words after the common three (name_off, info, size_or_type): fixed, then per vlen item.
FIXED_WORDS = {INT: 1, ARRAY: 3, VAR: 1, DECL_TAG: 1}
ITEM_WORDS = {STRUCT: 3, UNION: 3, ENUM: 2, FUNC_PROTO: 2, DATASEC: 3, ENUM64: 3}

# Kinds whose third word is a size (the rest hold a type id there, or 0).
SIZED_KINDS = frozenset({INT, STRUCT, UNION, ENUM, DATASEC, FLOAT, ENUM64})
# Kinds whose third word is a type id.
TYPED_KINDS = frozenset(
    {PTR, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FUNC_PROTO, VAR, DECL_TAG, TYPE_TAG}
)
MODIFIER_KINDS = frozenset({VOLATILE, CONST, RESTRICT, TYPE_TAG})

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


def kind_name(kind: int) -> str:
    return KIND_NAMES[kind] if 0 <= kind <= MAX_KIND else f"kind {kind}"
