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
(emit/c/spell.py, with struct layouts from btf/sizes.py), canonical keys and `___N` names
(emit/c/names.py), dependencies and placement (emit/c/order.py).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple, TextIO

from ...btf import format as f
from ...btf.model import Btf, Type
from ...btf.sizes import LazyByValue, TypeSizes, by_value_edges, pointer_size
from ...errors import InputError
from ...gcpause import paused_gc
from ...spec import kinds as spec
from .accel import CompiledSpelling
from .names import KIND_MASK, NameClaims, canonical_ranks
from .spell import DefinitionSpeller, is_builtin_typedef

if TYPE_CHECKING:
    from .order import Placement

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
# The first line of a split BTF's header: it names base types it does not define.
SPLIT_NOTE = ("/* Split BTF: the types of a module only. Include the header of its base "
              "(vmlinux.h) first. */\n")
# Definitions per part of the body written at once (_Header.body_parts).
_PART_DEFINITIONS = 4096

def dump_c(btf: Btf, out: TextIO) -> None:
    """Write the C header for `btf` (for split BTF: its own types, to follow the base's).
    BTF that C cannot spell (see c_shape) is an InputError, before anything is written."""
    with paused_gc():  # 100 k types' worth of small lists and tuples, none cyclic
        header = _header_for(btf)
        body = header.body_parts()
        if btf.base is None:
            guard = VMLINUX_GUARD
        else:
            # Module headers are included after the base's, so they need a guard of their
            # own; derived from the content, it is as stable as the content.
            import hashlib  # here: a vmlinux header's start-up need not pay for it

            body = ["".join(body)]
            digest = hashlib.sha256(body[0].encode("latin-1")).hexdigest()[:16].upper()
            guard = f"__VMLINUX_SPLIT_{digest}_H__"
            out.write(SPLIT_NOTE)
        write_header(out, guard, bool(header.kfuncs), body)


def write_header(out: TextIO, guard: str, kfuncs: bool, body: Iterable[str]) -> None:
    """The guard, the CO-RE pragma and (with kfuncs) their macros around the `body`
    parts: shared by the full header and the slim ones (emit/slim.py), so both say the
    same."""
    out.write(_PROLOGUE.format(guard=guard))
    if kfuncs:
        out.write(_KFUNC_MACROS)
    out.writelines(body)
    out.write(_EPILOGUE.format(guard=guard))


def forward_block(header: _Header, tags: list[int]) -> str:
    """The sorted forward declarations of struct and union `tags`, then a blank line."""
    if not tags:
        return ""
    info = header.info
    lines = sorted(("union " if info[tag] & KIND_MASK == f.UNION else "struct ")
                   + header.display.get(tag, header.names[tag]) + ";\n" for tag in tags)
    return "".join(lines) + "\n"


def kfunc_block(header: _Header, kfuncs: list[tuple[str, int, bool]]) -> str:
    """`extern` prototypes of `kfuncs` (entries of `_Header.kfuncs`), as bpftool >= 7.5."""
    if not kfuncs:
        return ""
    parts = ["/* BPF kfuncs */\n#ifndef BPF_NO_KFUNC_PROTOTYPES\n"]
    spelled = header.prototypes([(fid, name) for name, fid, _ in kfuncs])
    for (_, _, fastcall), (decl, _) in zip(kfuncs, spelled):
        parts.append(f"extern {'__bpf_fastcall ' if fastcall else ''}{decl} __weak __ksym;\n")
    parts.append("#endif\n\n")
    return "".join(parts)


def header_names(btf: Btf) -> dict[int, str]:
    """The name each own named struct, union, enum and typedef has in the header (with
    its `___N` suffix), by type id: for tools and tests that check the header."""
    header = _header_for(btf)
    return {d: header.display.get(d, header.names[d]) for d in header.defs if header.names[d]}


_headers: weakref.WeakKeyDictionary[Btf, _Header] = weakref.WeakKeyDictionary()


# Kinds whose names a header never spells (no declarator ends at them); a kfunc's name
# comes with its tag (TypeFacts.function_tags). Leaving them out of TypeFacts.names saves
# a string per function: 60 MB at 16 x a vmlinux.
UNSPELLED_KINDS = frozenset({f.FUNC, f.VAR, f.DATASEC, f.DECL_TAG})


