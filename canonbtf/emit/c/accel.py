"""The C header's hot parts in C (canonbtf._btf, canonbtf/emit/c/csrc/cdump.c), when built.

shape.py, spell.py (here in emit/c/), btf/declarator.py and btf/sizes.py stay the reference: the
compiled part gives the same spelling (text, mentions, enumerators) byte for byte, and a shape
check that only answers "certainly spellable" (then the reference is skipped) or "ask
the reference". It takes a BTF without a base (a vmlinux: where the time goes; modules
are small) whose type section is still packed, or can be packed; each method returns
None where it does not apply (not built, CANONBTF_PURE set, damaged or odd input), and
the caller runs the reference. tests/test_compiled_dump.py holds the two to the same
header."""

from __future__ import annotations

from types import ModuleType

from ... import native
from ...btf import writer
from ...btf.model import Btf
from ...btf.strings import StringTable

# (text, [(id, VALUE or REF)], [enumerator]) as DefinitionSpeller.render gives it.
Spelled = tuple


def _module() -> ModuleType | None:
    return native.compiled("canonbtf._btf", "c_view")


class CompiledSpelling:
    """One BTF's type section and strings as the compiled part reads them (checked once,
    `_btf.c_view`); made before the Btf decodes its types (decoding drops the packed
    words)."""

    def __init__(self, module: ModuleType, view: object):
        self._module = module
        self._view = view

    @classmethod
    def of(cls, btf: Btf) -> CompiledSpelling | None:
        module = _module()
        if module is None:
            return None
        if btf.base is not None or not isinstance(btf.strings, StringTable):
            native.fell_back("dump c", "split BTF or strings not read from a file")
            return None
        words = writer.section_words(btf)
        if words is None:
            native.fell_back("dump c", "types no longer packed as read")
            return None
        try:
            return cls(module, module.c_view(words, 1, btf.string_sections()))
        except ValueError as e:
            native.fell_back("dump c", f"c_view: {e}")
            return None

    def _call(self, function: str, *args: object) -> object | None:
        """`function` of the compiled part; None (counted: the reference runs) where it
        declines."""
        try:
            done = getattr(self._module, function)(self._view, *args)
        except ValueError as e:
            native.fell_back("dump c", f"{function}: {e}")
            return None
        if done is None:
            native.fell_back("dump c", f"{function} declined")
        return done

    def facts(self) -> tuple[int, bytes, list[str], list[tuple[int, str]]] | None:
        """c.type_facts without decoding a Type."""
        return self._call("c_facts")

    def shape_ok(self, ptr_size: int) -> bool:
        """True when c_shape_problem would certainly find nothing."""
        ok = self._call("c_shape_ok", ptr_size) is True
        if not ok:
            native.fell_back("dump c", "c_shape_ok cannot tell")
        return ok

    def definitions(self, ptr_size: int) -> tuple[list[int], list[Spelled]] | None:
        """c._Header._definitions: the definitions in id order and their spellings."""
        return self._call("c_definitions", ptr_size)

    def render(self, ptr_size: int, ids: list[int], display: dict[int, str],
               enumerator_suffix: dict[int, dict[int, str]]) -> list[Spelled] | None:
        """The spellings of definitions `ids` with the `___N` names known."""
        shown = {d: name.encode("latin-1") for d, name in display.items()}
        return self._call("c_render", ptr_size, ids, shown, enumerator_suffix)

    def declarations(self, ptr_size: int, funcs: list[tuple[int, str]],
                     display: dict[int, str]) -> list[tuple[str, list]] | None:
        """DefinitionSpeller.declaration of each (FUNC id, name) with the FUNC's prototype."""
        shown = {d: name.encode("latin-1") for d, name in display.items()}
        return self._call("c_declarations", ptr_size,
                          [(fid, name.encode("latin-1")) for fid, name in funcs], shown)

    def placement(self, ptr_size: int, defs: list[int], refs: dict[int, list[tuple[int, int]]],
                  rank: dict[int, int]) -> tuple[list[int], list[int]] | None:
        """order.Placement.order: (definitions in header order, tags to declare)."""
        return self._call("c_placement", ptr_size, defs, refs, rank)
