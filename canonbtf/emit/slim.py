"""Slim headers: the part of vmlinux.h a BPF program uses (docs/C-HEADER.md "Slim headers").

Projects commit their vmlinux.h; the full one is about 100,000 lines of which a program
uses a few hundred. A slim header is cut from the full header's analysis, not written
anew: the same definitions, byte for byte, in the same relative order, with the same
frame, so a program compiles to the same layout and the same CO-RE relocations with
either, and the slim header changes between kernels only where its types change.

What it holds: the requested definitions; everything they need defined first, as the full
header's order sees it (types held by value through members, arrays, typedef chains and
anonymous members; every typedef and named enum they mention); a forward declaration for
each struct or union they reach only through a pointer or a prototype.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TextIO

from ..btf import format as f
from ..btf import reader
from ..btf.btf_ext import core_relos
from ..btf.model import Btf
from ..errors import InputError
from ..spec import kinds as spec
from .c.header import VMLINUX_GUARD, _Header, _header_for, forward_block, kfunc_block, write_header

# The typedefs libbpf's BPF headers (bpf_helpers.h, bpf_tracing.h, bpf_core_read.h,
# bpf_endian.h and the bpf_helper_defs.h they include) take from vmlinux.h, as clang finds
# them for a program that includes those headers and uses nothing (slim_source.
# libbpf_probe_source; tests/test_slim_source.py asks the installed headers again). A
# header cut from an object carries them: the object's BTF cannot say it includes them.
LIBBPF_HEADER_TYPEDEFS = ("__be16", "__be32", "__s32", "__s64", "__u16", "__u32", "__u64",
                          "__wsum")
_TAG_WORDS = {"struct": (f.STRUCT, f.FWD), "union": (f.UNION, f.FWD),
              "enum": (f.ENUM, f.ENUM64)}


class Selection:
    """What a slim header is asked for: definitions, tags to declare, kfunc prototypes."""

    def __init__(self) -> None:
        self.defs: set[int] = set()
        self.declare: set[int] = set()
        self.kfuncs: set[int] = set()


class _Names:
    """Definitions of a header by the name the header spells them with (`___N` included)."""

    def __init__(self, header: _Header):
        self.header = header
        self.plain: dict[str, list[int]] = {}
        self.tags: dict[str, list[int]] = {}
        types = header.types
        for d in header.defs:
            name = header.display.get(d, header.names[d])
            if not name:
                continue
            self.plain.setdefault(name, []).append(d)
            if types[d].kind != f.TYPEDEF:
                self.tags.setdefault(name, []).append(d)
        self.kfuncs = {name: fid for name, fid, _ in header.kfuncs}
        self._enumerators: dict[str, int] | None = None

    def enumerator(self, name: str) -> int | None:
        """The definition that prints enumerator `name` (the kernel's constants live in
        anonymous enums, which have no other name to ask for)."""
        if self._enumerators is None:
            header = self.header
            index: dict[str, int] = {}
            for d in header.defs:
                suffixes = header.enumerator_suffix.get(d, {})
                for i, e in enumerate(header.enumerators.get(d, ())):
                    index.setdefault(e + suffixes.get(i, ""), d)
            self._enumerators = index
        return self._enumerators.get(name)

    def tag(self, word: str, name: str) -> list[int]:
        """`struct name`, `union name` or `enum name` (a FWD counts as struct or union)."""
        types = self.header.types
        kinds = _TAG_WORDS[word]
        found = []
        for d in self.tags.get(name, ()):
            t = types[d]
            if t.kind in kinds and (t.kind != f.FWD or (t.kflag == 1) == (word == "union")):
                found.append(d)
        return found

    def add(self, selection: Selection, spelled: str) -> bool:
        """Add what `spelled` names to `selection`; False when it names nothing."""
        words = spelled.split()
        if len(words) == 2 and words[0] in _TAG_WORDS:
            found = self.tag(words[0], words[1])
            selection.defs.update(found)
            return bool(found)
        if len(words) != 1:
            return False
        name = words[0]
        if name in self.plain:
            selection.defs.update(self.plain[name])
            return True
        if name in self.kfuncs:
            selection.kfuncs.add(self.kfuncs[name])
            return True
        d = self.enumerator(name)
        if d is not None:
            selection.defs.add(d)
            return True
        return False


_indexes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def slim_index(btf: Btf) -> _Names:
    """The names of `btf`'s full header, made once per Btf."""
    index = _indexes.get(btf)
    if index is None:
        index = _indexes[btf] = _Names(slim_header(btf))
    return index


