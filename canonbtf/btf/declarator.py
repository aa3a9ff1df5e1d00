"""C declarators the way bpftool writes them: one implementation for the C header
(emit/c/spell.py), diff and tools/compare_pahole.py (`ReferenceSpeller`).

A type reference is a chain of pointers, qualifiers, type tags, arrays and prototypes
ending at a base type (`int`, `struct foo`, a typedef, void). C reads it inside out:
`int (*x)[4]` is a pointer to an array, `int *x[4]` an array of pointers; a qualifier on
an array or a prototype has no C spelling (gcc emits CONST on arrays) and is left out, so
`Declarators.dropped` tells callers that compare types what the text does not show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from . import format as f
from .model import Btf, Type

QUALIFIERS = {f.CONST: "const", f.VOLATILE: "volatile", f.RESTRICT: "restrict"}
CHAIN_KINDS = frozenset({f.PTR, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG, f.FUNC_PROTO})
BASE_KINDS = frozenset({f.INT, f.FLOAT, f.STRUCT, f.UNION, f.ENUM, f.ENUM64, f.FWD,
                        f.TYPEDEF})


def declarator_chain(types: list[Type | None], tid: int, limit: int = 0) -> list[int]:
    """The ids from `tid` down to its base type (0 for void), outermost first. With a
    `limit`, longer chains (only malformed BTF loops) stop there, at a -1."""
    chain = []
    while True:
        chain.append(tid)
        if tid == 0:
            break
        if limit and len(chain) > limit:
            chain[-1] = -1
            break
        t = types[tid]
        kind = t.kind
        if kind == f.ARRAY:
            tid = t.extra[0]
        elif kind in CHAIN_KINDS:
            tid = t.size_or_type
        else:
            break
    return chain


class Declarators:
    """Spells a declarator chain; subclasses say how base types and parameters read.

    `types` is the list of types by id; `_base` spells a base type (and may note that it
    is mentioned), `_other` anything else a chain can end at, `_params` a prototype's
    parameter list, `_tag_name` a type tag's value.
    """

    types: list[Type | None]

    def _base(self, tid: int, t: Type, mode: int, level: int) -> str:
        raise NotImplementedError

    def _other(self, tid: int) -> str:
        raise NotImplementedError

    def _params(self, t: Type, level: int) -> str:
        raise NotImplementedError

    def _tag_name(self, tid: int) -> str:
        raise NotImplementedError

    def dropped(self, qualifier: int, on: int) -> None:
        """A qualifier on an array or prototype was left out of the text (C has no place
        for it); `on` is the kind it qualified. Nothing to do for a header."""

    def _chain(self, chain: list[int], end: int, fname: str, level: int, mode: int) -> str:
        """`chain[:end]` with declarator name `fname` (empty for an abstract one)."""
        types = self.types
        out: list[str] = []
        last_ptr = True
        i = end - 1
        while i >= 0:
            tid = chain[i]
            i -= 1
            if tid <= 0:
                i = self._prefix_qualifiers(chain, i, out)
                out.append("void" if tid == 0 else self._other(tid))
                last_ptr = False
                continue
            t = types[tid]
            kind = t.kind
            if kind in BASE_KINDS:
                i = self._prefix_qualifiers(chain, i, out)
                out.append(self._base(tid, t, mode, level))
            elif kind == f.PTR:
                out.append("*" if last_ptr else " *")
            elif kind in QUALIFIERS:
                out.append(" " + QUALIFIERS[kind])
            elif kind == f.TYPE_TAG:
                value = self._tag_name(tid)
                if t.kflag:
                    out.append(f" __attribute__(({value}))")
                else:
                    out.append(f' __attribute__((btf_type_tag("{value}")))')
            elif kind == f.ARRAY:
                i = self._skip_qualifiers(chain, i, kind)
                nelems = t.extra[2]
                if i < 0:
                    out.append(fname if last_ptr or not fname else " " + fname)
                    out.append(f"[{nelems}]")
                    return "".join(out)
                multidim = types[chain[i]].kind == f.ARRAY
                if fname and not last_ptr:
                    out.append(" ")
                inner = self._chain(chain, i + 1, fname, level, mode)
                out.append(inner if multidim else "(" + inner + ")")
                out.append(f"[{nelems}]")
                return "".join(out)
            elif kind == f.FUNC_PROTO:
                i = self._skip_qualifiers(chain, i, kind)
                if i >= 0:
                    out.append(" (" + self._chain(chain, i + 1, fname, level, mode) + ")")
                else:
                    out.append(fname if last_ptr or not fname else " " + fname)
                out.append("(" + self._params(t, level) + ")")
                return "".join(out)
            else:
                out.append(self._other(tid))
            last_ptr = kind == f.PTR
        out.append(fname if last_ptr or not fname else " " + fname)
        return "".join(out)

    def _skip_qualifiers(self, chain: list[int], i: int, on: int) -> int:
        """Qualifiers right above an array or prototype mean nothing in C: skip them."""
        types = self.types
        while i >= 0 and types[chain[i]].kind in QUALIFIERS:
            self.dropped(types[chain[i]].kind, on)
            i -= 1
        return i

    def _prefix_qualifiers(self, chain: list[int], i: int, out: list[str]) -> int:
        """Qualifiers applied right on a base type go before it: `const char`."""
        types = self.types
        while i >= 0:
            kind = types[chain[i]].kind
            if kind not in QUALIFIERS:
                break
            out.append(QUALIFIERS[kind] + " ")
            i -= 1
        return i


# Longer reference chains than this only come from malformed input (the kernel allows 32).
MAX_CHAIN = 48


class ReferenceSpeller(Declarators):
    """One BTF's type references spelled as C declarators, without ids: a named type by
    its C name, an anonymous aggregate as `struct {...}`, and a qualifier C has no place
    for noted in a comment, so that equal text means equal types. Diff and the tools that
    compare BTFs spell with it."""

    def __init__(self, btf: Btf, types: Sequence[Type | None] | None = None,
                 names: Callable[[int], str] | None = None):
        """`types` by id and `names` by offset, when not `btf.all_types()` and `btf.names`
        (diff's, which decode only what is read)."""
        self.types = btf.all_types() if types is None else types
        self.name = btf.names if names is None else names
        self._expr: dict[int, str] = {}
        self._dropped = False

    def label(self, type_id: int) -> str:
        """A named (or anonymous) base type as C names it."""
        t = self.types[type_id]
        kind = t.kind
        text = self.name(t.name_off)
        if kind == f.STRUCT or kind == f.UNION or kind == f.FWD:
            union = kind == f.UNION or (kind == f.FWD and t.kflag)
            return ("union " if union else "struct ") + (text or "{...}")
        if kind == f.ENUM or kind == f.ENUM64:
            return "enum " + (text or "{...}")
        return text

    def expr(self, type_id: int) -> str:
        """The C spelling of a type reference, e.g. `const struct sk_buff *`."""
        text = self._expr.get(type_id)
        if text is None:
            # Malformed BTF can have a prototype take itself as a parameter: the inner
            # mention reads this placeholder instead of recursing without end.
            self._expr[type_id] = "..."
            text = self.decl(type_id, "")
            self._expr[type_id] = text
        return text

    def decl(self, type_id: int, fname: str) -> str:
        """`fname` declared with type `type_id` (abstract when empty). A qualifier C has no
        place for (on an array or a prototype) is not lost: the chain is spelled out in a
        comment, so that `int(*)[4]` through a const array still differs from one without."""
        chain = declarator_chain(self.types, type_id, MAX_CHAIN)
        outer = self._dropped
        self._dropped = False
        text = self._chain(chain, len(chain), fname, 0, 0)
        if self._dropped:
            words = " ".join(map(self._word, chain[:-1]))
            for tail in (" of", " to", " returning"):
                words = words.removesuffix(tail)
            text += f" /* {words} */"
        self._dropped = outer
        return text

    def _word(self, type_id: int) -> str:
        t = self.types[type_id]
        kind = t.kind
        if kind == f.ARRAY:
            return f"array[{t.extra[2]}] of"
        if kind == f.PTR:
            return "pointer to"
        if kind == f.FUNC_PROTO:
            return "function returning"
        if kind == f.TYPE_TAG:
            return f"tag {self.name(t.name_off)}"
        return f.kind_name(kind).lower()

    def dropped(self, qualifier: int, on: int) -> None:
        self._dropped = True

    def _base(self, tid: int, t: Type, mode: int, level: int) -> str:
        return self.label(tid)

    def _other(self, tid: int) -> str:
        if tid < 0:
            return "..."
        t = self.types[tid]
        return f"<{f.kind_name(t.kind)} {self.name(t.name_off)}>"

    def _tag_name(self, tid: int) -> str:
        return self.name(self.types[tid].name_off)

    def _params(self, proto: Type, level: int) -> str:
        items = proto.items
        if not items:
            return "void"
        parts = [self.expr(p_type) if p_type or p_name else "..." for p_name, p_type in items]
        return ", ".join(parts)
