"""A vmlinux.h whose text depends on the types only, never on their ids (docs/C-HEADER.md).

Each type is spelled the way `bpftool btf dump file X format c` spells it; what differs is
the order. Every top-level definition has a canonical key (its name, a kind rank and, for a
name several types share, a structural tie-break) and a placement key: enums and forward
declarations, then typedefs, then the linkage structs (a pointer or two: list_head), then
the other structs and unions in bands of the depth of what they embed by value, each group
by canonical key. The header is the smallest order by placement key that defines every
type before a by-value use, so a definition's place depends on itself and its
dependencies only: adding a type moves nothing else. Same-name types get `___2`, `___3`
suffixes in canonical order.
"""

from __future__ import annotations

import hashlib
import heapq
import weakref
from collections.abc import Callable
from typing import TextIO

from ..btf import format as f
from ..btf.model import Btf, Type
from ..btf.sizes import TypeSizes, by_value_edges, pointer_size, round_up
from ..errors import InputError
from .c_shape import c_shape_problem
from .declarator import Declarators, declarator_chain

# How a type is used where it is mentioned: by value (it must be complete) or through a
# pointer or in a prototype (a declaration is enough).
_VALUE = 0
_REF = 1

# Rank of each defining kind in the key, after the name: the tie-break between a struct and
# a typedef of the same name (different C namespaces, so both keep the plain name).
_KIND_RANK = {f.ENUM: 0, f.ENUM64: 0, f.FWD: 1, f.STRUCT: 2, f.UNION: 2, f.TYPEDEF: 3}

_TAG_KINDS = frozenset({f.STRUCT, f.UNION, f.ENUM, f.ENUM64})
# What a mentioned definition asks of the order (see `_dependencies`).
_COMPOSITE, _TYPEDEF, _BUILTIN, _OTHER = range(4)
_NAMED_KINDS = _TAG_KINDS | {f.FWD, f.TYPEDEF}
# `mode` attributes that give an enum a size other than int's (`word` is DI on 64-bit).
_ENUM_MODES = {1: "byte", 2: "HI", 8: "DI"}

# A typedef for a compiler built-in: defining it again breaks the build (bpftool skips it too).
_BUILTIN_TYPEDEFS = frozenset({"__builtin_va_list"})

KFUNC_TAG = "bpf_kfunc"
FASTCALL_TAG = "bpf_fastcall"

_PROLOGUE = """\
#ifndef {guard}
#define {guard}

#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)
#endif

"""
_KFUNC_MACROS = """\
#ifndef __ksym
#define __ksym __attribute__((section(".ksyms")))
#endif

#ifndef __weak
#define __weak __attribute__((weak))
#endif

#ifndef __bpf_fastcall
#if __has_attribute(bpf_fastcall)
#define __bpf_fastcall __attribute__((bpf_fastcall))
#else
#define __bpf_fastcall
#endif
#endif

"""
_EPILOGUE = """\
#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute pop
#endif

#endif /* {guard} */
"""
VMLINUX_GUARD = "__VMLINUX_H__"

_TABS = "\t" * 64

def _tabs(level: int) -> str:
    return _TABS[:level] if level <= 64 else "\t" * level


def _is_linkage(types: list[Type | None], t: Type, ptr_size: int) -> bool:
    """A struct or union of at most two pointers and nothing else (list_head, hlist_node,
    callback_head): the leaves other structs embed most, placed before all other structs."""
    if t.size_or_type > 2 * ptr_size:
        return False
    for member in t.items:
        held = types[member[1]]
        if held is None or held.kind != f.PTR:
            return False
    return True


def dump_c(btf: Btf, out: TextIO) -> None:
    """Write the C header for `btf` (for split BTF: its own types, to follow the base's).
    BTF that C cannot spell (see c_shape) is an InputError, before anything is written."""
    header = _header_for(btf)
    body = header.body()
    if btf.base is None:
        guard = VMLINUX_GUARD
    else:
        # Module headers are included after the base's, so they need a guard of their own;
        # derived from the content, it is as stable as the content.
        digest = hashlib.sha256(body.encode("latin-1")).hexdigest()[:16].upper()
        guard = f"__VMLINUX_SPLIT_{digest}_H__"
    write_header(out, guard, bool(header.kfuncs), body)