def select_names(btf: Btf, names: Iterable[str], selection: Selection | None = None,
                 ) -> Selection:
    """The selection of `names` (`struct foo`, `foo`, a kfunc, an enumerator); an unknown
    name is an InputError naming every unknown one."""
    index = slim_index(btf)
    selection = selection or Selection()
    unknown = [name for name in names if not index.add(selection, name)]
    if unknown:
        raise InputError(None, "no type named " + ", ".join(f"'{n}'" for n in unknown))
    return selection


def split_names(text: str) -> list[str]:
    """`--types` argument: comma-separated names, blanks around them ignored."""
    return [" ".join(part.split()) for part in text.split(",") if part.strip()]


def slim_header(btf: Btf) -> _Header:
    """The full header's analysis of `btf`, which a slim header is cut from."""
    if btf.base is not None:
        raise InputError(None, "slim headers (--types, --types-from) are made from a base "
                         "BTF such as vmlinux; split BTF is not supported")
    return _header_for(btf)


def slim_plan(btf: Btf, selection: Selection,
              ) -> tuple[list[int], list[int], list[tuple[str, int, bool]]]:
    """(definitions in header order, struct/union tags declared at the top, kfunc entries)
    of the slim header of `selection`."""
    header = slim_header(btf)
    kfuncs = [k for k in header.kfuncs if k[1] in selection.kfuncs]
    # A prototype needs its typedefs and enums defined, its structs only declared.
    roots = set(selection.defs)
    kfunc_tags = []
    for name, fid, _ in kfuncs:
        for r, _mode in header.prototype(fid, name)[1]:
            if r < header.first_id:
                continue
            if header.types[r].kind in (f.STRUCT, f.UNION):
                kfunc_tags.append(r)
            else:
                roots.add(r)
    sequence, declared = _closure(header, roots)
    chosen = set(sequence)
    forward: dict[int, None] = {}
    done: set[int] = set()
    for d in sequence:
        for tag in declared[d]:
            if tag not in done:
                forward[tag] = None
        done.add(d)
    for tag in [*kfunc_tags, *selection.declare]:
        if tag not in chosen:
            forward[tag] = None
    return sequence, list(forward), kfuncs


def dump_slim(btf: Btf, selection: Selection, out: TextIO) -> None:
    """Write the slim header of `selection` (see the module docstring)."""
    header = slim_header(btf)
    sequence, forward, kfuncs = slim_plan(btf, selection)
    text = header.text
    body = (forward_block(header, forward) + "".join(text[d] for d in sequence)
            + kfunc_block(header, kfuncs))
    write_header(out, VMLINUX_GUARD, bool(kfuncs), [body])


def _closure(header: _Header, roots: Iterable[int]) -> tuple[list[int], dict[int, list[int]]]:
    """(the definitions `roots` need, in full-header order; per definition, the tags it
    needs declared), by the full header's own dependency rule, every typedef complete."""
    declared: dict[int, list[int]] = {}
    stack = list(roots)
    while stack:
        d = stack.pop()
        if d in declared:
            continue
        before, tags = header.placement.dependencies(d)
        declared[d] = tags
        stack.extend(r for r in before if r not in declared)
        if header.types[d].kind == f.TYPEDEF:
            # A typedef the header defines is complete, so that its size is the BTF's
            # (`foo_t *p` alone would leave `struct foo` declared only).
            stack.extend(r for r in header.placement.complete_deps(d) if r not in declared)
    sequence = [d for d in header.order()[0] if d in declared]
    return sequence, declared


