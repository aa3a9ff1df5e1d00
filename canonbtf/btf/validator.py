"""Validating BTF against the rules the kernel enforces when it loads BTF (BPF_BTF_LOAD).

The checks follow kernel/bpf/btf.c in its three passes: a per-record pass (names, flags,
sizes, member offsets), the resolve pass, and the type-tag ordering pass. The resolve pass
is reproduced step by step -- a depth-first walk in type-id order with a 32-entry stack,
whose idea of "already resolved" and of which kinds end a walk depends on that order --
because some verdicts (a PTR to a FUNC, a long chain of by-value members) depend on which
ids come first, and a tidier restatement of the rules would disagree with the kernel on
such blobs. Unlike the kernel, which stops at the first problem, this reports every
independent one; a type that already failed is skipped silently by the types that use it.

Split BTF is checked for its own types; references into the base are taken as valid, as
the kernel takes its own vmlinux BTF.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import format as f
from .model import Btf, Type
from .sizes import ARRAY, NONE, OWN, POINTER, SIZE_RULE, TARGET, TRANSPARENT

# Kernel limits (include/uapi/linux/btf.h, include/linux/kallsyms.h).
MAX_TYPE_ID = f.MAX_TYPE_ID
MAX_NAME_OFFSET = 0xFFFFFF
MAX_VLEN = 0xFFFF
MAX_RESOLVE_DEPTH = 32
POINTER_SIZE = 8  # every architecture with BTF-enabled 64-bit kernels
U32 = 0xFFFFFFFF

# Identifier characters by the kernel's ctype table, which classes Latin-1 letters as
# letters; names are str decoded as latin-1, one character per byte. KSYM_NAME_LEN is 512.
_LETTERS = "A-Za-z_.\xc0-\xd6\xd8-\xf6\xf8-\xff"
_IDENTIFIER = re.compile(f"[{_LETTERS}][{_LETTERS}0-9]{{0,511}}")
_SECTION_NAME = re.compile("[\x20-\x7e\xa0-\xff]{1,512}")
_FLOAT_SIZES = frozenset({2, 4, 8, 12, 16})
_INT_REGULAR_BYTES = frozenset({1, 2, 4, 8, 16})

NULL = f.MAX_KIND + 1  # the kind of a type id that does not exist (the kernel's NULL)
VOID = f.UNKN  # id 0


def _kinds(*kinds: int) -> tuple[bool, ...]:
    return tuple(k in kinds for k in range(NULL + 1))


_MODIFIER = _kinds(*TRANSPARENT)
_NEEDS_RESOLVE = _kinds(f.TYPEDEF, f.VOLATILE, f.CONST, f.RESTRICT, f.TYPE_TAG, f.PTR,
                        f.STRUCT, f.UNION, f.ARRAY, f.VAR, f.FUNC, f.DECL_TAG, f.DATASEC)
_SOURCE_ONLY = _kinds(f.VAR, f.DECL_TAG, f.DATASEC)
# How btf_type_id_size sizes each kind: the rule every user of sizes follows, except that
# the kernel sizes a VAR through its type too.
_SIZE_RULE = tuple(TARGET if k == f.VAR else SIZE_RULE[k] for k in range(NULL)) + (NONE,)
_NOSIZE = tuple(rule == NONE for rule in _SIZE_RULE)
_DECL_TAG_TARGET = _kinds(f.FUNC, f.STRUCT, f.UNION, f.VAR, f.TYPEDEF)
# What ends a walk, by walk mode: nothing yet (TBD), a pointer, a struct or array.
_MODE_TBD, _MODE_PTR, _MODE_STRUCT = 0, 1, 2
_SINK = (
    tuple(not x for x in _NEEDS_RESOLVE),
    tuple(not m and k != f.PTR for k, m in enumerate(_MODIFIER)),
    tuple(not m and k not in (f.ARRAY, f.STRUCT, f.UNION) for k, m in enumerate(_MODIFIER)),
)

_NOT_VISITED, _VISITED, _RESOLVED, _BROKEN = 0, 1, 2, 3

# The rules, by the short names violations carry.
RULES = {
    "blob-size": "the blob is larger than the kernel's 16 MiB limit",
    "header": "header bytes the kernel does not know must be zero",
    "no-types": "a base BTF needs at least one type",
    "strings": "the string section must start (base BTF) and end with NUL",
    "too-many-types": "type ids must stay below 0xFFFFF",
    "kind": "every type's kind must be one the kernel knows",
    "name-offset": "name offsets must point into the string section",
    "name": "names must be C identifiers where one is required, absent where forbidden",
    "kind-flag": "kind_flag must be 0 for this kind",
    "vlen": "vlen must fit 16 bits, and be 0 for kinds without items",
    "type-id": "referenced type ids must exist and be of a kind this reference allows",
    "int": "INT encoding, bit offset and bit count must be consistent",
    "fwd": "FWD must have type 0",
    "array": "ARRAY needs an element type with a size and a regular int index type",
    "member-type": "a member's type must exist and have a size",
    "member-offset": "member offsets must not decrease, and must lie within the struct",
    "union-member-offset": "UNION members must be at offset 0",
    "member-alignment": "non-bitfield members must be byte-aligned",
    "member-size": "a member must fit inside its struct",
    "bitfield": "bitfields must be ints or enums no wider than their type",
    "enum-size": "ENUM and ENUM64 sizes must be 1, 2, 4 or 8",
    "float-size": "FLOAT sizes must be 2, 4, 8, 12 or 16",
    "func": "FUNC must point at a FUNC_PROTO whose parameters all have names",
    "func-linkage": "FUNC linkage must be static or global (not extern)",
    "func-proto": "FUNC_PROTO return and parameter types must have sizes; names valid",
    "var": "VAR must have a sized type and static or global-allocated linkage",
    "datasec": "DATASEC entries must be VARs, sorted, non-overlapping, inside the section",
    "decl-tag": "DECL_TAG must target a FUNC, STRUCT, UNION, VAR or TYPEDEF, and its "
                "component_idx must be -1 or an existing member/parameter",
    "loop": "no loops made only of by-value members and modifiers",
    "resolve-depth": "a chain of unresolved types may be at most 32 deep",
    "type-tag-order": "TYPE_TAG must come before other modifiers in a chain",
    "modifier-chain": "a chain of modifiers may be at most 32 long",
    "resolve-state": "the kernel's final consistency check after resolving a type",
}


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (type id and kind, or None for the blob), which rule, why."""

    type_id: int | None
    kind: int | None
    name: str
    rule: str
    message: str

    def __str__(self) -> str:
        if self.type_id is None:
            return f"BTF: {self.message}"
        kind = f.kind_name(self.kind)
        where = f"{kind} {_quote(self.name)}" if self.name else kind
        return f"type {self.type_id} ({where}): {self.message}"