def write_header(out: TextIO, guard: str, kfuncs: bool, body: str) -> None:
    """The guard, the CO-RE pragma and (with kfuncs) their macros around `body`: shared
    by the full header and the slim ones (emit/slim.py), so both say the same."""
    out.write(_PROLOGUE.format(guard=guard))
    if kfuncs:
        out.write(_KFUNC_MACROS)
    out.write(body)
    out.write(_EPILOGUE.format(guard=guard))


def forward_block(header: _Header, tags: list[int]) -> str:
    """The sorted forward declarations of struct and union `tags`, then a blank line."""
    if not tags:
        return ""
    types = header.types
    lines = sorted(("union " if types[tag].kind == f.UNION else "struct ")
                   + header.display.get(tag, header.names[tag]) + ";\n" for tag in tags)
    return "".join(lines) + "\n"


def kfunc_block(header: _Header, kfuncs: list[tuple[str, int, bool]]) -> str:
    """`extern` prototypes of `kfuncs` (entries of `_Header.kfuncs`), as bpftool >= 7.5."""
    if not kfuncs:
        return ""
    parts = ["/* BPF kfuncs */\n#ifndef BPF_NO_KFUNC_PROTOTYPES\n"]
    for name, fid, fastcall in kfuncs:
        decl = header.prototype(fid, name)[0]
        parts.append(f"extern {'__bpf_fastcall ' if fastcall else ''}{decl} __weak __ksym;\n")
    parts.append("#endif\n\n")
    return "".join(parts)


def header_names(btf: Btf) -> dict[int, str]:
    """The name each own named struct, union, enum and typedef has in the header (with
    its `___N` suffix), by type id: for tools and tests that check the header."""
    header = _header_for(btf)
    return {d: header.display.get(d, header.names[d]) for d in header.defs if header.names[d]}


_headers: weakref.WeakKeyDictionary[Btf, _Header] = weakref.WeakKeyDictionary()


def _header_for(btf: Btf) -> _Header:
    """One analysis per Btf object: a module's header needs its base's names."""
    header = _headers.get(btf)
    if header is None:
        # What C cannot spell would make the emitter loop or recurse without end.
        by_value = by_value_edges(btf.all_types())
        problem = c_shape_problem(btf, by_value)
        if problem:
            raise InputError(None, f"cannot be written as C: {problem}")
        base = _header_for(btf.base) if btf.base is not None else None
        header = _Header(btf, base, by_value)
        _headers[btf] = header
    return header


def _split_lookup(base: _Header, btf: Btf) -> Callable[[int], str]:
    """Offset -> name for split BTF: below its own strings, the base's."""
    base_string = base._string
    own_string = btf.strings.get
    start = btf.strings.start

    def lookup(offset: int) -> str:
        return base_string(offset) if offset < start else own_string(offset)

    return lookup


