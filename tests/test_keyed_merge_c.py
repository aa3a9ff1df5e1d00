"""The keyed merge in C (dwarf/keyed_core.py, dwarf/csrc/merge.c) against keys.py's, and
the records' pooling in C (pool.c) against fragment.py's TypePool.

Judge: keys.py's KeyedMerge on the same fragments: the same unsafe keys, units sent
again, parent ids of a records pool, and the same merged type section and strings (the
reference's Btf after place_variables, as encode_dwarf uses it). Inputs: the golden
objects and a kernel sample (entries made by the compiled worker core, at -j1 and -j2
shuffled), and random units keyed by the pure KeyPool in several groups; shapes the C
side does not take must end in the reference's result. The pools must give the same
pool ids and records for the same units.
"""

from __future__ import annotations

import copy
import functools
import random
from array import array
from pathlib import Path
from types import SimpleNamespace

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import writer
from canonbtf.btf.model import Btf
from canonbtf.dwarf import encode
from canonbtf.dwarf.core import compiled_module
from canonbtf.dwarf.fragment import Fragment, TypePool
from canonbtf.dwarf.functions import place_variables
from canonbtf.dwarf.keyed_core import (
    CompiledKeyedMerge,
    CompiledTypePool,
    keyed_merge,
    new_type_pool,
)
from canonbtf.dwarf.keys import (
    CELL_INT,
    CELL_NAME,
    CELL_OBJECT,
    CELL_TOKEN,
    KeyedMerge,
    KeyPool,
    PackedEntries,
)
from canonbtf.dwarf.sections import open_dwarf

from .conftest import REPO, fetched_kernel_sample

pytestmark = pytest.mark.skipif(compiled_module() is None, reason="compiled core not in use")

OBJECTS = sorted((REPO / "golden" / "obj").glob("*.o"))


@functools.cache
def golden_base() -> Btf:
    """A base for split results: the first golden object's BTF."""
    return encode.encode_dwarf(open_dwarf(str(OBJECTS[0])), 1)[0]


def same_merge(groups: list, redo, base: Btf | None = None,
               split: frozenset = frozenset()) -> CompiledKeyedMerge:
    """Both merges of `groups`; `redo(offsets)` gives the record groups of those units;
    split over `base` when given, the tokens `split` ambiguous."""
    pure = KeyedMerge(groups, split)
    compiled = keyed_merge(groups, split)
    assert isinstance(compiled, CompiledKeyedMerge)
    assert compiled.unsafe == bytes(pure.unsafe)
    assert compiled.received == pure.received
    again = pure.redo_units()
    assert compiled.redo_units() == again
    record_groups = redo(again)
    for group in record_groups:
        entries = _local_entries(group)
        assert compiled.parent_ids(entries) == pure.parent_ids(entries)
    expected = place_variables(pure.build(record_groups, base))
    got = compiled.build(record_groups, base)
    assert got.packed is not None
    assert got.base is base and got.first_id == expected.first_id
    assert got.strings.start == expected.strings.start
    assert got.strings.data() == expected.strings.data()
    assert writer.section_words(got) == writer.section_words(expected)
    assert got.types == expected.types  # the words decode to the reference's Types
    return compiled


def _local_entries(group: list[Fragment]) -> list:
    pool = KeyPool()
    pool.add_unit([None] + [record for fragment in group for record in fragment.records])
    return pool.entries[1:]


def same_pool(units: list[list]) -> None:
    """TypePool and the compiled pool: the same ids and records, unit by unit."""
    pure, compiled = TypePool(), new_type_pool()
    assert isinstance(compiled, CompiledTypePool)
    for unit in units:
        assert compiled.add_unit(unit) == pure.add_unit(unit)
    assert compiled.records == pure.records


def unit_records(dwarf) -> list[list]:
    context = encode.context_for(dwarf, encode.DEFAULT_FEATURES)
    worker = encode._Worker(dwarf, "fast", context)
    return [worker.native.records(encode.unit_fields(unit)) for unit in dwarf.units]


def dwarf_merge(dwarf, jobs: int, seed: int | None, base: Btf | None = None) -> None:
    context = encode.context_for(dwarf, encode.DEFAULT_FEATURES)
    groups, _ = encode.encode_fragments(dwarf, jobs, seed, "fast", False, context, True)

    def redo(offsets: list[int]) -> list:
        subset = copy.copy(dwarf)
        subset.units = [unit for unit in dwarf.units if unit.offset in set(offsets)]
        if not subset.units:
            return []
        return encode.encode_fragments(subset, 1, None, "fast", False, context)[0]

    same_merge(groups, redo, base)


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in OBJECTS])
def test_golden_objects(path: Path):
    dwarf = open_dwarf(str(path))
    dwarf_merge(dwarf, 1, None)
    dwarf_merge(dwarf, 2, 3)
    dwarf_merge(dwarf, 1, None, golden_base())
    same_pool(unit_records(dwarf))


def test_kernel_sample():
    dwarf = fetched_kernel_sample(40)
    dwarf_merge(dwarf, 2, 7)
    same_pool(unit_records(fetched_kernel_sample(150)))