def _quote(name: str) -> str:
    shown = "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in name)
    return f"'{shown}'"


class _Reject(Exception):
    """A rule is broken at `type_id`; unwinds the walk in progress."""

    def __init__(self, type_id: int, rule: str, message: str):
        super().__init__(message)
        self.type_id = type_id
        self.rule = rule
        self.message = message


class _Broken(Exception):
    """The walk reached a type that already failed: stop quietly, it was reported."""


def validate(btf: Btf) -> list[Violation]:
    """Every violation of the kernel's BTF rules in `btf` (own types only for split BTF)."""
    return _Checker(btf).run()


def order_dependent_reference(btf: Btf) -> str | None:
    """A pointer, typedef or modifier of `btf`'s own that refers to a FUNC record.

    The kernel takes such a reference only when the FUNC has a lower id than the
    reference (it is resolved to the FUNC's prototype by then), so whether the blob loads
    depends on type order: renumbering can turn an accepted blob into a rejected one.
    Compilers and pahole point at the FUNC_PROTO instead.
    """
    all_types = btf.all_types()
    for type_id, t in btf.own():
        if _MODIFIER[t.kind] or t.kind == f.PTR:
            target = all_types[t.size_or_type] if t.size_or_type else None
            if target is not None and target.kind == f.FUNC:
                return (f"type {type_id} ({f.kind_name(t.kind)}) refers to FUNC "
                        f"{_quote(btf.name(target.name_off))} (type {t.size_or_type}), not to "
                        "its FUNC_PROTO")
    return None


