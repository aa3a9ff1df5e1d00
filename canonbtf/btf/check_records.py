"""The validator's first pass: each record on its own, by kind (the kernel's check_meta).

Every kind has one function here, in `RECORD_CHECKS`, that looks at the record alone:
its name, kind_flag, size field, and the items it lists (member names and offsets, enum
values, DATASEC entries). References are only checked to be in range; what they lead to
is the resolve pass's (check_resolve.py). A function returns the first problem as
(rule, message), or None.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Optional

from . import format as f
from .check_env import MAX_TYPE_ID, MAX_VLEN, CheckEnv, quote
from .model import Type

_SECTION_NAME = re.compile("[\x20-\x7e\xa0-\xff]{1,512}")
_FLOAT_SIZES = frozenset({2, 4, 8, 12, 16})

# (rule, message) of a broken rule, or None.
Problem = Optional[tuple[str, str]]


def _required_identifier(env: CheckEnv, t: Type, what: str) -> Problem:
    if not t.name_off:
        return "name", f"a {what} must have a name"
    if not env.is_identifier(t.name_off):
        return "name", f"name is not a valid identifier for a {what}"
    return None


def _optional_identifier(env: CheckEnv, t: Type, what: str) -> Problem:
    if t.name_off and not env.is_identifier(t.name_off):
        return "name", f"name is not a valid identifier for a {what}"
    return None


def _int(env: CheckEnv, t: Type) -> Problem:
    if t.kflag:
        return "kind-flag", "kind_flag must be 0 for INT"
    data = t.extra
    if data & ~0x0FFFFFFF:
        return "int", f"INT data 0x{data:08x} has bits set above the encoding"
    bits = data & 0xFF
    offset = (data >> 16) & 0xFF
    if bits + offset > 128:
        return "int", f"bit offset {offset} + bits {bits} exceed 128"
    if (bits + offset + 7) // 8 > t.size_or_type:
        return "int", f"bit offset {offset} + bits {bits} exceed the size " \
                      f"{t.size_or_type} bytes"
    encoding = data >> 24
    if encoding not in (0, f.INT_SIGNED, f.INT_CHAR, f.INT_BOOL):
        return "int", f"encoding 0x{encoding:x} is not one of none, SIGNED, CHAR, BOOL"
    return None


def _reference(env: CheckEnv, t: Type) -> Problem:
    kind = t.kind
    if t.kflag and kind != f.TYPE_TAG:
        return "kind-flag", f"kind_flag must be 0 for {f.kind_name(kind)}"
    if t.size_or_type > MAX_TYPE_ID:
        return "type-id", f"type id {t.size_or_type} is above the kernel's maximum"
    if kind == f.TYPEDEF:
        return _required_identifier(env, t, "TYPEDEF")
    if kind == f.TYPE_TAG:
        if not t.name_off or not env.name_at(t.name_off):
            return "name", "a TYPE_TAG must have a value (name)"
        return None
    if t.name_off:
        return "name", f"a {f.kind_name(kind)} must not have a name"
    return None


def _fwd(env: CheckEnv, t: Type) -> Problem:
    if t.size_or_type:
        return "fwd", f"type field is {t.size_or_type}; FWD must have 0"
    return _required_identifier(env, t, "FWD")


def _array(env: CheckEnv, t: Type) -> Problem:
    if t.name_off:
        return "name", "an ARRAY must not have a name"
    if t.kflag:
        return "kind-flag", "kind_flag must be 0 for ARRAY"
    if t.size_or_type:
        return "array", f"size field is {t.size_or_type}; ARRAY must have 0"
    elem, index, _ = t.extra
    if not elem or elem > MAX_TYPE_ID:
        return "array", f"element type {elem} is void or out of range"
    if not index or index > MAX_TYPE_ID:
        return "array", f"index type {index} is void or out of range"
    return None


def _struct(env: CheckEnv, t: Type) -> Problem:
    what = f.kind_name(t.kind)
    problem = _optional_identifier(env, t, what)
    if problem is not None:
        return problem
    is_union = t.kind == f.UNION
    size = t.size_or_type
    kflag = t.kflag
    last = 0
    for i, (name_off, mtype, word) in enumerate(t.items):
        if not env.offset_ok(name_off):
            return "name-offset", f"member {i} name offset {name_off} is past the end " \
                                  f"of the string section ({env.str_end})"
        if name_off and not env.is_identifier(name_off):
            return "name", f"member {i} name {quote(env.name_at(name_off))} is not a " \
                           "valid identifier"
        member = quote(env.name_at(name_off)) if name_off else f"#{i}"
        if not mtype or mtype > MAX_TYPE_ID:
            return "member-type", f"member {member} has type {mtype} (void or out of range)"
        offset = word & 0xFFFFFF if kflag else word
        if is_union and offset:
            return "union-member-offset", f"member {member} is at bit offset {offset}; " \
                                          "union members must be at 0"
        if last > offset:
            return "member-offset", f"member {member} at bit offset {offset} comes " \
                                    f"before the previous member's offset {last}"
        if (offset + 7) // 8 > size:
            return "member-offset", f"member {member} at bit offset {offset} is past " \
                                    f"the {what.lower()} size {size}"
        last = offset
    return None


def _enum(env: CheckEnv, t: Type) -> Problem:
    what = f.kind_name(t.kind)
    size = t.size_or_type
    if size not in (1, 2, 4, 8):
        return "enum-size", f"size {size} is not 1, 2, 4 or 8"
    problem = _optional_identifier(env, t, what)
    if problem is not None:
        return problem
    for i, (name_off, _) in enumerate(t.items):
        if not env.offset_ok(name_off):
            return "name-offset", f"value {i} name offset {name_off} is past the end of " \
                                  f"the string section ({env.str_end})"
        if not name_off:
            return "name", f"value {i} has no name"
        if not env.is_identifier(name_off):
            return "name", f"value {i} name {quote(env.name_at(name_off))} is not a " \
                           "valid identifier"
    return None


def _func_proto(env: CheckEnv, t: Type) -> Problem:
    if t.name_off:
        return "name", "a FUNC_PROTO must not have a name"
    if t.kflag:
        return "kind-flag", "kind_flag must be 0 for FUNC_PROTO"
    return None


def _func(env: CheckEnv, t: Type) -> Problem:
    problem = _required_identifier(env, t, "FUNC")
    if problem is not None:
        return problem
    if t.extra > f.LINKAGE_GLOBAL:
        linkage = f.LINKAGE_NAMES[t.extra] if t.extra < 3 else str(t.extra)
        return "func-linkage", f"linkage {linkage} is not static or global"
    if t.kflag:
        return "kind-flag", "kind_flag must be 0 for FUNC"
    return None


def _var(env: CheckEnv, t: Type) -> Problem:
    if t.kflag:
        return "kind-flag", "kind_flag must be 0 for VAR"
    problem = _required_identifier(env, t, "VAR")
    if problem is not None:
        return problem
    if not t.size_or_type or t.size_or_type > MAX_TYPE_ID:
        return "var", f"type {t.size_or_type} is void or out of range"
    if t.extra not in (0, 1):
        return "var", f"linkage {t.extra} is not static (0) or global allocated (1)"
    return None


def _datasec(env: CheckEnv, t: Type) -> Problem:
    size = t.size_or_type
    if not size:
        return "datasec", "size is 0"
    if t.kflag:
        return "kind-flag", "kind_flag must be 0 for DATASEC"
    if not t.name_off or _SECTION_NAME.fullmatch(env.name_at(t.name_off)) is None:
        return "name", "a DATASEC needs a name of printable characters"
    last_end = 0
    total = 0
    for i, (vtype, offset, vsize) in enumerate(t.items):
        if not vtype or vtype > MAX_TYPE_ID:
            return "datasec", f"entry {i} has type {vtype} (void or out of range)"
        if offset < last_end:
            return "datasec", f"entry {i} at offset {offset} overlaps or precedes the " \
                              f"previous entry (ends at {last_end}); entries must be " \
                              "sorted by offset"
        if offset >= size:
            return "datasec", f"entry {i} at offset {offset} is past the section size {size}"
        if not vsize or vsize > size:
            return "datasec", f"entry {i} has size {vsize}"
        last_end = offset + vsize
        if last_end > size:
            return "datasec", f"entry {i} ends at {last_end}, past the section size {size}"
        total += vsize
    if total > size:
        return "datasec", f"entry sizes add up to {total}, more than the size {size}"
    return None


def _float(env: CheckEnv, t: Type) -> Problem:
    if t.kflag:
        return "kind-flag", "kind_flag must be 0 for FLOAT"
    if t.size_or_type not in _FLOAT_SIZES:
        return "float-size", f"size {t.size_or_type} is not 2, 4, 8, 12 or 16"
    return None


def _decl_tag(env: CheckEnv, t: Type) -> Problem:
    if not t.name_off or not env.name_at(t.name_off):
        return "name", "a DECL_TAG must have a value (name)"
    if t.extra < -1:
        return "decl-tag", f"component_idx {t.extra} is below -1"
    return None


# The kernel's check_meta of each kind (an unknown kind has none).
RECORD_CHECKS: dict[int, Callable[[CheckEnv, Type], Problem]] = {
    f.INT: _int,
    f.PTR: _reference,
    f.ARRAY: _array,
    f.STRUCT: _struct,
    f.UNION: _struct,
    f.ENUM: _enum,
    f.FWD: _fwd,
    f.TYPEDEF: _reference,
    f.VOLATILE: _reference,
    f.CONST: _reference,
    f.RESTRICT: _reference,
    f.FUNC: _func,
    f.FUNC_PROTO: _func_proto,
    f.VAR: _var,
    f.DATASEC: _datasec,
    f.FLOAT: _float,
    f.DECL_TAG: _decl_tag,
    f.TYPE_TAG: _reference,
    f.ENUM64: _enum,
}


def check_records(env: CheckEnv) -> None:
    """Pass 1 over the own types: what every record must be, then its kind's check."""
    record_checks = RECORD_CHECKS
    for type_id in range(env.first, env.n):
        t = env.types[type_id]
        kind = t.kind
        check = record_checks.get(kind)
        if check is None:
            # The reader refuses such a record; one built in memory gets the same
            # words as a finding (the kernel's "Invalid kind"), not a KeyError.
            env.report(type_id, "kind", f"unknown kind {kind}")
            continue
        vlen = t.extra if kind == f.FUNC else len(t.items)
        if vlen > MAX_VLEN:
            env.report(type_id, "vlen", f"vlen {vlen} does not fit the kernel's 16 bits")
            continue
        if t.items and kind not in f.ITEM_WORDS:
            env.report(type_id, "vlen", f"has {len(t.items)} items; vlen must be 0 "
                       "for this kind")
            continue
        if not env.offset_ok(t.name_off):
            env.report(type_id, "name-offset", f"name offset {t.name_off} is past the "
                       f"end of the string section ({env.str_end})")
            continue
        problem = check(env, t)
        if problem is not None:
            env.report(type_id, *problem)