# -- random units ------------------------------------------------------------------------

NAMES = ["", "", "a", "b", "c", "list", "node"]


def random_record(rng: random.Random, count: int) -> tuple:
    """A record as convert.py makes them, referring to records 0..count-1."""
    def ref() -> int:
        return rng.randrange(count)

    name = rng.choice(NAMES)
    kind = rng.choice([f.INT, f.PTR, f.PTR, f.STRUCT, f.STRUCT, f.UNION, f.FWD, f.ENUM,
                       f.ENUM64, f.TYPEDEF, f.CONST, f.ARRAY, f.FUNC_PROTO, f.FUNC, f.VAR])
    if kind == f.INT:
        return (kind, name or "int", 0, rng.choice([1, 4, 8]), rng.choice([0, 32, 64]), ())
    if kind in (f.PTR, f.CONST):
        return (kind, "", 0, ref(), 0, ())
    if kind == f.TYPEDEF:
        return (kind, name or "t", 0, ref(), 0, ())
    if kind in (f.STRUCT, f.UNION):
        members = tuple((rng.choice(NAMES), ref(), 8 * i) for i in range(rng.randrange(3)))
        return (kind, name, 0, 8 * len(members), 0, members)
    if kind == f.FWD:
        return (kind, name or "a", rng.randrange(2), 0, 0, ())
    if kind in (f.ENUM, f.ENUM64):
        top = 2**64 if kind == f.ENUM64 else 2**32
        values = tuple((rng.choice("xyz"), rng.choice([0, 1, top - 1, 2**63]) % top)
                       for _ in range(rng.randrange(3)))
        return (kind, name, 0, 8 if kind == f.ENUM64 else 4, 0, values)
    if kind == f.ARRAY:
        return (kind, "", 0, 0, (ref(), ref(), rng.randrange(4)), ())
    if kind == f.FUNC_PROTO:
        return (kind, "", 0, ref(), 0, tuple(("", ref()) for _ in range(rng.randrange(3))))
    if kind == f.FUNC:
        return (kind, name or "fn", 0, ref(), rng.randrange(3), ())
    place = rng.choice([1, (1, ".data", 8 * rng.randrange(3), 8), (0, ".bss", 0, 4)])
    return (kind, name or "v", 0, ref(), place, ())