class _Checker:
    def __init__(self, btf: Btf):
        self.btf = btf
        types = btf.all_types()
        self.types = types
        self.n = len(types)
        self.first = btf.first_id
        self.split = btf.base is not None
        kinds = [VOID] * self.n
        for i in range(1, self.n):
            kind = types[i].kind
            # A kind the kernel does not know (reported as such) is read as a missing type.
            kinds[i] = kind if kind <= f.MAX_KIND else NULL
        self.kinds = kinds
        first = self.first
        # Base types count as resolved (as the kernel treats its own vmlinux BTF); their
        # resolved ids and sizes are worked out on demand.
        self.state = bytearray([_RESOLVED]) * first + bytearray(self.n - first)
        if not self.split:
            self.state[0] = _NOT_VISITED
        self.resolved_ids: list[int | None] = [None] * first + [0] * (self.n - first)
        self.resolved_sizes: list[int | None] = [None] * first + [0] * (self.n - first)
        self.resolved_ids[0] = self.resolved_sizes[0] = 0
        self.str_end = btf.strings.end
        self.identifier_ok: dict[int, bool] = {}
        self.violations: list[Violation] = []
        self.stack: list[list[int]] = []
        self.mode = _MODE_TBD
        self.top = 0

    # -- reporting -------------------------------------------------------------------

    def type_name(self, type_id: int) -> str:
        t = self.types[type_id] if 0 < type_id < self.n else None
        return self.name_at(t.name_off) if t is not None else ""

    def name_at(self, offset: int) -> str:
        try:
            return self.btf.name(offset)
        except (KeyError, AttributeError):
            return ""

    def report(self, type_id: int, rule: str, message: str) -> None:
        kind = self.types[type_id].kind if 0 < type_id < self.n else None
        self.violations.append(Violation(type_id, kind, self.type_name(type_id), rule, message))
        if 0 < type_id < self.n:
            self.state[type_id] = _BROKEN

    def report_blob(self, rule: str, message: str) -> None:
        self.violations.append(Violation(None, None, "", rule, message))

    def describe(self, type_id: int) -> str:
        if type_id == 0:
            return "void"
        if type_id >= self.n:
            return f"type {type_id}, which does not exist"
        kind = f.kind_name(self.types[type_id].kind)
        name = self.type_name(type_id)
        return f"type {type_id} ({kind} {_quote(name)})" if name else f"type {type_id} ({kind})"

    def run(self) -> list[Violation]:
        self.check_blob()
        self.check_records()
        self.check_all_resolve()
        self.check_type_tags()
        return sorted(self.violations, key=lambda v: -1 if v.type_id is None else v.type_id)

    # -- the blob as a whole ------------------------------------------------------------

    def check_blob(self) -> None:
        btf = self.btf
        if any(btf.header_tail):
            self.report_blob("header", f"the header is {f.HEADER_LEN + len(btf.header_tail)} "
                             "bytes with non-zero fields past byte 24 (a layout section); "
                             "kernels that do not know these fields reject the blob")
        size = f.HEADER_LEN + len(btf.header_tail) + _type_section_size(btf)
        size += btf.strings.size + len(btf.layout)
        if size > f.MAX_BLOB_SIZE:
            self.report_blob("blob-size", f"the blob would be {size} bytes, more than the "
                             f"kernel's limit of {f.MAX_BLOB_SIZE}")
        if not self.split and not btf.types:
            self.report_blob("no-types", "there are no types")
        strs = btf.strings.data()
        if strs or not self.split:
            if not strs:
                self.report_blob("strings", "the string section is empty")
            elif strs[-1] != 0:
                self.report_blob("strings", "the string section does not end with NUL")
            elif len(strs) - 1 > MAX_NAME_OFFSET:
                self.report_blob("strings", f"the string section is {len(strs)} bytes, more "
                                 f"than the kernel's limit of {MAX_NAME_OFFSET + 1}")
            if not self.split and strs and strs[0] != 0:
                self.report_blob("strings", "the string section does not start with NUL")
        if btf.last_id >= MAX_TYPE_ID:
            self.report_blob("too-many-types", f"the last type id is {btf.last_id}; the kernel "
                             f"takes ids up to {MAX_TYPE_ID - 1}")

    # -- pass 1: each record on its own ----------------------------------------------

    def offset_ok(self, offset: int) -> bool:
        return offset < self.str_end and offset <= MAX_NAME_OFFSET

    def is_identifier(self, offset: int) -> bool:
        ok = self.identifier_ok.get(offset)
        if ok is None:
            ok = _IDENTIFIER.fullmatch(self.name_at(offset)) is not None
            self.identifier_ok[offset] = ok
        return ok

    def check_records(self) -> None:
        record_checks = _RECORD_CHECKS
        for type_id in range(self.first, self.n):
            t = self.types[type_id]
            kind = t.kind
            check = record_checks.get(kind)
            if check is None:
                # The reader refuses such a record; one built in memory gets the same
                # words as a finding (the kernel's "Invalid kind"), not a KeyError.
                self.report(type_id, "kind", f"unknown kind {kind}")
                continue
            vlen = t.extra if kind == f.FUNC else len(t.items)
            if vlen > MAX_VLEN:
                self.report(type_id, "vlen", f"vlen {vlen} does not fit the kernel's 16 bits")
                continue
            if t.items and kind not in f.ITEM_WORDS:
                self.report(type_id, "vlen", f"has {len(t.items)} items; vlen must be 0 "
                            "for this kind")
                continue
            if not self.offset_ok(t.name_off):
                self.report(type_id, "name-offset", f"name offset {t.name_off} is past the "
                            f"end of the string section ({self.str_end})")
                continue
            problem = check(self, t)
            if problem is not None:
                self.report(type_id, *problem)

    def required_identifier(self, t: Type, what: str) -> tuple[str, str] | None:
        if not t.name_off:
            return "name", f"a {what} must have a name"
        if not self.is_identifier(t.name_off):
            return "name", f"name is not a valid identifier for a {what}"
        return None

    def optional_identifier(self, t: Type, what: str) -> tuple[str, str] | None:
        if t.name_off and not self.is_identifier(t.name_off):
            return "name", f"name is not a valid identifier for a {what}"
        return None

    def record_int(self, t: Type):
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

    def record_reference(self, t: Type):
        kind = t.kind
        if t.kflag and kind != f.TYPE_TAG:
            return "kind-flag", f"kind_flag must be 0 for {f.kind_name(kind)}"
        if t.size_or_type > MAX_TYPE_ID:
            return "type-id", f"type id {t.size_or_type} is above the kernel's maximum"
        if kind == f.TYPEDEF:
            return self.required_identifier(t, "TYPEDEF")
        if kind == f.TYPE_TAG:
            if not t.name_off or not self.name_at(t.name_off):
                return "name", "a TYPE_TAG must have a value (name)"
            return None
        if t.name_off:
            return "name", f"a {f.kind_name(kind)} must not have a name"
        return None

    def record_fwd(self, t: Type):
        if t.size_or_type:
            return "fwd", f"type field is {t.size_or_type}; FWD must have 0"
        return self.required_identifier(t, "FWD")

    def record_array(self, t: Type):
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

    def record_struct(self, t: Type):
        what = f.kind_name(t.kind)
        problem = self.optional_identifier(t, what)
        if problem is not None:
            return problem
        is_union = t.kind == f.UNION
        size = t.size_or_type
        kflag = t.kflag
        last = 0
        for i, (name_off, mtype, word) in enumerate(t.items):
            if not self.offset_ok(name_off):
                return "name-offset", f"member {i} name offset {name_off} is past the end " \
                                      f"of the string section ({self.str_end})"
            if name_off and not self.is_identifier(name_off):
                return "name", f"member {i} name {_quote(self.name_at(name_off))} is not a " \
                               "valid identifier"
            member = _quote(self.name_at(name_off)) if name_off else f"#{i}"
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

    def record_enum(self, t: Type):
        what = f.kind_name(t.kind)
        size = t.size_or_type
        if size not in (1, 2, 4, 8):
            return "enum-size", f"size {size} is not 1, 2, 4 or 8"
        problem = self.optional_identifier(t, what)
        if problem is not None:
            return problem
        for i, (name_off, _) in enumerate(t.items):
            if not self.offset_ok(name_off):
                return "name-offset", f"value {i} name offset {name_off} is past the end of " \
                                      f"the string section ({self.str_end})"
            if not name_off:
                return "name", f"value {i} has no name"
            if not self.is_identifier(name_off):
                return "name", f"value {i} name {_quote(self.name_at(name_off))} is not a " \
                               "valid identifier"
        return None

    def record_func_proto(self, t: Type):
        if t.name_off:
            return "name", "a FUNC_PROTO must not have a name"
        if t.kflag:
            return "kind-flag", "kind_flag must be 0 for FUNC_PROTO"
        return None

    def record_func(self, t: Type):
        problem = self.required_identifier(t, "FUNC")
        if problem is not None:
            return problem
        if t.extra > f.LINKAGE_GLOBAL:
            linkage = f.LINKAGE_NAMES[t.extra] if t.extra < 3 else str(t.extra)
            return "func-linkage", f"linkage {linkage} is not static or global"
        if t.kflag:
            return "kind-flag", "kind_flag must be 0 for FUNC"
        return None

    def record_var(self, t: Type):
        if t.kflag:
            return "kind-flag", "kind_flag must be 0 for VAR"
        problem = self.required_identifier(t, "VAR")
        if problem is not None:
            return problem
        if not t.size_or_type or t.size_or_type > MAX_TYPE_ID:
            return "var", f"type {t.size_or_type} is void or out of range"
        if t.extra not in (0, 1):
            return "var", f"linkage {t.extra} is not static (0) or global allocated (1)"
        return None

    def record_datasec(self, t: Type):
        size = t.size_or_type
        if not size:
            return "datasec", "size is 0"
        if t.kflag:
            return "kind-flag", "kind_flag must be 0 for DATASEC"
        if not t.name_off or _SECTION_NAME.fullmatch(self.name_at(t.name_off)) is None:
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

    def record_float(self, t: Type):
        if t.kflag:
            return "kind-flag", "kind_flag must be 0 for FLOAT"
        if t.size_or_type not in _FLOAT_SIZES:
            return "float-size", f"size {t.size_or_type} is not 2, 4, 8, 12 or 16"
        return None

    def record_decl_tag(self, t: Type):
        if not t.name_off or not self.name_at(t.name_off):
            return "name", "a DECL_TAG must have a value (name)"
        if t.extra < -1:
            return "decl-tag", f"component_idx {t.extra} is below -1"
        return None

    # -- pass 2: the kernel's resolve walk ------------------------------------------

    def kind(self, type_id: int) -> int:
        return self.kinds[type_id] if type_id < self.n else NULL

    def resolved(self, type_id: int) -> bool:
        state = self.state[type_id]
        if state == _BROKEN:
            raise _Broken
        return state == _RESOLVED

    def resolved_id(self, type_id: int) -> int:
        rid = self.resolved_ids[type_id]
        if rid is None:
            rid = self.base_resolution(type_id)[0]
        return rid

    def resolved_size(self, type_id: int) -> int:
        size = self.resolved_sizes[type_id]
        if size is None:
            size = self.base_resolution(type_id)[1]
        return size

    def base_resolution(self, type_id: int) -> tuple[int, int]:
        """What the resolve pass would have recorded for a (valid) base type."""
        self.resolved_ids[type_id] = self.resolved_sizes[type_id] = 0  # breaks cycles
        kind = self.kinds[type_id]
        t = self.types[type_id]
        rid = size = 0
        if kind in (f.FUNC, f.DECL_TAG):
            rid = t.size_or_type
        elif _MODIFIER[kind] or kind in (f.PTR, f.VAR):
            sized = self.id_size(t.size_or_type)
            rid = sized[0] if sized else self.resolved_id(t.size_or_type)
        elif kind == f.ARRAY:
            sized = self.id_size(t.extra[0])
            if sized:
                rid, size = sized[0], (sized[1] * t.extra[2]) & U32
        self.resolved_ids[type_id] = rid
        self.resolved_sizes[type_id] = size
        return rid, size

    def id_size(self, type_id: int) -> tuple[int, int] | None:
        """The kernel's btf_type_id_size: (id of the type that has the size, size)."""
        rule = _SIZE_RULE[self.kind(type_id)]
        if rule == NONE:
            return None
        if self.state[type_id] == _BROKEN:
            raise _Broken
        if rule == TARGET:
            type_id = self.resolved_id(type_id)
            rule = _SIZE_RULE[self.kind(type_id)]
        if rule == OWN:
            return type_id, self.types[type_id].size_or_type
        if rule == ARRAY:
            return type_id, self.resolved_size(type_id)
        if rule == POINTER:
            return type_id, POINTER_SIZE
        return None

    def int_regular(self, type_id: int) -> bool:
        data = self.types[type_id].extra
        bits = data & 0xFF
        return not bits & 7 and not (data >> 16) & 0xFF and bits // 8 in _INT_REGULAR_BYTES

    def push(self, type_id: int) -> None:
        stack = self.stack
        if len(stack) == MAX_RESOLVE_DEPTH:
            chain = " -> ".join(str(e[0]) for e in stack)
            raise _Reject(self.top, "resolve-depth",
                          f"resolving it needs more than {MAX_RESOLVE_DEPTH} nested types "
                          f"({chain} -> {type_id}); the kernel's limit is {MAX_RESOLVE_DEPTH}")
        state = self.state[type_id]
        if state == _BROKEN:
            raise _Broken
        if state != _NOT_VISITED:
            ids = [e[0] for e in stack]
            start = ids.index(type_id) if type_id in ids else 0
            chain = " -> ".join(str(i) for i in ids[start:])
            raise _Reject(self.top, "loop", f"loop of by-value references: {chain} -> "
                          f"{type_id}")
        self.state[type_id] = _VISITED
        stack.append([type_id, 0])
        if self.mode == _MODE_TBD:
            kind = self.kinds[type_id]
            if kind == f.PTR:
                self.mode = _MODE_PTR
            elif kind in (f.STRUCT, f.UNION, f.ARRAY):
                self.mode = _MODE_STRUCT

    def pop_resolved(self, resolved_id: int, resolved_size: int) -> None:
        type_id = self.stack.pop()[0]
        self.resolved_ids[type_id] = resolved_id
        self.resolved_sizes[type_id] = resolved_size
        self.state[type_id] = _RESOLVED

    def check_all_resolve(self) -> None:
        kinds = self.kinds
        state = self.state
        for type_id in range(self.first, self.n):
            if state[type_id] == _BROKEN:
                continue
            kind = kinds[type_id]
            if _NEEDS_RESOLVE[kind] and state[type_id] != _RESOLVED:
                self.resolve(type_id)
            elif kind == f.FUNC_PROTO:
                try:
                    self.func_proto_check(type_id)
                except _Reject as r:
                    self.report(r.type_id, r.rule, r.message)
                except _Broken:
                    state[type_id] = _BROKEN

    def resolve(self, top: int) -> bool:
        """Walk from `top` until it is resolved; False (and reported) when it fails."""
        self.top = top
        self.mode = _MODE_TBD
        self.stack = stack = []
        resolvers = _RESOLVERS
        kinds = self.kinds
        try:
            self.push(top)
            while stack:
                entry = stack[-1]
                resolvers[kinds[entry[0]]](self, entry)
            if not self.resolve_valid(top):
                raise _Reject(top, "resolve-state", "the kernel's consistency check after "
                              "resolving fails")
            return True
        except _Reject as r:
            self.report(r.type_id, r.rule, r.message)
        except _Broken:
            pass
        for entry in stack:
            self.state[entry[0]] = _BROKEN
        self.state[top] = _BROKEN
        stack.clear()
        return False

    def resolve_valid(self, type_id: int) -> bool:
        if not self.resolved(type_id):
            return False
        kind = self.kinds[type_id]
        rid = self.resolved_id(type_id)
        rsize = self.resolved_size(type_id)
        if kind in (f.STRUCT, f.UNION, f.DATASEC):
            return not rid and not rsize
        if kind in (f.DECL_TAG, f.FUNC):
            return bool(rid) and not rsize
        if _MODIFIER[kind] or kind in (f.PTR, f.VAR):
            rkind = self.kind(rid)
            return rkind != NULL and not _MODIFIER[rkind] and rkind not in (f.VAR, f.DATASEC)
        if kind == f.ARRAY:
            elem, _, nelems = self.types[type_id].extra
            sized = self.id_size(elem)
            return (sized is not None and not _MODIFIER[self.kind(sized[0])]
                    and (nelems * sized[1]) & U32 == rsize)
        return False

    def walks_on(self, type_id: int) -> bool:
        """Whether the walk must descend into `type_id` before the current type can finish."""
        return not _SINK[self.mode][self.kind(type_id)] and not self.resolved(type_id)

    def resolve_modifier(self, entry: list[int]) -> None:
        type_id = entry[0]
        target = self.types[type_id].size_or_type
        kind = self.kind(target)
        if kind == NULL or _SOURCE_ONLY[kind]:
            raise _Reject(type_id, "type-id", self.bad_target(type_id, target))
        if self.walks_on(target):
            self.push(target)
            return
        self.finish_reference(type_id, target, kind)

    def bad_target(self, type_id: int, target: int) -> str:
        if target >= self.n:
            return f"refers to {self.describe(target)}"
        return (f"refers to {self.describe(target)}; a {f.kind_name(self.kinds[type_id])} "
                "cannot refer to a VAR, DATASEC or DECL_TAG")

    def resolve_ptr(self, entry: list[int]) -> None:
        type_id = entry[0]
        target = self.settled_target(type_id)
        if target is not None:
            self.finish_reference(type_id, target, self.kind(target))

    def settled_target(self, type_id: int) -> int | None:
        """The type a PTR or VAR refers to once the walk has settled it, or None when the
        walk goes on there first."""
        target = self.types[type_id].size_or_type
        kind = self.kind(target)
        if kind == NULL or _SOURCE_ONLY[kind]:
            raise _Reject(type_id, "type-id", self.bad_target(type_id, target))
        if self.walks_on(target):
            self.push(target)
            return None
        if _MODIFIER[kind] and self.follow_pointer(target):
            return None
        return target

    def follow_pointer(self, modifier: int) -> bool:
        """Past a resolved modifier that ends in a PTR, walk that PTR too (pointer loops)."""
        rid = self.resolved_id(modifier)
        if self.kind(rid) == f.PTR and self.walks_on(rid):
            self.push(rid)
            return True
        return False

    def finish_reference(self, type_id: int, target: int, kind: int) -> None:
        sized = self.id_size(target)
        if sized is not None:
            self.pop_resolved(sized[0], 0)
            return
        if self.resolved(target):
            target = self.resolved_id(target)
            kind = self.kind(target)
        if kind not in (VOID, f.FWD, f.FUNC_PROTO):
            raise _Reject(type_id, "type-id", f"refers to {self.describe(target)}, which has "
                          "no size and is not void, a FWD or a FUNC_PROTO")
        self.pop_resolved(target, 0)

    def resolve_var(self, entry: list[int]) -> None:
        type_id = entry[0]
        target = self.settled_target(type_id)
        if target is None:
            return
        sized = self.id_size(target)
        if sized is None:
            raise _Reject(type_id, "var", f"its type, {self.describe(target)}, has no size")
        self.pop_resolved(sized[0], 0)

    def resolve_array(self, entry: list[int]) -> None:
        type_id = entry[0]
        elem, index, nelems = self.types[type_id].extra
        kind = self.kind(index)
        if _NOSIZE[kind] or _SOURCE_ONLY[kind]:
            raise _Reject(type_id, "array", f"index type is {self.describe(index)}")
        if self.walks_on(index):
            self.push(index)
            return
        sized = self.id_size(index)
        if sized is None or self.kind(sized[0]) != f.INT or not self.int_regular(sized[0]):
            raise _Reject(type_id, "array", f"index type {self.describe(index)} is not a "
                          "regular int")
        kind = self.kind(elem)
        if _NOSIZE[kind] or _SOURCE_ONLY[kind]:
            raise _Reject(type_id, "array", f"element type is {self.describe(elem)}")
        if self.walks_on(elem):
            self.push(elem)
            return
        sized = self.id_size(elem)
        if sized is None:
            raise _Reject(type_id, "array", f"element type {self.describe(elem)} has no size")
        if self.kind(sized[0]) == f.INT and not self.int_regular(sized[0]):
            raise _Reject(type_id, "array", f"element type {self.describe(elem)} is an int "
                          "with a bit offset or an odd bit count")
        if nelems and sized[1] > U32 // nelems:
            raise _Reject(type_id, "array", f"{nelems} elements of {sized[1]} bytes overflow "
                          "32 bits")
        self.pop_resolved(sized[0], sized[1] * nelems)

    def resolve_struct(self, entry: list[int]) -> None:
        type_id, next_member = entry
        t = self.types[type_id]
        items = t.items
        if next_member:
            _, mtype, word = items[next_member - 1]
            if not self.resolved(mtype):
                raise _Reject(type_id, "resolve-state", f"member {next_member - 1} is not "
                              "resolved after its walk")
            self.check_member(type_id, t, next_member - 1, mtype, word)
        for i in range(next_member, len(items)):
            name_off, mtype, word = items[i]
            kind = self.kind(mtype)
            if _NOSIZE[kind] or _SOURCE_ONLY[kind]:
                raise _Reject(type_id, "member-type", f"member {self.member(name_off, i)} has "
                              f"{self.describe(mtype)} as its type, which has no size")
            if self.walks_on(mtype):
                entry[1] = i + 1
                self.push(mtype)
                return
            self.check_member(type_id, t, i, mtype, word)
        self.pop_resolved(0, 0)

    def member(self, name_off: int, index: int) -> str:
        return _quote(self.name_at(name_off)) if name_off else f"#{index}"

    def check_member(self, sid: int, st: Type, index: int, mtype: int, word: int) -> None:
        """The kernel's check_member / check_kflag_member, by the member type's kind, for
        member number `index` of struct `sid`."""
        member = self.member(st.items[index][0], index)
        kind = self.kind(mtype)
        if _MODIFIER[kind]:
            sized = self.id_size(mtype)
            if sized is None:
                raise _Reject(sid, "member-type", f"member {member} has "
                              f"{self.describe(mtype)} as its type, which has no size")
            mtype = sized[0]
            kind = self.kind(mtype)
        if self.state[mtype] == _BROKEN:
            raise _Broken
        size = st.size_or_type
        what = f.kind_name(st.kind).lower()
        if st.kflag:
            bitfield = word >> 24
            offset = word & 0xFFFFFF
            if kind == f.INT:
                self.check_kflag_int_member(sid, mtype, member, offset, bitfield, size, what)
                return
            if kind in (f.ENUM, f.ENUM64):
                nbits = bitfield
                if not nbits:
                    if offset & 7:
                        raise _Reject(sid, "member-alignment", f"member {member} at bit "
                                      f"offset {offset} is not byte-aligned")
                    nbits = 32
                elif nbits > 32:
                    raise _Reject(sid, "bitfield", f"member {member} is a {nbits}-bit "
                                  "bitfield of an enum; the kernel allows at most 32")
                end = (offset + nbits + 7) // 8
                if size < end:
                    raise _Reject(sid, "member-size", f"member {member} ends at byte {end}, "
                                  f"past the {what} size {size}")
                return
            if bitfield:
                raise _Reject(sid, "bitfield", f"member {member} is a bitfield of "
                              f"{self.describe(mtype)}; only ints and enums can be")
            word = offset
        if kind == f.INT:
            data = self.types[mtype].extra
            bits = data & 0xFF
            offset = word + ((data >> 16) & 0xFF)
            if offset > U32:
                raise _Reject(sid, "member-offset", f"member {member} bit offset overflows")
            nbits = bits + (offset & 7)
            if nbits > 128:
                raise _Reject(sid, "bitfield", f"member {member} spans more than 128 bits")
            start = offset >> 3
            if size < start or size - start < (nbits + 7) // 8:
                raise _Reject(sid, "member-size", f"member {member} at bit offset {word} "
                              f"({bits} bits) runs past the {what} size {size}")
            return
        if kind in (f.PTR, f.ARRAY, f.STRUCT, f.UNION, f.ENUM, f.ENUM64, f.FLOAT):
            msize = POINTER_SIZE if kind == f.PTR else self.id_size(mtype)[1]
            if kind == f.FLOAT:
                align = min(POINTER_SIZE, msize) * 8
                if word % align:
                    raise _Reject(sid, "member-alignment", f"member {member} at bit offset "
                                  f"{word} is not aligned to its float size")
                if word // 8 + msize > size:
                    raise _Reject(sid, "member-size", f"member {member} at bit offset {word} "
                                  f"({msize} bytes) runs past the {what} size {size}")
                return
            if word & 7:
                raise _Reject(sid, "member-alignment", f"member {member} at bit offset "
                              f"{word} is not byte-aligned")
            if (size - (word >> 3)) & U32 < msize:
                raise _Reject(sid, "member-size", f"member {member} at bit offset {word} "
                              f"({msize} bytes) runs past the {what} size {size}")
            return
        raise _Reject(sid, "member-type", f"member {member} has {self.describe(mtype)} as its "
                      "type, which cannot be a member")

    def check_kflag_int_member(self, sid: int, mtype: int, member: str, offset: int,
                               bitfield: int, size: int, what: str) -> None:
        if not self.int_regular(mtype):
            raise _Reject(sid, "bitfield", f"member {member} has {self.describe(mtype)} as "
                          "its type; with kind_flag set it must be a plain 1/2/4/8/16-byte int")
        int_bits = self.types[mtype].extra & 0xFF
        nbits = bitfield
        if not nbits:
            if offset & 7:
                raise _Reject(sid, "member-alignment", f"member {member} at bit offset "
                              f"{offset} is not byte-aligned")
            nbits = int_bits
        elif nbits > int_bits:
            raise _Reject(sid, "bitfield", f"member {member} is a {nbits}-bit bitfield of a "
                          f"{int_bits}-bit int")
        copy_bits = nbits + (offset & 7)
        if copy_bits > 128:
            raise _Reject(sid, "bitfield", f"member {member} spans more than 128 bits")
        start = offset >> 3
        if size < start or size - start < (copy_bits + 7) // 8:
            raise _Reject(sid, "member-size", f"member {member} at bit offset {offset} "
                          f"({nbits} bits) runs past the {what} size {size}")

    def resolve_datasec(self, entry: list[int]) -> None:
        self.mode = _MODE_TBD
        type_id, next_member = entry
        items = self.types[type_id].items
        for i in range(next_member, len(items)):
            vtype, _, vsize = items[i]
            if self.kind(vtype) != f.VAR:
                raise _Reject(type_id, "datasec", f"entry {i} is {self.describe(vtype)}, "
                              "not a VAR")
            if self.walks_on(vtype):
                entry[1] = i + 1
                self.push(vtype)
                return
            target = self.types[vtype].size_or_type
            sized = self.id_size(target)
            if sized is None:
                raise _Reject(type_id, "datasec", f"entry {i}: the type of VAR {vtype} has "
                              "no size")
            if vsize < sized[1]:
                raise _Reject(type_id, "datasec", f"entry {i} has size {vsize}, smaller than "
                              f"its VAR's type ({sized[1]} bytes)")
        self.pop_resolved(0, 0)

    def resolve_func(self, entry: list[int]) -> None:
        type_id = entry[0]
        proto = self.types[type_id].size_or_type
        if self.kind(proto) != f.FUNC_PROTO:
            raise _Reject(type_id, "func", f"refers to {self.describe(proto)}, not a "
                          "FUNC_PROTO")
        if self.state[proto] == _BROKEN:
            raise _Broken
        for i, (name_off, ptype) in enumerate(self.types[proto].items):
            if not name_off and ptype:
                raise _Reject(type_id, "func", f"parameter {i + 1} of its FUNC_PROTO "
                              f"{proto} has no name")
        self.pop_resolved(proto, 0)

    def resolve_decl_tag(self, entry: list[int]) -> None:
        type_id = entry[0]
        t = self.types[type_id]
        target = t.size_or_type
        kind = self.kind(target)
        if not _DECL_TAG_TARGET[kind]:
            raise _Reject(type_id, "decl-tag", f"targets {self.describe(target)}; it must be "
                          "a FUNC, STRUCT, UNION, VAR or TYPEDEF")
        if self.walks_on(target):
            self.push(target)
            return
        index = t.extra
        if index != -1:
            if kind in (f.VAR, f.TYPEDEF):
                raise _Reject(type_id, "decl-tag", f"component_idx {index} on a "
                              f"{f.kind_name(kind)}, which has no components")
            if kind == f.FUNC:
                vlen = len(self.types[self.types[target].size_or_type].items)
            else:
                vlen = len(self.types[target].items)
            if index >= vlen:
                raise _Reject(type_id, "decl-tag", f"component_idx {index} is out of range "
                              f"for {self.describe(target)} with {vlen} components")
        self.pop_resolved(target, 0)

    def resolve_unexpected(self, entry: list[int]) -> None:
        raise _Reject(entry[0], "resolve-state", "the kernel cannot resolve this kind")

    def func_proto_check(self, type_id: int) -> None:
        t = self.types[type_id]
        ret = t.size_or_type
        if ret:
            kind = self.kind(ret)
            if kind == NULL or _SOURCE_ONLY[kind]:
                raise _Reject(type_id, "func-proto", f"return type is {self.describe(ret)}")
            if _NEEDS_RESOLVE[kind] and not self.resolved(ret) and not self.resolve(ret):
                self.state[type_id] = _BROKEN
                return
            if self.id_size(ret) is None:
                raise _Reject(type_id, "func-proto", f"return type {self.describe(ret)} has "
                              "no size")
        params = t.items
        count = len(params)
        if count and not params[-1][1]:
            if params[-1][0]:
                raise _Reject(type_id, "func-proto", "the trailing vararg entry (type 0) has "
                              "a name")
            count -= 1
        for i in range(count):
            name_off, ptype = params[i]
            kind = self.kind(ptype)
            if kind == NULL or _SOURCE_ONLY[kind]:
                raise _Reject(type_id, "func-proto", f"parameter {i + 1} is "
                              f"{self.describe(ptype)}")
            if name_off and not (self.offset_ok(name_off) and self.is_identifier(name_off)):
                raise _Reject(type_id, "name", f"parameter {i + 1} name "
                              f"{_quote(self.name_at(name_off))} is not a valid identifier")
            if _NEEDS_RESOLVE[kind] and not self.resolved(ptype) and not self.resolve(ptype):
                self.state[type_id] = _BROKEN
                return
            if self.id_size(ptype) is None:
                raise _Reject(type_id, "func-proto", f"parameter {i + 1} type "
                              f"{self.describe(ptype)} has no size")

    # -- pass 3: type tags before other modifiers -----------------------------------

    def check_type_tags(self) -> None:
        kinds = self.kinds
        state = self.state
        types = self.types
        good = self.first - 1
        for type_id in range(self.first, self.n):
            kind = kinds[type_id]
            if not _MODIFIER[kind] or state[type_id] == _BROKEN:
                continue
            in_tags = kind == f.TYPE_TAG
            cur = type_id
            budget = MAX_RESOLVE_DEPTH
            while _MODIFIER[kind]:
                if not budget:
                    self.report(type_id, "modifier-chain", f"its chain of modifiers is longer "
                                f"than {MAX_RESOLVE_DEPTH}")
                    break
                budget -= 1
                if kind == f.TYPE_TAG:
                    if not in_tags:
                        self.report(type_id, "type-tag-order", f"TYPE_TAG {cur} comes after "
                                    "another modifier in its chain; type tags must come first")
                        break
                elif in_tags:
                    in_tags = False
                if cur <= good:
                    break
                cur = types[cur].size_or_type
                if cur >= self.n or state[cur] == _BROKEN:
                    break
                kind = kinds[cur]
            good = type_id


