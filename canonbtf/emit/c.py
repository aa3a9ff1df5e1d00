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

`_Header` runs the steps, each in a module of its own: spelling the definitions
(c_spell.py, with struct layouts from btf/sizes.py), canonical keys and `___N` names
(c_names.py), dependencies and placement (c_order.py).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable
from typing import TextIO

from ..btf import format as f
from ..btf.model import Btf
from ..btf.sizes import LazyByValue, TypeSizes, by_value_edges, pointer_size
from ..errors import InputError
from ..gcpause import paused_gc
from .c_compiled import CompiledSpelling
from .c_names import NameClaims, canonical_ranks
from .c_order import Placement
from .c_shape import c_shape_problem
from .c_spell import NAMED_KINDS, DefinitionSpeller, is_builtin_typedef

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

def dump_c(btf: Btf, out: TextIO) -> None:
    """Write the C header for `btf` (for split BTF: its own types, to follow the base's).
    BTF that C cannot spell (see c_shape) is an InputError, before anything is written."""
    with paused_gc():  # 100 k types' worth of small lists and tuples, none cyclic
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
        compiled = CompiledSpelling.of(btf)  # before the types are decoded
        # What C cannot spell would make the emitter loop or recurse without end.
        types = btf.all_types()
        sizes = TypeSizes(types, pointer_size(btf))
        if compiled is not None and compiled.shape_ok(sizes.ptr_size):
            by_value: list[tuple[int, ...]] | LazyByValue = LazyByValue(types)
        else:
            by_value = by_value_edges(types)
            problem = c_shape_problem(btf, by_value, sizes)
            if problem:
                raise InputError(None, f"cannot be written as C: {problem}")
        base = _header_for(btf.base) if btf.base is not None else None
        header = _Header(btf, base, by_value, sizes, compiled)
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


class _Header:
    """The definitions of one BTF's own types: their text, names, dependencies and order."""

    def __init__(self, btf: Btf, base: _Header | None, by_value: list[tuple[int, ...]],
                 sizes: TypeSizes, compiled: CompiledSpelling | None = None):
        types = btf.all_types()
        self.compiled = compiled
        self.types = types
        self.first_id = btf.first_id
        # Nothing here refers to `btf` itself: the cache of headers is keyed by it weakly.
        self._string = btf.strings.lookup if base is None else _split_lookup(base, btf)
        own_names = [self._string(t.name_off) for t in btf.types]
        self.names = (base.names if base is not None else [""]) + own_names
        ptr_size = sizes.ptr_size
        # Display names that differ from the BTF name (the `___N` suffixes); a module's
        # header starts from its base's.
        self.display: dict[int, str] = dict(base.display) if base is not None else {}
        # Per definition: suffixes of the enumerators it prints, by occurrence index.
        self.enumerator_suffix: dict[int, dict[int, str]] = {}
        self.speller = DefinitionSpeller(types, self.names, self._string, self.display,
                                         self.enumerator_suffix, sizes)
        # First pass: text with plain names, and what each definition mentions.
        self.text: dict[int, str] = {}
        self.refs: dict[int, list[tuple[int, int]]] = {}
        self.enumerators: dict[int, list[str]] = {}
        self.defs = self._definitions()
        self.kfuncs = self._kfuncs()
        rank = canonical_ranks(self.defs, types, self.names, self.text, self.refs)
        self.claims = NameClaims(base.claims if base is not None else None)
        self.enumerator_suffix.update(self.claims.claim(
            sorted(self.defs, key=rank.__getitem__), types, self.names, self.enumerators,
            self.display))
        self.speller.forget_names()
        # Second pass, for the few definitions that print a suffixed name.
        renamed = set(self.display) | set(self.enumerator_suffix)
        self._render_again([d for d in self.defs
                            if d in renamed or any(r in renamed for r, _ in self.refs[d])])
        self.placement = Placement(types, self.names, self.first_id, by_value, ptr_size,
                                   self.defs, self.refs, rank, compiled)

    # ---- what gets defined ----

    def _definitions(self) -> list[int]:
        """Own types with a top-level C definition or declaration, rendered once.

        Named types first; then the anonymous enums that none of them prints inline
        (global constants), which become definitions of their own.
        """
        if self.compiled is not None:
            done = self.compiled.definitions(self.speller.ptr_size)
            if done is not None:
                defs, spelled = done
                for d, one in zip(defs, spelled):
                    self.text[d], self.refs[d], self.enumerators[d] = one
                return defs
        types = self.types
        names = self.names
        defs = []
        anonymous_enums = []
        for tid in range(self.first_id, len(types)):
            kind = types[tid].kind
            if names[tid]:
                if kind in NAMED_KINDS and not is_builtin_typedef(kind, names[tid]):
                    defs.append(tid)
                    self._render(tid)
            elif kind == f.ENUM or kind == f.ENUM64:
                anonymous_enums.append(tid)
        for tid in anonymous_enums:
            if tid not in self.speller.inline:
                defs.append(tid)
                self._render(tid)
        defs.sort()
        return defs

    def _render(self, d: int) -> None:
        self.text[d], self.refs[d], self.enumerators[d] = self.speller.render(d)

    def _render_again(self, ids: list[int]) -> None:
        """Spell `ids` again now that their `___N` names are known."""
        if self.compiled is not None:
            done = self.compiled.render(self.speller.ptr_size, ids, self.display,
                                        self.enumerator_suffix)
            if done is not None:
                for d, one in zip(ids, done):
                    self.text[d], self.refs[d], self.enumerators[d] = one
                return
        for d in ids:
            self._render(d)

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
        kfuncs.sort(key=lambda k: (k[0], self.prototype(k[1], k[0])[0]))
        return kfuncs

    def prototype(self, fid: int, name: str) -> tuple[str, list[tuple[int, int]]]:
        """The declaration of function `fid` as `name`, and the types it mentions."""
        return self.speller.declaration(self.types[fid].size_or_type, name)

    def order(self) -> tuple[list[int], list[int]]:
        """(definitions in header order, tags that need a forward declaration)."""
        return self.placement.order()

    def body(self) -> str:
        sequence, forward = self.order()
        text = self.text
        return (forward_block(self, forward) + "".join(text[d] for d in sequence)
                + kfunc_block(self, self.kfuncs))