def packed(entries: list) -> PackedEntries:
    """Entry tuples as the compiled encoder packs them (this test's own packer, for the
    pure KeyPool's entries): each str a NAME, each int of 64 bits an INT, anything else
    (tokens, VAR places, wider ints) an OBJECT or, a tuple, a TOKEN."""
    cells, ends, names, objects = array("q"), array("I"), [], []
    for kind, name, kflag, sot, extra, items in entries:
        fields = [kind, name, kflag, sot, *(extra if kind == f.ARRAY else (extra,)),
                  len(items), *(field for item in items for field in item)]
        for field in fields:
            if isinstance(field, str):
                cells.extend((CELL_NAME, len(names)))
                names.append(field)
            elif isinstance(field, int) and -2**63 <= field < 2**63:
                cells.extend((CELL_INT, field))
            else:
                cells.extend((CELL_TOKEN if isinstance(field, tuple) else CELL_OBJECT,
                              len(objects)))
                objects.append(field)
        ends.append(len(cells) // 2)
    return PackedEntries(cells.tobytes(), ends.tobytes(), names, objects)


def random_unit(rng: random.Random) -> list:
    count = rng.randrange(2, 12)
    return [None] + [random_record(rng, count) for _ in range(count - 1)]


def random_merge(rng: random.Random, units: list[list]) -> None:
    """`units` split across 1-3 pure workers (each a KeyPool), sent as keyed fragments;
    merged as split BTF over a base one time in three, half of those with names taken as
    ambiguous."""
    workers = rng.randrange(1, 4)
    groups = []
    for w in range(workers):
        pool = KeyPool()
        fragments = []
        for offset in range(w, len(units), workers):
            pool.add_unit(units[offset], SimpleNamespace(offset=offset))
            if rng.random() < 0.4:
                fragments.append(pool.fragment(1, 0, {}))
        fragments.append(pool.fragment(0, 0, {}))
        for i, fragment in enumerate(fragments):
            if rng.random() < 0.5:  # as the compiled encoder sends them
                fragments[i] = fragment._replace(entries=packed(fragment.entries))
                assert fragments[i].entries.unpacked() == fragment.entries
        groups.append(fragments)

    def redo(offsets: list[int]) -> list:
        if not offsets:
            return []
        pool = TypePool()
        for offset in offsets:
            pool.add_unit(units[offset])
        return [[pool.fragment(len(offsets), 0, {})]]

    base = golden_base() if rng.random() < 1 / 3 else None
    split = frozenset()
    if base is not None and rng.random() < 0.5:  # names the base would define otherwise
        split = frozenset({("aggregate", rng.choice(NAMES[2:]), False), ("enum", "b")})
    same_merge(groups, redo, base, split)


def test_random_units():
    rng = random.Random(11)
    for _ in range(300):
        units = [random_unit(rng) for _ in range(rng.randrange(1, 7))]
        random_merge(rng, units)
        same_pool(units)


def test_shapes_the_c_side_leaves_to_the_reference():
    """A value no 32-bit word holds (the reference's Btf keeps it in its Types) and an
    entry of an odd shape (a list of items: the reference fails as it always did)."""
    units = [[None, (f.INT, "int", 0, 2**40, 32, ()), (f.PTR, "", 0, 1, 0, ())]]
    pool = KeyPool()
    pool.add_unit(units[0], SimpleNamespace(offset=0))
    groups = [[pool.fragment(1, 0, {})]]
    compiled = keyed_merge(groups)
    assert isinstance(compiled, CompiledKeyedMerge)
    built = compiled.build([])
    assert built.packed is None
    assert built.types == KeyedMerge(groups).build([]).types
    odd = [[encode.KeyFragment([(f.STRUCT, "s", 0, 4, 0, [("m", 0, 0)])], [], 1, 0, {})]]
    with pytest.raises(TypeError, match="unhashable"):  # the reference's own failure
        keyed_merge(odd)


def golden_packed() -> tuple[list, PackedEntries]:
    """A golden object's fragments, and the packed entries of its first."""
    dwarf = open_dwarf(str(OBJECTS[0]))
    context = encode.context_for(dwarf, encode.DEFAULT_FEATURES)
    groups, _ = encode.encode_fragments(dwarf, 1, None, "fast", False, context, True)
    return groups, groups[0][0].entries


def damaged(entries: PackedEntries, rng: random.Random) -> PackedEntries:
    """`entries` with one of its cells, ends or lists changed."""
    cells, ends = array("q", entries.cells), array("I", entries.ends)
    what = rng.randrange(6)
    if what == 0:
        cells[rng.randrange(len(cells))] = rng.choice([0, 5, -1, 2**31, -2**63, 2**63 - 1])
    elif what == 1:
        i = rng.randrange(0, len(cells), 2)
        cells[i] = rng.choice([CELL_INT, CELL_NAME, CELL_OBJECT, CELL_TOKEN])
    elif what == 2:
        ends[rng.randrange(len(ends))] = rng.choice([0, 1, len(cells) // 2 + 1, 2**32 - 1])
    elif what == 3:
        return entries._replace(cells=entries.cells[:-rng.randrange(1, 40)])
    elif what == 4:
        return entries._replace(names=entries.names[:len(entries.names) // 2],
                                objects=[None] * len(entries.objects))
    else:
        return entries._replace(ends=entries.ends[:-rng.randrange(1, 8)])
    return entries._replace(cells=cells.tobytes(), ends=ends.tobytes())


def test_packed_entries_from_the_compiled_encoder():
    """The encoder's packed entries read by the C merge give what their tuples give."""
    groups, entries = golden_packed()
    assert isinstance(entries, PackedEntries) and entries.unpacked()
    as_tuples = [[fragment.with_tuples() for fragment in group] for group in groups]
    from_packed, from_tuples = keyed_merge(groups), keyed_merge(as_tuples)
    assert isinstance(from_packed, CompiledKeyedMerge)
    assert from_packed.unsafe == from_tuples.unsafe
    assert from_packed.received == from_tuples.received == len(entries.unpacked())
    assert writer.write(from_packed.build([])) == writer.write(from_tuples.build([]))


def c_merge(entries) -> bytes | type:
    """The C merge's unsafe keys of one fragment's entries, or the exception it raised."""
    core = compiled_module().KeyedMerge()
    try:
        core.add_group([entries], [])
        return core.finish([])
    except (ValueError, TypeError) as e:
        return type(e)


def test_damaged_packed_entries_read_as_their_tuples():
    """A damaged packed fragment (as no encoder sends: a bug's) is never a crash (CI runs
    this under ASan/UBSan): the C merge refuses what unpacked() refuses (ValueError), and
    takes the rest exactly as the tuples unpacked() gives (the same keys, or the same
    refusal, after which the merge runs the reference)."""
    _, entries = golden_packed()
    rng = random.Random(5)
    refused = 0
    for _ in range(400):
        bad = damaged(entries, rng)
        try:
            tuples = bad.unpacked()
        except ValueError:
            refused += 1
            assert c_merge(bad) is ValueError
            continue
        assert c_merge(bad) == c_merge(tuples)
    assert 0 < refused < 400


def test_pool_leaves_odd_units_to_the_reference():
    """A unit the C side does not take (a reference out of the unit, a name that is no
    str) is pooled by the reference, between units the C side pools."""
    good = [None, (f.INT, "int", 0, 4, 32, ()), (f.PTR, "", 0, 3, 0, ()),
            (f.STRUCT, "s", 0, 8, 0, (("p", 2, 0),))]
    odd_name = [None, (f.INT, b"int", 0, 4, 32, ())]
    odd_ref = [None, (f.PTR, "", 0, -1, 0, ()), (f.INT, "int", 0, 4, 32, ())]
    same_pool([good, odd_name, good, odd_ref, good])