def _type_section_size(btf: Btf) -> int:
    size = 0
    fixed = f.FIXED_WORDS
    item_words = f.ITEM_WORDS
    for t in btf.types:
        kind = t.kind
        size += 12 + 4 * fixed.get(kind, 0) + 4 * item_words.get(kind, 0) * len(t.items)
    return size


_RECORD_CHECKS = {
    f.INT: _Checker.record_int,
    f.PTR: _Checker.record_reference,
    f.ARRAY: _Checker.record_array,
    f.STRUCT: _Checker.record_struct,
    f.UNION: _Checker.record_struct,
    f.ENUM: _Checker.record_enum,
    f.FWD: _Checker.record_fwd,
    f.TYPEDEF: _Checker.record_reference,
    f.VOLATILE: _Checker.record_reference,
    f.CONST: _Checker.record_reference,
    f.RESTRICT: _Checker.record_reference,
    f.FUNC: _Checker.record_func,
    f.FUNC_PROTO: _Checker.record_func_proto,
    f.VAR: _Checker.record_var,
    f.DATASEC: _Checker.record_datasec,
    f.FLOAT: _Checker.record_float,
    f.DECL_TAG: _Checker.record_decl_tag,
    f.TYPE_TAG: _Checker.record_reference,
    f.ENUM64: _Checker.record_enum,
}

_RESOLVERS = [_Checker.resolve_unexpected] * (NULL + 1)
for _kind in (f.TYPEDEF, f.VOLATILE, f.CONST, f.RESTRICT, f.TYPE_TAG):
    _RESOLVERS[_kind] = _Checker.resolve_modifier
_RESOLVERS[f.PTR] = _Checker.resolve_ptr
_RESOLVERS[f.VAR] = _Checker.resolve_var
_RESOLVERS[f.ARRAY] = _Checker.resolve_array
_RESOLVERS[f.STRUCT] = _Checker.resolve_struct
_RESOLVERS[f.UNION] = _Checker.resolve_struct
_RESOLVERS[f.DATASEC] = _Checker.resolve_datasec
_RESOLVERS[f.FUNC] = _Checker.resolve_func
_RESOLVERS[f.DECL_TAG] = _Checker.resolve_decl_tag