class _Header(Declarators):
    """The definitions of one BTF's own types: their text, names, dependencies and order."""

    def __init__(self, btf: Btf, base: _Header | None, by_value: list[tuple[int, ...]]):
        self.base = base
        types = btf.all_types()
        self.types = types
        self.by_value = by_value
        self.first_id = btf.first_id
        # Nothing here refers to `btf` itself: the cache of headers is keyed by it weakly.
        self._string = btf.strings.lookup if base is None else _split_lookup(base, btf)
        own_names = [self._string(t.name_off) for t in btf.types]
        self.names = (base.names if base is not None else [""]) + own_names
        self.ptr_size = base.ptr_size if base is not None else pointer_size(btf)
        self.sizes = TypeSizes(types, self.ptr_size)
        self._complete: dict[int, list[int]] = {}
        self._role: dict[int, int] = {}
        self._specifiers: dict[int, tuple[str | None, bool]] = {}
        self._simple: dict[int, tuple[str, int, bool] | None] = {}
        # Display names that differ from the BTF name (the `___N` suffixes); a module's
        # header starts from its base's.
        self.display: dict[int, str] = dict(base.display) if base is not None else {}
        # Per definition: suffixes of the enumerators it prints, by occurrence index.
        self.enumerator_suffix: dict[int, dict[int, str]] = {}

        # First pass: text with plain names, and what each definition mentions.
        self.text: dict[int, str] = {}
        self.refs: dict[int, list[tuple[int, int]]] = {}
        self.enumerators: dict[int, list[str]] = {}
        self._inline: set[int] = set()
        self.defs = self._definitions()
        self.kfuncs = self._kfuncs()
        self.rank = self._canonical_ranks()
        self._assign_suffixes()
        self._specifiers.clear()
        self._simple.clear()
        # Second pass, for the few definitions that print a suffixed name.
        renamed = set(self.display) | set(self.enumerator_suffix)
        for d in self.defs:
            if d in renamed or any(r in renamed for r, _ in self.refs[d]):
                self._render(d)

    # ---- what gets defined ----

    def _definitions(self) -> list[int]:
        """Own types with a top-level C definition or declaration, rendered once.

        Named types first; then the anonymous enums that none of them prints inline
        (global constants), which become definitions of their own.
        """
        types = self.types
        names = self.names
        defs = []
        anonymous_enums = []
        for tid in range(self.first_id, len(types)):
            kind = types[tid].kind
            if names[tid]:
                if kind in _NAMED_KINDS and names[tid] not in _BUILTIN_TYPEDEFS:
                    defs.append(tid)
                    self._render(tid)
            elif kind == f.ENUM or kind == f.ENUM64:
                anonymous_enums.append(tid)
        for tid in anonymous_enums:
            if tid not in self._inline:
                defs.append(tid)
                self._render(tid)
        defs.sort()
        return defs

    def _kfuncs(self) -> list[tuple[str, int, bool]]:
        """(name, FUNC id, fastcall) of the functions tagged as kfuncs, by name."""
        types = self.types
        tagged: dict[int, set[str]] = {}
        for tid in range(self.first_id, len(types)):
            t = types[tid]
            if t.kind == f.DECL_TAG and t.extra == -1 and t.kflag == 0:
                target = types[t.size_or_type]
                if target is not None and target.kind == f.FUNC:
                    tagged.setdefault(t.size_or_type, set()).add(self.names[tid])
        kfuncs = [(self.names[fid], fid, FASTCALL_TAG in tags)
                  for fid, tags in tagged.items() if KFUNC_TAG in tags]
        self._start({})
        kfuncs.sort(key=lambda k: (k[0], self._decl(types[k[1]].size_or_type, k[0], 0, _REF)))
        return kfuncs

    # ---- rendering ----

    def _render(self, d: int) -> None:
        """Text of definition d; collects the named types it mentions and how."""
        self._start(self.enumerator_suffix.get(d, {}))
        t = self.types[d]
        kind = t.kind
        if kind == f.STRUCT or kind == f.UNION:
            text = self._struct(d, t, 0)
        elif kind == f.ENUM or kind == f.ENUM64:
            text = self._enum(d, t, 0)
        elif kind == f.FWD:
            text = ("union " if t.kflag else "struct ") + self.names[d]
        else:
            name = self.display.get(d, self.names[d])
            if t.size_or_type == 0 and self.names[d] == "__gnuc_va_list":
                text = "typedef __builtin_va_list __gnuc_va_list"
            else:
                text = "typedef " + self._decl(t.size_or_type, name, 0, _REF)
        self.text[d] = text + ";\n\n"
        self.refs[d] = self._refs
        self.enumerators[d] = self._enumerators

    def _start(self, enumerator_suffixes: dict[int, str]) -> None:
        """Begin rendering one definition: what it mentions and the enumerators it prints."""
        self._refs: list[tuple[int, int]] = []
        self._enumerators: list[str] = []
        self._suffixes = enumerator_suffixes

    def _mention(self, tid: int, mode: int) -> None:
        self._refs.append((tid, mode))

    def _struct(self, tid: int, t: Type, level: int) -> str:
        is_struct = t.kind == f.STRUCT
        name = self.names[tid]
        if name:
            name = self.display.get(tid, name)
            head = ("struct " if is_struct else "union ") + name + " {"
        else:
            head = "struct {" if is_struct else "union {"
        packed, _, explicit_align, padding = self.sizes.layout(tid)
        inner = "\n" + _tabs(level + 1)
        member_name = self._string
        simple_decls = self._simple
        mention = self._refs.append
        kflag = t.kflag
        parts = [head]
        for i, (name_off, mtype, offset) in enumerate(t.items):
            if padding and i in padding:
                self._padding(parts, *padding[i], inner, packed)
            # `_decl`'s fast path, inline: most members are `T name` or `T *name`.
            simple = simple_decls.get(mtype, 0)
            if simple == 0:
                simple = self._simple_decl(mtype)
            if simple is None:
                text = self._decl(mtype, member_name(name_off), level + 1, _VALUE)
            else:
                prefix, mentioned, through_pointer = simple
                if mentioned:
                    mention((mentioned, _REF if through_pointer else _VALUE))
                text = member_name(name_off)
                if text:
                    text = prefix + text
                else:
                    text = prefix if through_pointer else prefix[:-1]
            if kflag and offset >> 24:
                parts.append(f"{inner}{text}: {offset >> 24};")
            else:
                parts.append(f"{inner}{text};")
        if padding and len(t.items) in padding:
            self._padding(parts, *padding[len(t.items)], inner, packed)
        if len(parts) > 1:
            parts.append("\n" + _tabs(level) + "}")
        else:
            parts.append("}")
        if packed:
            parts.append(" __attribute__((packed))")
        elif explicit_align:
            parts.append(f" __attribute__((aligned({explicit_align})))")
        return "".join(parts)

    def _padding(self, parts: list[str], cur: int, end: int, indent: str, packed: bool) -> None:
        """Unnamed bit-fields that take the layout from bit `cur` to bit `end`.

        Outside packed structs a `long: 64` that would straddle a 64-bit boundary starts at
        the boundary instead, which skips the bits before it; every other piece fits in its
        own storage unit, so it lands exactly where the previous one ended.
        """
        long64 = "long" if self.ptr_size == 8 else "long long"
        while cur < end:
            boundary = round_up(cur, 64)
            if end - boundary >= 64 and (cur == boundary or not packed):
                parts.append(f"{indent}{long64}: 64;")
                cur = boundary + 64
                continue
            stop = min(boundary if boundary > cur else cur + 64, end)
            for unit, type_name in ((8, "char"), (16, "short"), (32, "int"), (64, long64)):
                if cur // unit == (stop - 1) // unit:
                    parts.append(f"{indent}{type_name}: {stop - cur};")
                    break
            cur = stop

    def _enum(self, tid: int, t: Type, level: int) -> str:
        name = self.names[tid]
        if name:
            name = self.display.get(tid, name)
            if not t.items:
                return "enum " + name
            head = "enum " + name + " {"
        else:
            head = "enum {"
            self._inline.add(tid)
        inner = "\n" + _tabs(level + 1)
        parts = [head]
        signed = t.kflag
        is64 = t.kind == f.ENUM64
        bits = 64 if is64 else 32
        suffix = "LL" if signed else "ULL"
        occurrences = self._enumerators
        suffixes = self._suffixes
        name_of = self._string
        for name_off, value in t.items:
            enumerator = name_of(name_off)
            dup = suffixes.get(len(occurrences))
            occurrences.append(enumerator)
            if dup:
                enumerator += dup
            if signed and value >> (bits - 1):
                value -= 1 << bits
            if is64:
                parts.append(f"{inner}{enumerator} = {value}{suffix},")
            else:
                parts.append(f"{inner}{enumerator} = {value},")
        parts.append("\n" + _tabs(level) + "}")
        mode = "word" if t.size_or_type == self.ptr_size else _ENUM_MODES.get(t.size_or_type)
        if mode and t.size_or_type != self._natural_enum_size(t):
            parts.append(f" __attribute__((mode({mode})))")
        return "".join(parts)

    @staticmethod
    def _natural_enum_size(t: Type) -> int:
        """The size a compiler gives this enum without attributes: 4 unless a value needs 8."""
        if not t.items:
            return 4
        bits = 64 if t.kind == f.ENUM64 else 32
        values = [v - (1 << bits) if t.kflag and v >> (bits - 1) else v for _, v in t.items]
        low, high = min(values), max(values)
        if (low >= 0 and high <= 0xFFFFFFFF) or (low >= -(1 << 31) and high < 1 << 31):
            return 4
        return 8

    def _decl(self, tid: int, fname: str, level: int, mode: int) -> str:
        """The C declaration of `fname` with type `tid` (the declarator chain of bpftool)."""
        # Fast path for the common `T name` and `T *name`.
        simple = self._simple.get(tid, 0)
        if simple == 0:
            simple = self._simple_decl(tid)
        if simple is not None:
            prefix, mentioned, through_pointer = simple
            if mentioned:
                self._refs.append((mentioned, _REF if through_pointer else mode))
            if fname:
                return prefix + fname
            return prefix if through_pointer else prefix[:-1]
        types = self.types
        chain = declarator_chain(types, tid)
        base_mode = mode
        # The base type must be complete unless a pointer or a prototype comes between it
        # and the nearest array.
        for tid in reversed(chain[:-1]):
            kind = types[tid].kind
            if kind == f.ARRAY:
                base_mode = _VALUE
                break
            if kind == f.PTR or kind == f.FUNC_PROTO:
                base_mode = _REF
                break
        return self._chain(chain, len(chain), fname, level, base_mode)

    def _simple_decl(self, tid: int) -> tuple[str, int, bool] | None:
        """For a type spelled `T ` or `T *` before the name: (that prefix, the definition it
        names or 0, whether through a pointer); None for other types."""
        t = self.types[tid]
        simple = None
        if t is not None and t.kind == f.PTR:
            spelled, mentioned = self._specifier(t.size_or_type)
            if spelled is not None:
                simple = (spelled + " *", t.size_or_type if mentioned else 0, True)
        else:
            spelled, mentioned = self._specifier(tid)
            if spelled is not None:
                simple = (spelled + " ", tid if mentioned else 0, False)
        self._simple[tid] = simple
        return simple

    def _specifier(self, tid: int) -> tuple[str | None, bool]:
        """The spelling of a type that is a plain specifier (`int`, `struct foo`, `u32`),
        and whether it names a definition of the header."""
        cached = self._specifiers.get(tid)
        if cached is not None:
            return cached
        t = self.types[tid]
        name = self.names[tid]
        spelled = None
        if t is None:
            spelled = "void"
        elif name:
            kind = t.kind
            if kind == f.INT or kind == f.FLOAT:
                spelled = name
            elif kind == f.TYPEDEF:
                spelled = self.display.get(tid, name)
            elif kind == f.STRUCT:
                spelled = "struct " + self.display.get(tid, name)
            elif kind == f.UNION:
                spelled = "union " + self.display.get(tid, name)
            elif kind == f.ENUM or kind == f.ENUM64:
                spelled = "enum " + self.display.get(tid, name)
            elif kind == f.FWD:
                spelled = ("union " if t.kflag else "struct ") + name
        cached = (spelled, spelled is not None and t is not None and t.kind in _NAMED_KINDS)
        self._specifiers[tid] = cached
        return cached

    # ---- what the shared declarator speller asks of a header ----

    def _base(self, tid: int, t: Type, mode: int, level: int) -> str:
        """A base type as the header spells it; named ones are noted as mentioned,
        anonymous ones are written out in place."""
        kind = t.kind
        name = self.names[tid]
        if kind == f.INT or kind == f.FLOAT:
            return name
        if kind == f.STRUCT or kind == f.UNION:
            if name:
                self._mention(tid, mode)
                return ("struct " if kind == f.STRUCT else "union ") + self.display.get(tid, name)
            return self._struct(tid, t, level)
        if kind == f.ENUM or kind == f.ENUM64:
            if name:
                self._mention(tid, mode)
                return "enum " + self.display.get(tid, name)
            return self._enum(tid, t, level)
        self._mention(tid, mode)
        if kind == f.FWD:
            return ("union " if t.kflag else "struct ") + name
        return self.display.get(tid, name)

    def _other(self, tid: int) -> str:
        return ""

    def _tag_name(self, tid: int) -> str:
        return self.names[tid]

    def _params(self, t: Type, level: int) -> str:
        params = t.items
        if not params or (len(params) == 1 and params[0][1] == 0):
            return "void"
        param_name = self._string
        parts = [self._decl(ptype, param_name(name_off), level, _REF)
                 for name_off, ptype in params]
        if params[-1][1] == 0:
            parts[-1] = "..."
        return ", ".join(parts)

    # ---- canonical keys and names ----

    def _group_key(self, d: int) -> tuple:
        t = self.types[d]
        return (self.names[d], _KIND_RANK[t.kind], t.kflag if t.kind == f.FWD else 0)

    def _canonical_ranks(self) -> dict[int, int]:
        """Position of each definition in the canonical key order.

        The key is (name, kind rank, tie-break). Only definitions that share name and kind
        rank need the tie-break (see `_break_ties`).
        """
        groups: dict[tuple, list[int]] = {}
        for d in self.defs:
            groups.setdefault(self._group_key(d), []).append(d)
        shared = [members for members in groups.values() if len(members) > 1]
        position = self._break_ties(shared) if shared else {}
        ordered = sorted(self.defs, key=lambda d: (self._group_key(d), position.get(d, 0)))
        return {d: i for i, d in enumerate(ordered)}

    def _break_ties(self, groups: list[list[int]]) -> dict[int, int]:
        """Positions within groups of same-name definitions, from what they are.

        Definitions of a group are told apart by their text with plain names, by the keys
        of the named types they mention and by the keys of the definitions that mention
        them, refined until stable (keys inside the groups being these positions). Where
        members are still alike, the first one is set apart and the refinement runs
        again: alike members look the same from everywhere in the header, so whichever
        is set apart, the text comes out the same.
        """
        names = self.names
        types = self.types
        refs = self.refs
        text = self.text
        groups.sort(key=lambda members: self._group_key(members[0]))
        position = {d: 0 for members in groups for d in members}
        referrers: dict[int, list[int]] = {}
        for d in self.defs:
            for r, _ in refs[d]:
                if r in position and r != d:
                    referrers.setdefault(r, []).append(d)
        set_apart: dict[int, int] = {}
        unmarked = len(position)

        def token(r: int) -> tuple:
            return (names[r], types[r].kind, position.get(r, 0))

        def signature(d: int) -> tuple:
            return (text[d], [token(r) for r, _ in refs[d]],
                    sorted(token(u) for u in referrers.get(d, ())), set_apart.get(d, unmarked))

        def refine() -> bool:
            changed = False
            for members in groups:
                signatures = {d: signature(d) for d in members}
                members.sort(key=signatures.__getitem__)
                pos = 0
                for i, d in enumerate(members):
                    if i and signatures[d] != signatures[members[i - 1]]:
                        pos = i
                    if position[d] != pos:
                        position[d] = pos
                        changed = True
            return changed

        while True:
            for _ in range(len(position)):
                if not refine():
                    break
            alike = next((members[i] for members in groups for i in range(1, len(members))
                          if position[members[i]] == position[members[i - 1]]), None)
            if alike is None:
                return position
            set_apart[alike] = len(set_apart)

    def _assign_suffixes(self) -> None:
        """`___N` for the second and later claims of a name, in canonical order.

        Tags (struct, union, enum) and identifiers (typedefs, enumerators) are separate
        namespaces, as in C. A module's claims come after all of its base's.
        """
        base = self.base
        tag_count: dict[str, int] = dict(base.tag_count) if base is not None else {}
        ident_count: dict[str, int] = dict(base.ident_count) if base is not None else {}
        types = self.types
        names = self.names
        for d in sorted(self.defs, key=self.rank.__getitem__):
            kind = types[d].kind
            name = names[d]
            if kind == f.TYPEDEF or kind == f.STRUCT or kind == f.UNION or (
                    kind in _TAG_KINDS and name and types[d].items):
                counts = ident_count if kind == f.TYPEDEF else tag_count
                n = counts.get(name, 0) + 1
                counts[name] = n
                if n > 1:
                    self.display[d] = f"{name}___{n}"
            enumerators = self.enumerators[d]
            if enumerators:
                suffixes = {}
                for i, enumerator in enumerate(enumerators):
                    n = ident_count.get(enumerator, 0) + 1
                    ident_count[enumerator] = n
                    if n > 1:
                        suffixes[i] = f"___{n}"
                if suffixes:
                    self.enumerator_suffix[d] = suffixes
        self.tag_count = tag_count
        self.ident_count = ident_count

    # ---- order ----

    def _complete_deps(self, tid: int) -> list[int]:
        """Own definitions that must come before a by-value use of typedef `tid`: what it
        holds by value, through anonymous structs and unions, up to named types."""
        cached = self._complete.get(tid)
        if cached is not None:
            return cached
        self._complete[tid] = []
        out: list[int] = []
        types = self.types
        names = self.names
        by_value = self.by_value
        first = self.first_id
        stack = list(by_value[tid])
        while stack:
            r = stack.pop()
            kind = types[r].kind
            if kind == f.TYPEDEF:
                if r >= first and names[r] not in _BUILTIN_TYPEDEFS:
                    out.append(r)
                out.extend(self._complete_deps(r))
            elif names[r] and (kind in _TAG_KINDS or kind == f.FWD):
                if r >= first:
                    out.append(r)
            else:
                stack.extend(by_value[r])
        self._complete[tid] = out
        return out

    def _dependencies(self, d: int) -> tuple[set[int], list[int]]:
        """(definitions needed before d, struct/union tags d needs declared)."""
        first = self.first_id
        role = self._role
        before: set[int] = set()
        declared: list[int] = []
        for r, mode in self.refs[d]:
            if r < first:
                continue
            what = role.get(r)
            if what is None:
                what = self._role_of(r)
            if what == _COMPOSITE:
                if mode == _VALUE:
                    before.add(r)
                elif r != d:
                    declared.append(r)
            elif what == _OTHER:
                before.add(r)
            else:
                if what == _TYPEDEF:
                    before.add(r)
                if mode == _VALUE:
                    before.update(self._complete_deps(r))
        before.discard(d)
        return before, declared

    def _role_of(self, tid: int) -> int:
        kind = self.types[tid].kind
        if kind == f.STRUCT or kind == f.UNION:
            what = _COMPOSITE
        elif kind == f.TYPEDEF:
            what = _BUILTIN if self.names[tid] in _BUILTIN_TYPEDEFS else _TYPEDEF
        else:
            what = _OTHER
        self._role[tid] = what
        return what

    def order(self) -> tuple[list[int], list[int]]:
        """(definitions in header order, tags that need a forward declaration).

        The smallest order by placement key that puts every definition after the ones it
        needs (Kahn's algorithm with a heap); see `_placement_keys`.
        """
        defs = self.defs
        needs: dict[int, set[int]] = {}
        declared_needs: dict[int, list[int]] = {}
        users: dict[int, list[int]] = {d: [] for d in defs}
        for d in defs:
            needs[d], declared_needs[d] = self._dependencies(d)
            for dep in needs[d]:
                users[dep].append(d)
        key = self._placement_keys(needs, users)
        by_key = {k: d for d, k in key.items()}
        waiting = {d: len(needs[d]) for d in defs}
        ready = [key[d] for d in defs if waiting[d] == 0]
        heapq.heapify(ready)
        done: set[int] = set()
        sequence: list[int] = []
        forward: dict[int, None] = {}
        while len(sequence) < len(defs):
            if not ready:
                # A cycle of by-value uses (impossible in C): break it at the smallest key.
                heapq.heappush(ready, min(key[d] for d in defs if d not in done))
            d = by_key[heapq.heappop(ready)]
            if d in done:
                continue
            done.add(d)
            sequence.append(d)
            for tag in declared_needs[d]:
                if tag not in done:
                    forward[tag] = None
            for user in users[d]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    heapq.heappush(ready, key[user])
        return sequence, list(forward)

    def _placement_keys(self, needs: dict[int, set[int]],
                        users: dict[int, list[int]]) -> dict[int, int]:
        """(class, band, canonical rank) of each definition, packed into one integer.

        Class 0 holds enums and forward declarations, 1 typedefs, 2 structs and unions.
        Linkage structs (one or two pointers and nothing else: list_head, hlist_node,
        callback_head) are band 0, so a struct that starts to embed one need not move
        behind it. For the others, the depth is the length of the longest chain of structs
        embedded by value, and the band is 1 + half of it, rounded down. Within a class and
        band the canonical key decides, so most of what a struct embeds sorts before it
        anyway, and a struct that gains an embedded leaf usually stays in its band and in
        its place. All of it is computed from the type and what it depends on.
        """
        types = self.types
        composite = (f.STRUCT, f.UNION)
        level: dict[int, int] = {}
        waiting = {d: len(deps) for d, deps in needs.items()}
        queue = [d for d, n in waiting.items() if n == 0]
        while queue:
            d = queue.pop()
            if types[d].kind in composite:
                level[d] = 1 + max((level[x] for x in needs[d] if types[x].kind in composite),
                                   default=-1)
            for user in users[d]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    queue.append(user)
        rank = self.rank
        keys = {}
        for d in self.defs:
            kind = types[d].kind
            if kind in composite:
                band = 0 if _is_linkage(types, types[d], self.ptr_size) \
                    else 1 + level.get(d, 0) // 2
                group = (2 << 16) + band
            else:
                group = (1 if kind == f.TYPEDEF else 0) << 16
            keys[d] = (group << 32) + rank[d]
        return keys

    def prototype(self, fid: int, name: str) -> tuple[str, list[tuple[int, int]]]:
        """The declaration of function `fid` as `name`, and the types it mentions."""
        self._start({})
        return self._decl(self.types[fid].size_or_type, name, 0, _REF), self._refs

    def body(self) -> str:
        sequence, forward = self.order()
        text = self.text
        return (forward_block(self, forward) + "".join(text[d] for d in sequence)
                + kfunc_block(self, self.kfuncs))

