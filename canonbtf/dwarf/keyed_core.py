"""The keyed merge's parent side in C (`_core.KeyedMerge`, dwarf/csrc/merge.c), when built.

keys.py's KeyedMerge stays the reference and the fallback (no compiled core, PyPy,
CANONBTF_PURE): the C side unifies the same entries into the same key ids, finds the
same unsafe keys and units to encode again, and writes the merged type section straight
as words, which stay packed (model.Packed) through the dedup and the canonical order:
no `Type` is made for the ~95 k safe keys of a kernel. The records of the units encoded
again still go through keys.py (`redo_records`: a few units' records).
tests/test_keyed_merge.py holds both to the same Btf bytes.

Anything the C side does not take as the encoder makes it (a ValueError: a field of an
odd shape, a value no word holds) sends the whole merge to the reference, which gives
the same bytes or the same error as without the compiled core.
"""

from __future__ import annotations

from array import array

from ..btf.model import Btf, Packed
from ..btf.reader import unpacked_types
from ..btf.strings import StringTable
from ..btf.writer import type_words
from .core import compiled_module
from .fragment import Fragment
from .functions import datasecs
from .keys import KeyedMerge, KeyFragment, Record


def keyed_merge(groups: list[list[KeyFragment]]) -> KeyedMerge:
    """The merge of the workers' keyed fragments: in C when built, else keys.py's."""
    module = compiled_module()
    merge_type = getattr(module, "KeyedMerge", None)
    if merge_type is not None:
        try:
            return CompiledKeyedMerge(merge_type(), groups)
        except ValueError:
            pass
    return KeyedMerge(groups)


class CompiledKeyedMerge(KeyedMerge):
    """KeyedMerge's interface over the C side; `build` returns a packed Btf."""

    def __init__(self, core, groups: list[list[KeyFragment]]):  # noqa: ANN001 - _core type
        for group in groups:
            core.add_group([fragment.entries for fragment in group],
                           [keys for fragment in group for keys in fragment.unit_keys])
        self._core = core
        self._groups = groups
        self.unsafe = core.finish()
        self.received = core.received

    def redo_units(self) -> list[int]:
        return self._core.redo_units()

    def parent_ids(self, entries: list[Record]) -> list[int]:
        return self._core.lookup(entries)

    def build(self, record_groups: list[list[Fragment]]) -> Btf:
        """As KeyedMerge.build, the types as words: the safe keys', the records of the
        units sent again, then the DATASECs of the placed VARs."""
        core = self._core
        emitted = core.emit()
        type_of = array("I")
        type_of.frombytes(core.type_of)
        records = self.redo_records(record_groups, emitted, type_of)
        try:
            strings = StringTable(core.strings(records))
            words, placed = core.words(records)
        except ValueError:
            return KeyedMerge(self._groups).build(record_groups)
        sections: dict[str, list[tuple[int, int, int]]] = {}
        for type_id, section, offset, size in placed:
            sections.setdefault(section, []).append((offset, size, type_id))
        found = datasecs(sections, strings)
        words += type_words(Btf(found, strings)).tobytes()
        count = emitted + len(records) + len(found)
        string_sections = [(0, strings.data())]
        return Btf(None, strings, packed=Packed(
            words, count, lambda: unpacked_types(words, 1, string_sections)))
