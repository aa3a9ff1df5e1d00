"""What the validator knows while it checks one BTF: the kernel's view of every type.

This is kernel/bpf/btf.c's verifier environment: the kind of each id (NULL for one that
does not exist), how far each type is resolved and to what id and size, the resolve
stack and its mode, and the violations found so far. The per-kind checks
(check/records.py, check/resolve.py) and the validator's passes (check/validator.py) work on it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..btf import format as f
from ..btf.model import Btf
from ..btf.sizes import ARRAY, NONE, OWN, POINTER, SIZE_RULE, TARGET
from ..spec import kinds as spec
from .words import located, word

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
_INT_REGULAR_BYTES = frozenset({1, 2, 4, 8, 16})

NULL = f.MAX_KIND + 1  # the kind of a type id that does not exist (the kernel's NULL)
VOID = f.UNKN  # id 0


def kinds(*wanted: int) -> tuple[bool, ...]:
    """A table by kind (NULL included): whether the kind is one of `wanted`."""
    return tuple(k in wanted for k in range(NULL + 1))


MODIFIER = kinds(*spec.MODIFIER)
NEEDS_RESOLVE = kinds(*spec.NEEDS_RESOLVE)
SOURCE_ONLY = kinds(*spec.SOURCE_ONLY)
# How btf_type_id_size sizes each kind: the rule every user of sizes follows, except that
# the kernel sizes a VAR through its type too.
_SIZE_RULE = tuple(TARGET if k == f.VAR else SIZE_RULE[k] for k in range(NULL)) + (NONE,)
NOSIZE = tuple(rule == NONE for rule in _SIZE_RULE)
# What ends a walk, by walk mode: nothing yet (TBD), a pointer, a struct or array.
MODE_TBD, MODE_PTR, MODE_STRUCT = 0, 1, 2
_SINK = (
    tuple(not x for x in NEEDS_RESOLVE),
    tuple(not m and k != f.PTR for k, m in enumerate(MODIFIER)),
    tuple(not m and k not in (f.ARRAY, f.STRUCT, f.UNION) for k, m in enumerate(MODIFIER)),
)

NOT_VISITED, VISITED, RESOLVED, BROKEN = 0, 1, 2, 3


class Violation(NamedTuple):
    """One broken rule: where (type id and kind, or None for the blob), which rule, why.
    A tuple: `check` makes one per finding, and there may be a million."""

    type_id: int | None
    kind: int | None
    name: str
    rule: str
    message: str

    def __str__(self) -> str:
        return located(self.type_id, self.kind, self.name, self.message)


class Reject(Exception):
    """A rule is broken at `type_id` (check/words' message `key` with `values`); unwinds
    the walk in progress."""

    def __init__(self, type_id: int, key: str, *values: object):
        super().__init__(key)
        self.type_id = type_id
        self.key = key
        self.values = values


class Broken(Exception):
    """The walk reached a type that already failed: stop quietly, it was reported."""


class CheckEnv:
    """The state of one validation; see the module docstring."""

    def __init__(self, btf: Btf):
        self.btf = btf
        types = btf.all_types()
        self.types = types
        self.n = len(types)
        self.first = btf.first_id
        self.split = btf.base is not None
        kind_of = [VOID] * self.n
        for i in range(1, self.n):
            kind = types[i].kind
            # A kind the kernel does not know (reported as such) is read as a missing type.
            kind_of[i] = kind if kind <= f.MAX_KIND else NULL
        self.kinds = kind_of
        first = self.first
        # Base types count as resolved (as the kernel treats its own vmlinux BTF); their
        # resolved ids and sizes are worked out on demand.
        self.state = bytearray([RESOLVED]) * first + bytearray(self.n - first)
        if not self.split:
            self.state[0] = NOT_VISITED
        self.resolved_ids: list[int | None] = [None] * first + [0] * (self.n - first)
        self.resolved_sizes: list[int | None] = [None] * first + [0] * (self.n - first)
        self.resolved_ids[0] = self.resolved_sizes[0] = 0
        self.str_end = btf.strings.end
        self.identifier_ok: dict[int, bool] = {}
        self.violations: list[Violation] = []
        self.stack: list[list[int]] = []
        self.mode = MODE_TBD
        self.top = 0

    # -- names and reports -------------------------------------------------------------

    def type_name(self, type_id: int) -> str:
        t = self.types[type_id] if 0 < type_id < self.n else None
        return self.name_at(t.name_off) if t is not None else ""

    def name_at(self, offset: int) -> str:
        try:
            return self.btf.name(offset)
        except (KeyError, AttributeError):
            return ""

    def offset_ok(self, offset: int) -> bool:
        return offset < self.str_end and offset <= MAX_NAME_OFFSET

    def is_identifier(self, offset: int) -> bool:
        ok = self.identifier_ok.get(offset)
        if ok is None:
            ok = _IDENTIFIER.fullmatch(self.name_at(offset)) is not None
            self.identifier_ok[offset] = ok
        return ok

    def report(self, type_id: int, key: str, *values: object) -> None:
        """Violation `key` (check/words) with `values` at `type_id`, which is now broken."""
        kind = self.types[type_id].kind if 0 < type_id < self.n else None
        self.violations.append(Violation(type_id, kind, self.type_name(type_id),
                                         *word(key, values)))
        if 0 < type_id < self.n:
            self.state[type_id] = BROKEN

    def report_blob(self, key: str, *values: object) -> None:
        self.violations.append(Violation(None, None, "", *word(key, values)))

    def ref(self, type_id: int) -> tuple[int, int | None, str]:
        """A type as check/words describes it."""
        if 0 < type_id < self.n:
            return type_id, self.types[type_id].kind, self.type_name(type_id)
        return type_id, None, ""

    def member(self, name_off: int, index: int) -> tuple[str | None, int]:
        """A member (or enum value) as check/words labels it."""
        return (self.name_at(name_off) if name_off else None), index

    # -- what is resolved, to what ---------------------------------------------------

    def kind(self, type_id: int) -> int:
        return self.kinds[type_id] if type_id < self.n else NULL

    def resolved(self, type_id: int) -> bool:
        state = self.state[type_id]
        if state == BROKEN:
            raise Broken
        return state == RESOLVED

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
        elif MODIFIER[kind] or kind in (f.PTR, f.VAR):
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
        if self.state[type_id] == BROKEN:
            raise Broken
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

    # -- the resolve stack -------------------------------------------------------------

    def push(self, type_id: int) -> None:
        stack = self.stack
        if len(stack) == MAX_RESOLVE_DEPTH:
            raise Reject(self.top, "resolve-depth", tuple(e[0] for e in stack), type_id)
        state = self.state[type_id]
        if state == BROKEN:
            raise Broken
        if state != NOT_VISITED:
            ids = [e[0] for e in stack]
            start = ids.index(type_id) if type_id in ids else 0
            raise Reject(self.top, "loop", tuple(ids[start:]), type_id)
        self.state[type_id] = VISITED
        stack.append([type_id, 0])
        if self.mode == MODE_TBD:
            kind = self.kinds[type_id]
            if kind == f.PTR:
                self.mode = MODE_PTR
            elif kind in (f.STRUCT, f.UNION, f.ARRAY):
                self.mode = MODE_STRUCT

    def pop_resolved(self, resolved_id: int, resolved_size: int) -> None:
        type_id = self.stack.pop()[0]
        self.resolved_ids[type_id] = resolved_id
        self.resolved_sizes[type_id] = resolved_size
        self.state[type_id] = RESOLVED

    def walks_on(self, type_id: int) -> bool:
        """Whether the walk must descend into `type_id` before the current type can finish."""
        return not _SINK[self.mode][self.kind(type_id)] and not self.resolved(type_id)
