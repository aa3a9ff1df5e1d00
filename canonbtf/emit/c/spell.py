"""How the C header spells a definition: structs, unions and enums written out with their
padding and attributes, typedefs and prototypes as bpftool writes their declarators.

Spelling a definition also notes every named type it mentions and how (by value, or
through a pointer or a prototype), which is all the header's order needs to know of it,
and the enumerators it prints, which may need a `___N` suffix.
"""

from __future__ import annotations

from collections.abc import Callable

from ...btf import format as f
from ...btf.declarator import Declarators, declarator_chain
from ...btf.model import Type
from ...btf.sizes import TypeSizes, round_up
from ...spec import kinds as spec

# How a type is used where it is mentioned: by value (it must be complete) or through a
# pointer or in a prototype (a declaration is enough).
VALUE = 0
REF = 1

# A typedef for a compiler built-in: defining it again breaks the build (bpftool skips it too).
BUILTIN_TYPEDEFS = frozenset({"__builtin_va_list"})
# `mode` attributes that give an enum a size other than int's (`word` is DI on 64-bit).
_ENUM_MODES = {1: "byte", 2: "HI", 8: "DI"}

_TABS = "\t" * 64

# What spelling a definition gives: its text, the named types it mentions (id, VALUE or
# REF) and the enumerators it prints.
Spelled = tuple[str, list[tuple[int, int]], list[str]]


def is_builtin_typedef(kind: int, name: str) -> bool:
    """A typedef the compiler defines itself, left out of the header as bpftool leaves it;
    a struct, union, enum or fwd of that name is an ordinary definition (bpftool's too)."""
    return kind == f.TYPEDEF and name in BUILTIN_TYPEDEFS


def _tabs(level: int) -> str:
    return _TABS[:level] if level <= 64 else "\t" * level


class DefinitionSpeller(Declarators):
    """Spells the header's definitions with the names in `display` (the `___N` suffixes,
    filled in once the names are known) and `enumerator_suffix`."""

    def __init__(self, types: list[Type | None], names: list[str], string: Callable[[int], str],
                 display: dict[int, str], enumerator_suffix: dict[int, dict[int, str]],
                 sizes: TypeSizes):
        self.types = types
        self.names = names
        self._string = string
        self.display = display
        self.enumerator_suffix = enumerator_suffix
        self.sizes = sizes
        self.ptr_size = sizes.ptr_size
        self._specifiers: dict[int, tuple[str | None, bool]] = {}
        self._simple: dict[int, tuple[str, int, bool] | None] = {}
        # Anonymous enums printed inside some definition.
        self.inline: set[int] = set()

    def render(self, d: int) -> Spelled:
        """Definition d: its text, what it mentions and how, the enumerators it prints."""
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
                text = "typedef " + self._decl(t.size_or_type, name, 0, REF)
        return text + ";\n\n", self._refs, self._enumerators

    def declaration(self, tid: int, name: str) -> tuple[str, list[tuple[int, int]]]:
        """`name` declared with type `tid` (a function's prototype), and what it mentions."""
        self._start({})
        return self._decl(tid, name, 0, REF), self._refs

    def forget_names(self) -> None:
        """Drop the spellings made before the `___N` names were known."""
        self._specifiers.clear()
        self._simple.clear()

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
                text = self._decl(mtype, member_name(name_off), level + 1, VALUE)
            else:
                prefix, mentioned, through_pointer = simple
                if mentioned:
                    mention((mentioned, REF if through_pointer else VALUE))
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
            self.inline.add(tid)
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
                self._refs.append((mentioned, REF if through_pointer else mode))
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
                base_mode = VALUE
                break
            if kind == f.PTR or kind == f.FUNC_PROTO:
                base_mode = REF
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
        cached = (spelled, spelled is not None and t is not None and t.kind in spec.C_NAMED)
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
        parts = [self._decl(ptype, param_name(name_off), level, REF)
                 for name_off, ptype in params]
        if params[-1][1] == 0:
            parts[-1] = "..."
        return ", ".join(parts)