class TypeFacts(NamedTuple):
    """What the header reads of every type, by id (base included, void at 0), so that the
    compiled path need not decode a Type (CompiledSpelling.facts gives the same)."""

    ptr_size: int
    info: bytes  # the top byte of each info word: kind | kind_flag << 7 (names.KIND_MASK)
    names: list[str]  # "" for UNSPELLED_KINDS
    # (FUNC id, its name, tag) of each own DECL_TAG of a whole FUNC
    function_tags: list[tuple[int, str, str]]


def type_facts(btf: Btf, base: _Header | None, string: Callable[[int], str]) -> TypeFacts:
    """TypeFacts from the decoded types; a module's continue its base header's."""
    types = btf.types
    unspelled = UNSPELLED_KINDS
    names = (base.names if base is not None else [""]) + [
        "" if t.kind in unspelled else string(t.name_off) for t in types]
    info = (base.info if base is not None else b"\0") + bytes(
        [t.kind | t.kflag << 7 for t in types])
    all_types = btf.all_types()
    tags = [(t.size_or_type, string(all_types[t.size_or_type].name_off), string(t.name_off))
            for t in types if t.kind == f.DECL_TAG and t.extra == -1 and t.kflag == 0
            and info[t.size_or_type] & KIND_MASK == f.FUNC]
    return TypeFacts(pointer_size(btf), info, names, tags)


