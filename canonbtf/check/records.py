"""The validator's first pass: each record on its own, by kind (the kernel's check_meta).

Every kind has one function here, in `RECORD_CHECKS`, that looks at the record alone:
its name, kind_flag, size field, and the items it lists (member names and offsets, enum
values, DATASEC entries). References are only checked to be in range; what they lead to
is the resolve pass's (check/resolve.py). A function returns the first problem as
(check/words' message key, its values...), or None.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Optional

from ..btf import format as f
from ..btf.model import Type
from ..spec import kinds as spec
from .env import MAX_TYPE_ID, MAX_VLEN, CheckEnv

_SECTION_NAME = re.compile("[\x20-\x7e\xa0-\xff]{1,512}")
_FLOAT_SIZES = frozenset({2, 4, 8, 12, 16})

# (message key, values...) of a broken rule, or None.
Problem = Optional[tuple]


def _required_identifier(env: CheckEnv, t: Type) -> Problem:
    if not t.name_off:
        return "name-missing", t.kind
    return _optional_identifier(env, t)


def _optional_identifier(env: CheckEnv, t: Type) -> Problem:
    if t.name_off and not env.is_identifier(t.name_off):
        return "name-identifier", t.kind
    return None


def _int(env: CheckEnv, t: Type) -> Problem:
    if t.kflag:
        return "kind-flag", t.kind
    data = t.extra
    if data & ~0x0FFFFFFF:
        return "int-data", data
    bits = data & 0xFF
    offset = (data >> 16) & 0xFF
    if bits + offset > 128:
        return "int-128", offset, bits
    if (bits + offset + 7) // 8 > t.size_or_type:
        return "int-size", offset, bits, t.size_or_type
    encoding = data >> 24
    if encoding not in (0, f.INT_SIGNED, f.INT_CHAR, f.INT_BOOL):
        return "int-encoding", encoding
    return None


def _reference(env: CheckEnv, t: Type) -> Problem:
    kind = t.kind
    if t.kflag and kind != f.TYPE_TAG:
        return "kind-flag", kind
    if t.size_or_type > MAX_TYPE_ID:
        return "type-id-max", t.size_or_type
    if kind == f.TYPEDEF:
        return _required_identifier(env, t)
    if kind == f.TYPE_TAG:
        if not t.name_off or not env.name_at(t.name_off):
            return ("name-type-tag",)
        return None
    if t.name_off:
        return "name-forbidden", kind
    return None


def _fwd(env: CheckEnv, t: Type) -> Problem:
    if t.size_or_type:
        return "fwd", t.size_or_type
    return _required_identifier(env, t)


def _array(env: CheckEnv, t: Type) -> Problem:
    if t.name_off:
        return ("name-array",)
    if t.kflag:
        return "kind-flag", t.kind
    if t.size_or_type:
        return "array-size", t.size_or_type
    elem, index, _ = t.extra
    if not elem or elem > MAX_TYPE_ID:
        return "array-elem-id", elem
    if not index or index > MAX_TYPE_ID:
        return "array-index-id", index
    return None


def _struct(env: CheckEnv, t: Type) -> Problem:
    problem = _optional_identifier(env, t)
    if problem is not None:
        return problem
    is_union = t.kind == f.UNION
    size = t.size_or_type
    kflag = t.kflag
    last = 0
    for i, (name_off, mtype, word) in enumerate(t.items):
        if not env.offset_ok(name_off):
            return "member-name-offset", i, name_off, env.str_end
        if name_off and not env.is_identifier(name_off):
            return "member-name", i, env.name_at(name_off)
        if not mtype or mtype > MAX_TYPE_ID:
            return "member-type-id", env.member(name_off, i), mtype
        offset = word & 0xFFFFFF if kflag else word
        if is_union and offset:
            return "union-member-offset", env.member(name_off, i), offset
        if last > offset:
            return "member-order", env.member(name_off, i), offset, last
        if (offset + 7) // 8 > size:
            return "member-past", env.member(name_off, i), offset, t.kind, size
        last = offset
    return None


def _enum(env: CheckEnv, t: Type) -> Problem:
    size = t.size_or_type
    if size not in (1, 2, 4, 8):
        return "enum-size", size
    problem = _optional_identifier(env, t)
    if problem is not None:
        return problem
    for i, (name_off, _) in enumerate(t.items):
        if not env.offset_ok(name_off):
            return "value-name-offset", i, name_off, env.str_end
        if not name_off:
            return "value-no-name", i
        if not env.is_identifier(name_off):
            return "value-name", i, env.name_at(name_off)
    return None


def _func_proto(env: CheckEnv, t: Type) -> Problem:
    if t.name_off:
        return "name-forbidden", t.kind
    if t.kflag:
        return "kind-flag", t.kind
    return None


def _func(env: CheckEnv, t: Type) -> Problem:
    problem = _required_identifier(env, t)
    if problem is not None:
        return problem
    if t.extra > f.LINKAGE_GLOBAL:
        return "func-linkage", t.extra
    if t.kflag:
        return "kind-flag", t.kind
    return None


def _var(env: CheckEnv, t: Type) -> Problem:
    if t.kflag:
        return "kind-flag", t.kind
    problem = _required_identifier(env, t)
    if problem is not None:
        return problem
    if not t.size_or_type or t.size_or_type > MAX_TYPE_ID:
        return "var-type-id", t.size_or_type
    if t.extra not in (0, 1):
        return "var-linkage", t.extra
    return None


def _datasec(env: CheckEnv, t: Type) -> Problem:
    size = t.size_or_type
    if not size:
        return ("datasec-size",)
    if t.kflag:
        return "kind-flag", t.kind
    if not t.name_off or _SECTION_NAME.fullmatch(env.name_at(t.name_off)) is None:
        return ("name-datasec",)
    last_end = 0
    total = 0
    for i, (vtype, offset, vsize) in enumerate(t.items):
        if not vtype or vtype > MAX_TYPE_ID:
            return "datasec-type-id", i, vtype
        if offset < last_end:
            return "datasec-order", i, offset, last_end
        if offset >= size:
            return "datasec-offset", i, offset, size
        if not vsize or vsize > size:
            return "datasec-entry-size", i, vsize
        last_end = offset + vsize
        if last_end > size:
            return "datasec-end", i, last_end, size
        total += vsize
    if total > size:
        return "datasec-total", total, size
    return None


def _float(env: CheckEnv, t: Type) -> Problem:
    if t.kflag:
        return "kind-flag", t.kind
    if t.size_or_type not in _FLOAT_SIZES:
        return "float-size", t.size_or_type
    return None


def _decl_tag(env: CheckEnv, t: Type) -> Problem:
    if not t.name_off or not env.name_at(t.name_off):
        return ("name-decl-tag",)
    if t.extra < -1:
        return "decl-tag-index", t.extra
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
            env.report(type_id, "kind", kind)
            continue
        vlen = t.extra if kind == f.FUNC else len(t.items)
        if vlen > MAX_VLEN:
            env.report(type_id, "vlen", vlen)
            continue
        if t.items and kind not in spec.ITEM_WORDS:
            env.report(type_id, "vlen-items", len(t.items))
            continue
        if not env.offset_ok(t.name_off):
            env.report(type_id, "name-offset", t.name_off, env.str_end)
            continue
        problem = check(env, t)
        if problem is not None:
            env.report(type_id, *problem)
