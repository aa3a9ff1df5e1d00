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

Every finding is a message key and its raw values; check/words.py alone words them. When
the compiled part is built, the same passes in C (canonbtf/check/csrc/check.c) report the
type section's findings of a BTF the reader left packed, in the same order and with the
same keys and values, so no `Type` is ever made and `check` words them as it prints them
(a damaged BTF can have half a million: 16 copies of vmlinux in one blob, 13-16 s CPU and
1.1 GB by these passes, 1.6-1.8 s and 164 MB so). The passes here stay the reference and the
fallback (a BTF built in memory, a base type the C gives up on, CANONBTF_PURE, PyPy);
tests/test_compiled_check.py holds both to the same lines.

As in btf.c, what differs by kind is in tables of per-kind functions: the record checks
(check/records.py), the resolve steps and member checks (check/resolve.py); the state they
share is check/env.py's. This module runs the passes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from ..btf import format as f
from ..btf.model import Btf
from ..spec import kinds as spec
from .accel import compiled_findings
from .env import (
    BROKEN,
    MAX_NAME_OFFSET,
    MAX_RESOLVE_DEPTH,
    MAX_TYPE_ID,
    MODIFIER,
    CheckEnv,
    Violation,
)
from .records import check_records
from .resolve import check_all_resolve
from .words import located, quote, word

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




def validate(btf: Btf) -> list[Violation]:
    """Every violation of the kernel's BTF rules in `btf` (own types only for split BTF)."""
    found = compiled_findings(btf)
    if found is None:
        return validate_in_python(btf)
    return [Violation(type_id, kind, name, *word(key, values))
            for type_id, kind, name, key, values in _with_blob(btf, found)]


def violation_lines(btf: Btf) -> Iterator[str]:
    """str() of each of `validate`'s violations, one at a time; where the compiled pass
    found them, without making them (a damaged BTF can have a million)."""
    found = compiled_findings(btf)
    if found is None:
        return map(str, validate_in_python(btf))
    return (located(type_id, kind, name, word(key, values)[1])
            for type_id, kind, name, key, values in _with_blob(btf, found))


def _with_blob(btf: Btf, found: Iterator[tuple]) -> Iterator[tuple]:
    """The blob's findings, as the compiled pass gives its own, then `found`."""
    blob = [(None, None, "", key, tuple(values)) for key, *values in _blob_findings(btf)]
    return itertools.chain(blob, found)


def validate_in_python(btf: Btf) -> list[Violation]:
    """`validate` by the reference passes alone, whatever the compiled part would say."""
    env = CheckEnv(btf)
    for key, *values in _blob_findings(btf):
        env.report_blob(key, *values)
    check_records(env)
    check_all_resolve(env)
    _check_type_tags(env)
    return sorted(env.violations, key=lambda v: -1 if v.type_id is None else v.type_id)


def order_dependent_reference(btf: Btf) -> str | None:
    """A pointer, typedef or modifier of `btf`'s own that refers to a FUNC record.

    The kernel takes such a reference only when the FUNC has a lower id than the
    reference (it is resolved to the FUNC's prototype by then), so whether the blob loads
    depends on type order: renumbering can turn an accepted blob into a rejected one.
    Compilers and pahole point at the FUNC_PROTO instead.
    """
    all_types = btf.all_types()
    for type_id, t in btf.own():
        if MODIFIER[t.kind] or t.kind == f.PTR:
            target = all_types[t.size_or_type] if t.size_or_type else None
            if target is not None and target.kind == f.FUNC:
                return (f"type {type_id} ({f.kind_name(t.kind)}) refers to FUNC "
                        f"{quote(btf.name(target.name_off))} (type {t.size_or_type}), not to "
                        "its FUNC_PROTO")
    return None


def _blob_findings(btf: Btf) -> list[tuple]:
    """The blob as a whole: header, size, string section, number of types; each finding
    as (check/words key, values...)."""
    found: list[tuple] = []
    split = btf.base is not None
    if any(btf.header_tail):
        found.append(("header", f.HEADER_LEN + len(btf.header_tail)))
    size = f.HEADER_LEN + len(btf.header_tail) + _type_section_size(btf)
    size += btf.strings.size + len(btf.layout)
    if size > f.MAX_BLOB_SIZE:
        found.append(("blob-size", size, f.MAX_BLOB_SIZE))
    if not split and not len(btf):
        found.append(("no-types",))
    strs = btf.strings.data()
    if strs or not split:
        if not strs:
            found.append(("strings-empty",))
        elif strs[-1] != 0:
            found.append(("strings-end",))
        elif len(strs) - 1 > MAX_NAME_OFFSET:
            found.append(("strings-size", len(strs), MAX_NAME_OFFSET + 1))
        if not split and strs and strs[0] != 0:
            found.append(("strings-start",))
    if btf.last_id >= MAX_TYPE_ID:
        found.append(("too-many-types", btf.last_id, MAX_TYPE_ID - 1))
    return found


def _check_type_tags(env: CheckEnv) -> None:
    """Pass 3: in every chain of modifiers, type tags come first (and it ends)."""
    kinds = env.kinds
    state = env.state
    types = env.types
    good = env.first - 1
    for type_id in range(env.first, env.n):
        kind = kinds[type_id]
        if not MODIFIER[kind] or state[type_id] == BROKEN:
            continue
        in_tags = kind == f.TYPE_TAG
        cur = type_id
        budget = MAX_RESOLVE_DEPTH
        while MODIFIER[kind]:
            if not budget:
                env.report(type_id, "modifier-chain")
                break
            budget -= 1
            if kind == f.TYPE_TAG:
                if not in_tags:
                    env.report(type_id, "type-tag-order", cur)
                    break
            elif in_tags:
                in_tags = False
            if cur <= good:
                break
            cur = types[cur].size_or_type
            if cur >= env.n or state[cur] == BROKEN:
                break
            kind = kinds[cur]
        good = type_id


def _type_section_size(btf: Btf) -> int:
    if btf.packed is not None:
        return memoryview(btf.packed.words).nbytes
    size = 0
    fixed = spec.FIXED_WORDS
    item_words = spec.ITEM_WORDS
    for t in btf.types:
        kind = t.kind
        size += 12 + 4 * fixed.get(kind, 0) + 4 * item_words.get(kind, 0) * len(t.items)
    return size