def _header_for(btf: Btf) -> _Header:
    """One analysis per Btf object: a module's header needs its base's names."""
    header = _headers.get(btf)
    if header is None:
        compiled = CompiledSpelling.of(btf)  # before the types are decoded
        facts = compiled.facts() if compiled is not None else None
        ptr_size = facts[0] if facts is not None else pointer_size(btf)
        checked = None
        # What C cannot spell would make the emitter loop or recurse without end.
        if compiled is None or not compiled.shape_ok(ptr_size):
            from .shape import c_shape_problem  # only when the compiled check cannot tell

            types = btf.all_types()
            checked = (by_value_edges(types), TypeSizes(types, ptr_size))
            problem = c_shape_problem(btf, *checked)
            if problem:
                raise InputError(None, f"cannot be written as C: {problem}")
        base = _header_for(btf.base) if btf.base is not None else None
        header = _Header(btf, base, facts, checked, compiled)
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
    """The definitions of one BTF's own types: their text, names, dependencies and order.

    On the compiled path nothing here decodes a Type: `types`, the speller and the
    placement's Python side are made on first use (slim headers, kfunc prototypes)."""

    def __init__(self, btf: Btf, base: _Header | None, facts: TypeFacts | None,
                 checked: tuple[list[tuple[int, ...]], TypeSizes] | None,
                 compiled: CompiledSpelling | None = None):
        self.compiled = compiled
        self.first_id = btf.first_id
        # Nothing here refers to `btf` itself: the cache of headers is keyed by it weakly.
        self._btf = weakref.ref(btf)
        self._base = base
        self._checked = checked
        if facts is None:
            facts = type_facts(btf, base, self._string)
        self.ptr_size, self.info, self.names, function_tags = facts
        # Display names that differ from the BTF name (the `___N` suffixes); a module's
        # header starts from its base's.
        self.display: dict[int, str] = dict(base.display) if base is not None else {}
        # Per definition: suffixes of the enumerators it prints, by occurrence index.
        self.enumerator_suffix: dict[int, dict[int, str]] = {}
        # First pass: text with plain names, and what each definition mentions.
        self.text: dict[int, str] = {}
        self.refs: dict[int, list[tuple[int, int]]] = {}
        self.enumerators: dict[int, list[str]] = {}
        self.defs = self._definitions()
        self.kfuncs = self._kfuncs(function_tags)
        self.rank = canonical_ranks(self.defs, self.info, self.names, self.text, self.refs)
        self.claims = NameClaims(base.claims if base is not None else None)
        self.enumerator_suffix.update(self.claims.claim(
            sorted(self.defs, key=self.rank.__getitem__), self.info, self.names,
            self.enumerators, self.display))
        if "speller" in vars(self):
            self.speller.forget_names()
        # Second pass, for the few definitions that print a suffixed name.
        renamed = set(self.display) | set(self.enumerator_suffix)
        refs = self.refs
        again = renamed.intersection(self.defs)
        again.update(d for d in self.defs for r, _ in refs[d] if r in renamed)
        self._render_again(sorted(again))

    @cached_property
    def types(self) -> list[Type | None]:
        return self._live_btf().all_types()

    @cached_property
    def _string(self) -> Callable[[int], str]:
        btf = self._live_btf()
        return btf.strings.lookup if self._base is None else _split_lookup(self._base, btf)

    def _live_btf(self) -> Btf:
        btf = self._btf()
        if btf is None:
            raise RuntimeError("the Btf of this header is gone")
        return btf

    @cached_property
    def speller(self) -> DefinitionSpeller:
        sizes = self._checked[1] if self._checked is not None else TypeSizes(
            self.types, self.ptr_size)
        return DefinitionSpeller(self.types, self.names, self._string, self.display,
                                 self.enumerator_suffix, sizes)

    @cached_property
    def placement(self) -> Placement:
        # Imported here: the compiled placement needs none of it (nor its dataclasses).
        from .order import Placement

        by_value = self._checked[0] if self._checked is not None else LazyByValue(self.types)
        return Placement(self.types, self.names, self.first_id, by_value, self.ptr_size,
                         self.defs, self.refs, self.rank)

    # ---- what gets defined ----

    def _definitions(self) -> list[int]:
        """Own types with a top-level C definition or declaration, rendered once.

        Named types first; then the anonymous enums that none of them prints inline
        (global constants), which become definitions of their own.
        """
        if self.compiled is not None:
            done = self.compiled.definitions(self.ptr_size)
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
                if kind in spec.C_NAMED and not is_builtin_typedef(kind, names[tid]):
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
            done = self.compiled.render(self.ptr_size, ids, self.display,
                                        self.enumerator_suffix)
            if done is not None:
                for d, one in zip(ids, done):
                    self.text[d], self.refs[d], self.enumerators[d] = one
                return
        for d in ids:
            self._render(d)

    def _kfuncs(self, function_tags: list[tuple[int, str, str]]
                ) -> list[tuple[str, int, bool]]:
        """(name, FUNC id, fastcall) of the functions tagged as kfuncs, by name."""
        tagged: dict[int, set[str]] = {}
        name_of: dict[int, str] = {}
        for fid, name, tag in function_tags:
            tagged.setdefault(fid, set()).add(tag)
            name_of[fid] = name
        kfuncs = [(name_of[fid], fid, FASTCALL_TAG in tags)
                  for fid, tags in tagged.items() if KFUNC_TAG in tags]
        spelled = self.prototypes([(fid, name) for name, fid, _ in kfuncs])
        order = sorted(range(len(kfuncs)), key=lambda k: (kfuncs[k][0], spelled[k][0]))
        return [kfuncs[k] for k in order]

    def prototype(self, fid: int, name: str) -> tuple[str, list[tuple[int, int]]]:
        """The declaration of function `fid` as `name`, and the types it mentions."""
        return self.prototypes([(fid, name)])[0]

    def prototypes(self, funcs: list[tuple[int, str]]) -> list[tuple[str, list[tuple[int, int]]]]:
        """The declaration of each function (id, name) as that name, and the types it
        mentions, with the display names known now; by the compiled part where it applies
        (the reference's speller decodes every type)."""
        if funcs and self.compiled is not None:
            done = self.compiled.declarations(self.ptr_size, funcs, self.display)
            if done is not None:
                return done
        return [self.speller.declaration(self.types[fid].size_or_type, name)
                for fid, name in funcs]

    def order(self) -> tuple[list[int], list[int]]:
        """(definitions in header order, tags that need a forward declaration)."""
        if self.compiled is not None:
            done = self.compiled.placement(self.ptr_size, self.defs, self.refs, self.rank)
            if done is not None:
                return done
        return self.placement.order()

    def body_parts(self) -> Iterator[str]:
        """The header between its prologue and epilogue, in parts of a few thousand
        definitions joined as they are written: the whole text at once was a tenth of
        the peak memory at 16 x a vmlinux. All but the joining is done here."""
        sequence, forward = self.order()
        text = self.text
        joined = ("".join([text[d] for d in sequence[at:at + _PART_DEFINITIONS]])
                  for at in range(0, len(sequence), _PART_DEFINITIONS))
        return chain([forward_block(self, forward)], joined, [kfunc_block(self, self.kfuncs)])