def select_object(btf: Btf, path: str, selection: Selection | None = None) -> Selection:
    """What BPF object `path` uses of `btf`'s header: the types its CO-RE relocations
    start from, the named types of its own BTF the header defines (declarations for those
    it only declares), the kfuncs it calls and the typedefs libbpf's headers need."""
    header = slim_header(btf)
    index = slim_index(btf)
    selection = selection or Selection()
    data = reader.read_file(path)
    if data[:4] != reader.ELF_MAGIC:
        raise InputError(path, "not an ELF object (a BPF .o with .BTF and .BTF.ext)")
    local = reader.parse(reader.elf_section(path, data, ".BTF"), path)
    for name in LIBBPF_HEADER_TYPEDEFS:
        index.add(selection, name)
    string = _checked_strings(local, path)
    for relo in core_relos(reader.elf_section(path, data, ".BTF.ext"), string, path):
        _add_relo_root(index, selection, local, relo.type_id, path)
    for _tid, t in local.own():
        name = local.name(t.name_off)
        if not name:
            continue
        if t.kind == f.FWD:
            selection.declare.update(d for d in index.tag("union" if t.kflag else "struct", name)
                                     if header.types[d].kind != f.FWD)
        elif t.kind == f.TYPEDEF:
            selection.defs.update(d for d in index.plain.get(name, ())
                                  if header.types[d].kind == f.TYPEDEF)
        elif t.kind in (f.STRUCT, f.UNION, f.ENUM, f.ENUM64):
            selection.defs.update(index.tag(_tag_word(t.kind), name))
        elif t.kind == f.FUNC and t.extra == f.LINKAGE_EXTERN and name in index.kfuncs:
            selection.kfuncs.add(index.kfuncs[name])
    return selection


def _tag_word(kind: int) -> str:
    return "struct" if kind == f.STRUCT else "union" if kind == f.UNION else "enum"


def _add_relo_root(index: _Names, selection: Selection, local: Btf, type_id: int,
                   path: str) -> None:
    """The kernel type a relocation's local root type stands for: the same name, else its
    essential name (libbpf's `foo___flavor` -> `foo`); none when the kernel lacks it."""
    t = local.type_by_id(type_id) if 0 < type_id <= local.last_id else None
    if type_id and t is None:
        raise InputError(path, f".BTF.ext: CO-RE relocation on type id {type_id}, which "
                         f"its .BTF does not have")
    while t is not None and t.kind in spec.QUALIFIER:
        t = local.type_by_id(t.size_or_type)
    if t is None or not t.name_off:
        return
    name = local.name(t.name_off)
    for candidate in (name, essential_name(name)):
        if t.kind == f.TYPEDEF:
            found = [d for d in index.plain.get(candidate, ())
                     if index.header.types[d].kind == f.TYPEDEF]
        elif t.kind in (f.STRUCT, f.UNION, f.ENUM, f.ENUM64, f.FWD):
            word = "union" if t.kind == f.UNION or (t.kind == f.FWD and t.kflag) else (
                "struct" if t.kind in (f.STRUCT, f.FWD) else "enum")
            found = index.tag(word, candidate)
        else:
            return
        if found:
            selection.defs.update(found)
            return


def essential_name(name: str) -> str:
    """`name` without its CO-RE flavour, as libbpf's bpf_core_essential_name_len cuts it: at
    the last `___` between two characters other than `_`."""
    for i in range(len(name) - 5, -1, -1):
        if name[i] != "_" and name[i + 1:i + 4] == "___" and name[i + 4] != "_":
            return name[:i + 1]
    return name


def _checked_strings(local: Btf, path: str) -> Callable[[int], str]:
    """Offset -> string of the object's .BTF, an InputError for offsets outside it."""
    strings = local.strings

    def string(offset: int) -> str:
        if not strings.contains(offset):
            raise InputError(path, f".BTF.ext: string offset {offset} is outside .BTF's "
                             f"strings")
        return strings.get(offset)

    return string
