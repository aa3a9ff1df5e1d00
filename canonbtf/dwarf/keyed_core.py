"""The merge's compiled parts, when built: the keyed merge's parent side
(`_core.KeyedMerge`, dwarf/csrc/merge.c) and the records' pooling (`_core.pool_unit`,
dwarf/csrc/pool.c).

keys.py's KeyedMerge stays the reference and the fallback (no compiled core, PyPy,
CANONBTF_PURE): the C side unifies the same entries into the same key ids, finds the
same unsafe keys and units to encode again, and writes the merged type section straight
as words, which stay packed (model.Packed) through the dedup and the canonical order:
no `Type` is made for the ~95 k safe keys of a kernel. The records of the units encoded
again go through keys.py (`redo_records`: a few units' records). `CompiledTypePool`
pools records into fragment.TypePool's own state with the same ids and records (the
units the keyed merge sends again).
tests/test_keyed_merge_c.py holds each to its reference.

Anything the C side does not take as the encoder makes it (a ValueError: a field of an
odd shape, a value no word holds) sends the whole merge to the reference, which gives
the same bytes or the same error as without the compiled core.
"""

from __future__ import annotations

from .. import u32
from ..btf.model import Btf, Packed
from ..btf.reader import unpacked_types
from ..btf.strings import StringTable
from ..btf.writer import type_words
from .core import compiled_module
from .fragment import Fragment, Record, TypePool, label_ranks
from .functions import datasecs
from .keys import KeyedMerge, KeyFragment

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable


def keyed_merge(groups: list[list[KeyFragment]], split: frozenset[tuple] = frozenset()
                ) -> KeyedMerge:
    """The merge of the workers' keyed fragments: in C when built, else keys.py's.
    `split`: as KeyedMerge takes it."""
    module = compiled_module()
    merge_type = getattr(module, "KeyedMerge", None)
    if merge_type is not None:
        try:
            return CompiledKeyedMerge(merge_type(), groups, split)
        except ValueError:
            pass
    return KeyedMerge(groups, split)


class CompiledKeyedMerge(KeyedMerge):
    """KeyedMerge's interface over the C side; `build` returns a packed Btf."""

    def __init__(self, core: object, groups: list[list[KeyFragment]],
                 split: frozenset[tuple] = frozenset()):
        """`core`: a new `_core.KeyedMerge`."""
        for group in groups:
            core.add_group([fragment.entries for fragment in group],
                           [(offset, u32.view(keys)) for fragment in group
                            for offset, keys in fragment.unit_keys])
        self._core = core
        self._groups = groups
        self._split = split
        self.unsafe = core.finish(sorted(split))
        self.received = core.received

    def redo_units(self) -> list[int]:
        return self._core.redo_units()

    def parent_ids(self, entries: list[Record]) -> list[int]:
        return self._core.lookup(entries)

    def build(self, record_groups: list[list[Fragment]], base: Btf | None = None) -> Btf:
        """As KeyedMerge.build, the types as words: the safe keys', the records of the
        units sent again, then the DATASECs of the placed VARs."""
        core = self._core
        first = base.last_id + 1 if base is not None else 1
        start = base.strings.end if base is not None else 0
        emitted = core.emit(first)
        records = self.redo_records(record_groups, first - 1 + emitted, u32.view(core.type_of))
        try:
            strings = StringTable(core.strings(records, start), start)
            words, placed = core.words(records)
        except ValueError:
            return KeyedMerge(self._groups, self._split).build(record_groups, base)
        sections: dict[str, list[tuple[int, int, int]]] = {}
        for type_id, section, offset, size in placed:
            sections.setdefault(section, []).append((offset, size, type_id))
        found = datasecs(sections, strings)
        words += type_words(Btf(found, strings)).tobytes()
        count = emitted + len(records) + len(found)
        string_sections = [*(base.string_sections() if base is not None else ()),
                           (start, strings.data())]
        return Btf(None, strings, base, base.byteorder if base is not None else "<",
                   packed=Packed(words, count,
                                 lambda: unpacked_types(words, first, string_sections)))


def new_type_pool() -> TypePool:
    """A records pool: the compiled one when built, else fragment.py's."""
    module = compiled_module()
    pool_unit = getattr(module, "pool_unit", None)
    return TypePool() if pool_unit is None else CompiledTypePool(pool_unit)


class CompiledTypePool(TypePool):
    """TypePool whose `add_unit` runs in C on the same state; a unit the C side does not
    take (a ValueError before anything is pooled) goes to the reference."""

    def __init__(self, pool_unit: Callable[..., list[int]]):
        super().__init__()
        self._pool_unit = pool_unit

    def add_unit(self, records: list[Record | None], unit: object = None) -> list[int]:
        try:
            return self._pool_unit(records if isinstance(records, list) else list(records),
                                   self.records, self._acyclic, self._cyclic, self._names,
                                   label_ranks)
        except ValueError:
            return super().add_unit(records, unit)
