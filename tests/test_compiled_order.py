"""The compiled type-section part (canonbtf._btf) against its Python reference.

The reference is order.py/refine.py/labels.py (the order), renumber.py (ids and the
string section), reader.py (what a type section may hold) and validator's
order_dependent_reference. Judges: the same ids and bytes on every corpus BTF and on
random graphs full of structurally alike types (where ties must be broken); the same
outcome, message for message, on damaged blobs.
"""

from __future__ import annotations

import random
from array import array
from pathlib import Path

import pytest

from canonbtf import native
from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.model import Btf, Type
from canonbtf.btf.strings import StringTable
from canonbtf.canon import accel, canonicalize
from canonbtf.canon.order import ordered
from canonbtf.errors import InputError
from canonbtf.spec import kinds as spec

from . import fuzzing
from .conftest import BASE_61, MODULE_BLOBS, VMLINUX_BLOBS, both_ways, corpus_path, load_cached

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "order") is None,
                                reason="canonbtf._btf is not built (no compiler, PyPy, or "
                                       "CANONBTF_PURE set)")


def sorted_blob(btf_or_blob: Btf | bytes, base: Btf | None = None, **options) -> bytes:
    """The canonical bytes of a Btf, or of a blob read (both ways) with `base`."""
    btf = btf_or_blob
    if isinstance(btf_or_blob, bytes):
        btf = reader.parse(btf_or_blob, base=base)
    return writer.write(canonicalize(btf, **options))


def random_btf(rng: random.Random, count: int, base: Btf | None = None,
               table: tuple[StringTable, list[int]] | None = None) -> Btf:
    """Types of every kind with few names and sizes: many are alike, many are tied.
    `table`: a string section and the name offsets to draw from (else "", a, b, ab)."""
    first = base.last_id + 1 if base is not None else 1
    if table is None:
        strings, offset = StringTable.build(["a", "b", "ab"], base.strings.end if base else 0)
        table = strings, list(offset.values())
    strings, offsets = table
    last = first + count - 1

    def any_id() -> int:
        return rng.randrange(0, last + 1)

    def name() -> int:
        return rng.choice(offsets)

    def items(size: int, make) -> list:
        return [make() for _ in range(rng.randrange(size))]

    makers = {
        f.INT: lambda: Type(f.INT, name(), 0, 4, rng.choice([32, 0x01000020, 0x01000008])),
        f.STRUCT: lambda: Type(f.STRUCT, name(), rng.randrange(2), 8, 0, items(
            4, lambda: (name(), any_id(), rng.choice([0, 32, 0x01000000])))),
        f.UNION: lambda: Type(f.UNION, name(), 0, 8, 0, items(3, lambda: (name(), any_id(), 0))),
        f.ARRAY: lambda: Type(f.ARRAY, 0, 0, 0, (any_id(), any_id(), rng.randrange(3))),
        f.FUNC_PROTO: lambda: Type(f.FUNC_PROTO, 0, 0, any_id(), 0, items(
            3, lambda: (name(), any_id()))),
        f.ENUM: lambda: Type(f.ENUM, name(), rng.randrange(2), 4, 0, items(
            3, lambda: (name(), rng.choice([0, 1, 0xFFFFFFFF])))),
        f.ENUM64: lambda: Type(f.ENUM64, name(), rng.randrange(2), 8, 0, items(
            2, lambda: (name(), rng.choice([0, 1, 1 << 63, (1 << 64) - 1])))),
        f.DATASEC: lambda: Type(f.DATASEC, name(), 0, 8, 0, items(
            3, lambda: (any_id(), rng.randrange(2), 4))),
        f.FWD: lambda: Type(f.FWD, name(), rng.randrange(2)),
        f.VAR: lambda: Type(f.VAR, name(), 0, any_id(), rng.randrange(2)),
        f.FUNC: lambda: Type(f.FUNC, name(), 0, any_id(), rng.randrange(3)),
        f.DECL_TAG: lambda: Type(f.DECL_TAG, name(), 0, any_id(), rng.choice([-1, 0, 1])),
        f.FLOAT: lambda: Type(f.FLOAT, name(), 0, rng.choice([4, 8])),
        f.TYPEDEF: lambda: Type(f.TYPEDEF, name(), 0, any_id()),
    }
    for kind in (f.PTR, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG):
        makers[kind] = lambda kind=kind: Type(kind, 0, 0, any_id())
    kinds = list(makers) + [f.STRUCT, f.PTR, f.PTR]
    types = [makers[rng.choice(kinds)]() for _ in range(count)]
    # A pointer or modifier to a FUNC is refused (test_a_pointer_to_a_func_is_refused_alike).
    for t in types:
        if t.kind not in spec.QUALIFIER | {f.PTR, f.TYPEDEF}:
            continue
        ref = t.size_or_type
        target = types[ref - first] if ref >= first else base.type_by_id(ref) if base else None
        if target is not None and target.kind == f.FUNC:
            t.size_or_type = 0
    return Btf(types, strings, base)


@pytest.mark.parametrize("name", VMLINUX_BLOBS + MODULE_BLOBS)
@pytest.mark.parametrize("order", ["kind", "name"])
def test_corpus_order_and_bytes_match_the_reference(name, order, pure):
    base = load_cached(corpus_path(BASE_61.name)) if name.startswith("mod-") else None
    path = str(corpus_path(name))
    btf = load_cached(corpus_path(name), BASE_61 if base else None)
    done = accel.order(btf, order == "name")
    assert done is not None
    pure(True)
    assert done == ordered(btf, order)
    blob = reader.btf_bytes(path)
    for dedup in (False, True):
        reference, fast = both_ways(pure, sorted_blob, blob, base, dedup=dedup, order=order)
        assert fast == reference


@pytest.mark.parametrize("seed", range(40))
def test_random_graphs_with_ties_match_the_reference(seed, pure):
    rng = random.Random(seed)
    tied = 0
    for _ in range(10):
        btf = random_btf(rng, rng.randrange(1, 50))
        for order in ("kind", "name"):
            done = accel.order(btf, order == "name")
            pure(True)
            reference = ordered(btf, order)
            pure(False)
            assert done == reference
            tied += not done[1]
            for dedup in (False, True):
                reference, fast = both_ways(pure, sorted_blob, btf, dedup=dedup, order=order)
                assert fast == reference
    assert tied  # the tie-breaking path ran


def _tangled_names(rng: random.Random) -> tuple[StringTable, list[int]]:
    """A string section that the C's name ranks (canon/csrc/labelsort.c) must read as the
    reference does: names sharing 7 to 25 leading bytes (they are sorted 8 bytes at a
    time), proper prefixes of one another, bytes past 0x7F, equal strings at several
    offsets, offsets into the middle of a string, and empty names at offsets other than
    0; enough of them that the radix passes run, not only the insertion sorts."""
    stems = [b"", b"abcdefg", b"abcdefgh", b"abcdefghi", b"abcdefghabcdefgh",
             b"abcdefghabcdefghabcdefgh", b"\xff" * 9, b"x" * 17]
    tails = [b"", b"a", b"\x01", b"\x7f", b"\x80", b"\xff", b"ab", b"abcdefgh", b"\xff\x01"]
    names = [stem + tail for stem in stems for tail in tails]
    rng.shuffle(names)
    data, offsets = bytearray(b"\0"), [0]
    for raw in names + rng.sample(names, 20):  # the repeats: equal strings, other offsets
        offsets.append(len(data))
        if len(raw) > 2 and rng.random() < 0.3:
            offsets.append(len(data) + rng.randrange(1, len(raw)))  # inside the string
        data += raw + b"\0"
        if not raw:
            offsets.append(len(data) - 1)
    offsets.append(len(data) - 1)  # the last name's NUL: an empty name
    return StringTable(bytes(data)), offsets


@pytest.mark.parametrize("seed", range(6))
def test_tangled_names_order_and_key_as_the_reference(seed, pure):
    rng = random.Random(4000 + seed)
    btf = random_btf(rng, 600, table=_tangled_names(rng))
    _keyed_alike(btf)
    for order in ("kind", "name"):
        done = accel.order(btf, order == "name")
        pure(True)
        assert done == ordered(btf, order)
        pure(False)
        for dedup in (False, True):
            reference, fast = both_ways(pure, sorted_blob, btf, dedup=dedup, order=order)
            assert fast == reference


@pytest.mark.parametrize("seed", range(15))
def test_random_split_graphs_over_a_base_match_the_reference(seed, pure):
    """Split BTF: base ids keep their ranks, base strings lend their offsets, and the
    dedup redirects references into the base."""
    rng = random.Random(1000 + seed)
    base = random_btf(rng, 30)
    base = reader.parse(writer.write(base))
    for _ in range(5):
        split = random_btf(rng, rng.randrange(1, 40), base)
        blob = writer.write(split)
        for dedup in (False, True):
            reference, fast = both_ways(pure, sorted_blob, blob, base, dedup=dedup)
            assert fast == reference


def test_packed_types_decode_to_what_the_reader_makes(pure):
    btf = random_btf(random.Random(7), 200)
    blob = writer.write(btf)
    reference, fast = both_ways(pure, reader.parse, blob)
    assert fast.packed is not None and reference.packed is None
    assert len(fast) == len(reference)
    assert fast.types == reference.types


def test_big_endian_blobs_sort_alike(pure):
    btf = random_btf(random.Random(8), 100)
    blob = writer.write(btf, ">")
    reference, fast = both_ways(pure, sorted_blob, blob)
    assert fast == reference and fast[:2] == b"\xeb\x9f"


def test_a_pointer_to_a_func_is_refused_alike(pure):
    strings, offset = StringTable.build(["f"])
    btf = Btf([Type(f.FUNC_PROTO, 0, 0, 0), Type(f.FUNC, offset["f"], 0, 1, 1),
               Type(f.PTR, 0, 0, 2)], strings)
    blob = writer.write(btf)

    def message() -> str:
        with pytest.raises(InputError) as caught:
            canonicalize(reader.parse(blob))
        return str(caught.value)

    reference, fast = both_ways(pure, message)
    assert fast == reference and "refers to FUNC" in fast


def test_graphs_that_are_not_btf_take_the_reference():
    class Graph:
        first_id = 1

    assert accel.order(Graph(), False) is None  # type: ignore[arg-type]


def test_ids_that_no_word_holds_take_the_reference():
    strings, _ = StringTable.build([])
    btf = Btf([Type(f.PTR, 0, 0, 1 << 33)], strings)
    assert accel.order(btf, False) is None


def outcome(blob: bytes, base: Btf | None):
    """What reading and sorting a blob gives: its output bytes or its error message."""
    try:
        return "ok", writer.write(canonicalize(reader.parse(blob, "blob", base)))
    except InputError as e:
        return "error", str(e)


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-be", "handmade-layout"])
def test_damaged_blobs_end_alike(seed_name, pure):
    """Every check the reader makes, the compiled part makes too: a blob it took that the
    reference refuses would fail later, with another message."""
    seed = {"handmade": fuzzing.handmade_seed, "handmade-be": lambda: fuzzing.handmade_seed(">"),
            "handmade-layout": fuzzing.layout_seed}[seed_name]()
    mutants_end_alike(pure, seed, outcome, 400, None)


def mutants_end_alike(pure, seed: fuzzing.Seed, outcome, count: int, *base: object) -> None:
    """`count` mutants of `seed` give the same ("ok", ...) or ("error", message) of
    `outcome(blob, *base)` both ways, and both outcomes occur."""
    rnd = random.Random(seed.name)
    results = {"ok": 0, "error": 0}
    for _ in range(count):
        blob, _names = fuzzing.mutate(seed, rnd)
        reference, fast = both_ways(pure, outcome, blob, *base)
        assert fast == reference
        results[fast[0]] += 1
    assert results["ok"] and results["error"]


def test_damaged_module_blobs_end_alike(pure):
    base = load_cached(corpus_path(BASE_61.name))
    module = corpus_path(MODULE_BLOBS[1])
    seed = fuzzing.split_seed("bridge", module, corpus_path(BASE_61.name), base)
    rnd = random.Random(5)
    for _ in range(60):
        blob, _names = fuzzing.mutate(seed, rnd)
        reference, fast = both_ways(pure, outcome, blob, base)
        assert fast == reference


def test_bad_arguments_are_value_errors():
    module = native.compiled("canonbtf._btf", "order")
    words = array("I", [0, f.INT << 24, 4, 32]).tobytes()
    strings = [(0, b"\0")]
    assert module.check(words, 1, strings) == 1
    for args in [(words[:-1], 1, strings), (words, 0, strings), (words, 1, []),
                 (words, 1, [(5, b"\0")])]:
        with pytest.raises(ValueError):
            module.check(*args)
    with pytest.raises(ValueError):
        module.order(words, 1, strings, False, array("I", [1, 1]))
    with pytest.raises(ValueError):
        module.order(words, 1, strings, False, None, array("I", [0, 9]))
    with pytest.raises(ValueError):
        module.renumber(words, 1, strings, array("I", [2]))


def test_decoded_fields_have_the_readers_shapes(pure):
    """Not only equal: the same Python types (a tuple for no items, a list otherwise)."""
    blob = writer.write(random_btf(random.Random(9), 300))
    reference, fast = both_ways(pure, reader.parse, blob)

    def shapes(btf: Btf) -> list:
        return [(type(t.extra), type(t.items), [type(i) for i in t.items]) for t in btf.types]

    assert shapes(fast) == shapes(reference)


ODD_RECORDS = [
    Type(f.INT, 0, 0, 4, 1 << 32),  # extra is masked: fine
    Type(f.INT, 0, 0, 4, -1),
    Type(f.PTR, 0, 2, 1),  # kind_flag 2: no word holds it
    Type(f.PTR, 0, 0, 1 << 32),
    Type(f.PTR, -1, 0, 1),
    Type(200, 0, 0, 0),  # kind bits spill into kind_flag's: the writer lets it through
    Type(f.STRUCT, 0, 0, 4, 0, [(0, 1)]),  # a short member: written as it is
    Type(f.STRUCT, 0, 0, 4, 0, [(0, 1, -1)]),
    Type(f.ENUM64, 0, 0, 8, 0, [(0, (1 << 64) - 1)]),
    Type(f.ENUM64, 0, 0, 8, 0, [(0, 1 << 64)]),
    Type(f.ENUM64, 0, 0, 8, 0, [(0, -1)]),
    Type(f.ARRAY, 0, 0, 0, (1, 1)),
    Type(f.ARRAY, 0, 0, 0, 7),
    Type(f.FUNC, 0, 0, 1, 1 << 24),
    Type(f.FUNC, 0, 0, 1, 1 << 32),
    Type(f.FUNC, 0, 0, 1, 1, [(1, 2)]),
    Type(f.INT, 0, 0, 4, (1, 2)),
]


@pytest.mark.parametrize("odd", ODD_RECORDS, ids=repr)
def test_packing_matches_the_writer_even_on_odd_records(odd, pure):
    strings, _ = StringTable.build([])
    btf = Btf([Type(f.INT, 0, 0, 4, 32), odd], strings)

    def packed():
        try:
            return writer.type_words(btf).tolist()
        except ValueError as e:
            return str(e)

    reference, fast = both_ways(pure, packed)
    assert fast == reference


def test_packing_matches_the_writer_on_random_types(pure):
    btf = random_btf(random.Random(10), 500)
    reference, fast = both_ways(pure, writer.type_words, btf)
    assert fast == reference


@pytest.mark.parametrize("seed", range(5))
def test_labels_are_the_references_to_the_repr(seed, pure):
    """The dedup keys its classes by labels (and a base cache by their repr)."""
    from canonbtf.canon.dedup import all_labels

    rng = random.Random(2000 + seed)
    base = reader.parse(writer.write(random_btf(rng, 80)))
    split = writer.write(random_btf(rng, 80, base))
    reference, fast = both_ways(pure, lambda: repr(all_labels(reader.parse(split, base=base))))
    assert fast == reference


@pytest.mark.parametrize("packed", [True, False])
def test_a_pointer_to_a_base_func_is_refused_alike(packed, pure):
    """The FUNC is in the base: its kind comes from the base, packed or decoded."""
    strings, offset = StringTable.build(["f"])
    base_blob = writer.write(Btf([Type(f.FUNC_PROTO, 0, 0, 0),
                                  Type(f.FUNC, offset["f"], 0, 1, 1)], strings))
    split_strings, _ = StringTable.build([], len(strings.data()))

    def message() -> str:
        base = reader.parse(base_blob)
        split = Btf([Type(f.PTR, 0, 0, 2)], split_strings, base)
        if packed:
            split = reader.parse(writer.write(split), base=base)
        with pytest.raises(InputError) as caught:
            canonicalize(split)
        return str(caught.value)

    reference, fast = both_ways(pure, message)
    assert fast == reference and "refers to FUNC 'f' (type 2)" in fast


def _same_partition(a: list, b: list) -> bool:
    """Whether two labellings group the same ids (None only where the other has None)."""
    pairs = {}
    for x, y in zip(a, b):
        if (x is None) != (y is None) or pairs.setdefault(x, y) != y:
            return False
    return len(set(pairs.values())) == len(pairs)


def _keyed_alike(btf: Btf) -> None:
    """accel.keyed_types gives what dedup._reference_inputs computes from the Types
    (over a base: from the base's index, as a module's dedup does): the same key numbers,
    tokens grouping the same ids, flags, kinds and edges."""
    from canonbtf.canon.dedup import BaseIndex, _reference_inputs

    fast = accel.keyed_types(btf)
    assert fast is not None
    index = None if btf.base is None else BaseIndex.of(btf.base)
    reference = _reference_inputs(btf, None, index)
    ids = list(range(1, btf.last_id + 1))
    assert list(fast.keys) == list(reference.keys)
    # The compiled part's tokens are numbers from 1, 0 for none (the reference's None).
    assert all(isinstance(token, int) for token in fast.tokens)
    assert _same_partition([token or None for token in fast.tokens], list(reference.tokens))
    assert [bool(x) for x in fast.declares] == [bool(x) for x in reference.declares]
    assert list(fast.kinds) == list(reference.kinds)
    reference_edges = reference.edges_of(ids)
    assert {n: tuple(e) for n, e in fast.edges_of(ids).items()} == {
        n: tuple(reference_edges[n]) for n in ids}
    _refined_alike(btf, fast, reference)
    if btf.base is not None:
        _kept_alike(btf, fast, ids)


def _refined_alike(btf: Btf, fast, reference) -> None:
    """dedup._refined on the compiled part's u32s (canon/csrc/refined.c) gives the ranks,
    stand-ins and classes the reference's Partition gives, on either's inputs."""
    from canonbtf.canon.dedup import _refined
    from canonbtf.canon.twins import declared_twins

    made = _refined(btf, fast)
    assert fast.refined is not None and isinstance(made.rank, memoryview)
    for inputs in (fast._replace(refined=None), reference._replace(refined=None)):
        expected = _refined(btf, inputs)
        assert isinstance(expected.rank, list)
        assert list(made.rank) == expected.rank
        assert list(made.stands_for) == expected.stands_for
        assert list(made.classes) == expected.classes
        assert set(made.candidates) <= set(expected.candidates)
        assert declared_twins(*_twins_arguments(made)) == declared_twins(
            *_twins_arguments(expected))


def _twins_arguments(r) -> tuple:
    return (r.candidates, r.keys, r.rank, r.edges, r.tokens, r.declares, r.stands_for)


def _kept_alike(btf: Btf, fast, ids: list[int]) -> None:
    """Over a base, the keys from the base's kept keys (cachefiles.kept_keys_path: made
    cold, read warm) are the numbers of the base and module keyed as one section
    (CANONBTF_CACHE=0), and each way refines as the reference does."""
    import os
    import tempfile

    from canonbtf.canon import basecache

    saved = {name: os.environ.get(name) for name in ("XDG_CACHE_HOME", basecache.CACHE_ENV)}
    ways = []
    try:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["XDG_CACHE_HOME"] = cache
            os.environ.pop(basecache.CACHE_ENV, None)
            ways += [accel.keyed_types(btf), accel.keyed_types(btf)]  # cold, then warm
            assert [p.name[:5] for p in (Path(cache) / "canonbtf").iterdir()] == ["keys-"]
            os.environ[basecache.CACHE_ENV] = "0"
            ways.append(accel.keyed_types(btf))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    for way in ways:
        assert list(way.keys) == list(fast.keys) and list(way.tokens) == list(fast.tokens)
        assert bytes(way.declares) == bytes(fast.declares)
        assert bytes(way.kinds) == bytes(fast.kinds)
        assert way.edges_of(ids) == fast.edges_of(ids)
        _refined_alike(btf, way, fast)  # over the base's view, or base and module as one


@pytest.mark.parametrize("seed", range(20))
def test_dedup_keys_match_the_reference_on_random_graphs(seed):
    rng = random.Random(3000 + seed)
    for _ in range(10):
        _keyed_alike(random_btf(rng, rng.randrange(1, 60)))


@pytest.mark.parametrize("ambiguous", [False, True])
def test_dedup_refinement_matches_the_reference_on_declared_twins(ambiguous):
    """test_dedup's declared copies (twins.py merges one of them): the compiled
    refinement's candidates give the reference's twins."""
    from canonbtf.canon.dedup import _refined
    from canonbtf.canon.twins import declared_twins

    from .test_dedup import two_definitions

    btf = two_definitions(ambiguous)
    _keyed_alike(btf)
    made = _refined(btf, accel.keyed_types(btf))
    assert bool(declared_twins(*_twins_arguments(made))) != ambiguous


@pytest.mark.parametrize("second_layout", [False, True])
def test_dedup_refinement_resettles_a_declaration_outside_the_shared_ids(second_layout):
    """test_encode's units that declare each other: FWD A shares its key with no one, yet
    what reads it must split when A's two definitions do (refine.c's referrers_of_all)."""
    from .test_encode import mutual_declarations

    _keyed_alike(mutual_declarations(second_layout))


@pytest.mark.parametrize("name", VMLINUX_BLOBS)
def test_dedup_keys_match_the_reference_on_kernels(name):
    _keyed_alike(load_cached(corpus_path(name)))


@pytest.mark.parametrize("seed", range(20))
def test_dedup_keys_over_a_base_continue_its_index(seed):
    """A module's keys continue its base's as BaseIndex numbers them: base and module
    read as one section, the base's tokens and keys numbered first."""
    rng = random.Random(4000 + seed)
    for _ in range(5):
        base = reader.parse(writer.write(random_btf(rng, rng.randrange(1, 40))))
        module = reader.parse(writer.write(random_btf(rng, rng.randrange(1, 40), base)),
                              base=base)
        _keyed_alike(module)


def test_dedup_keys_over_a_base_of_a_base_are_the_references():
    """Split BTF over split BTF is not one section the compiled part reads."""
    rng = random.Random(5)
    base = reader.parse(writer.write(random_btf(rng, 20)))
    middle = reader.parse(writer.write(random_btf(rng, 20, base)), base=base)
    assert accel.keyed_types(random_btf(rng, 20, middle)) is None


@pytest.mark.parametrize("name", MODULE_BLOBS)
def test_dedup_keys_of_a_module_match_the_reference(name):
    base = load_cached(corpus_path(VMLINUX_BLOBS[0]))
    _keyed_alike(reader.parse(corpus_path(name).read_bytes(), base=base))


@pytest.mark.parametrize("kind", [f.FUNC, f.STRUCT, f.ENUM, f.DATASEC])
def test_heads_are_what_the_types_hold(kind):
    rng = random.Random(kind)
    base = reader.parse(writer.write(random_btf(rng, 30)))
    btf = reader.parse(writer.write(random_btf(rng, 200, base)), base=base)
    expected = [(type_id, t.name_off, t.vlen, t.size_or_type) for type_id, t in btf.own()
                if t.kind == kind]
    fresh = reader.parse(writer.write(btf), base=base)
    assert accel.heads(fresh, kind) == expected
    assert expected  # the generator makes every kind
    named = {"a", "ab"}
    assert accel.heads(fresh, kind, named) == [
        head for head in expected if btf.name(head[1]) in named]
    # Names passed over by their first two bytes (heads' filter): every third name of the
    # kind, the empty one, one byte long, and absent ones sharing present ones' starts.
    present = sorted({btf.name(head[1]) for head in expected})
    for named in ({"", "b"}, set(present[::3]), {name + "x" for name in present},
                  {name[:2] for name in present}, {name[:1] for name in present}):
        assert accel.heads(fresh, kind, named) == [
            head for head in expected if btf.name(head[1]) in named], sorted(named)


@pytest.mark.parametrize("seed", range(5))
def test_a_base_type_decoded_alone_is_the_readers(seed):
    """accel.base_type (a module's function checks read a few of vmlinux's types):
    every base id gives the Type the whole base decodes to, the base stays packed, and
    the module's own ids, void and a decoded base are left to type_by_id."""
    rng = random.Random(8000 + seed)
    blob = writer.write(random_btf(rng, 60))
    base = reader.parse(blob)  # the generator reads its Types: the module gets a fresh one
    module = reader.parse(writer.write(random_btf(rng, 30, base)), base=reader.parse(blob))
    alone = [accel.base_type(module, type_id) for type_id in range(1, base.last_id + 1)]
    assert module.base.packed is not None
    assert alone == base.types
    assert accel.base_type(module, 0) is None
    assert accel.base_type(module, module.first_id) is None
    assert module.base.types  # decoded: nothing to save, type_by_id reads it
    assert accel.base_type(module, 1) is None


@pytest.mark.parametrize("seed", range(3))
def test_a_view_stands_for_its_words(seed):
    """_btf.view: a section indexed once, given in place of its words, gives what the
    words give (decode, heads, kinds); it is made once per packed section; a first id
    that is not its own, or words the reader would not take, are refused as before."""
    module = native.compiled("canonbtf._btf", "view")
    if module is None:
        pytest.skip("the compiled part is not built")
    rng = random.Random(7200 + seed)
    btf = reader.parse(writer.write(random_btf(rng, 200)))
    words, sections = btf.packed.words, btf.string_sections()
    view = module.view(words, 1, sections)
    ids = array("I", range(1, len(btf) + 1, 3))
    for args in ((Type, ids), (Type,)):
        assert module.decode(view, 1, sections, *args) == module.decode(words, 1, sections, *args)
    assert module.heads(view, 1, sections, f.STRUCT) == module.heads(words, 1, sections, f.STRUCT)
    assert module.kinds(view, 1, sections) == module.kinds(words, 1, sections)
    with pytest.raises(ValueError, match="not the view's"):
        module.kinds(view, 2, sections)
    with pytest.raises(ValueError):
        module.view(words[:-4], 1, sections)
    assert accel.heads(btf, f.STRUCT) == module.heads(words, 1, sections, f.STRUCT)
    kept = btf.packed.view[0]
    assert accel.own_kinds(btf) and btf.packed.view[0] is kept  # made once


def test_a_modules_dedup_leaves_its_base_packed():
    """The base's part of a module's dedup comes from its index (BaseIndex): flags and
    kinds included, so the base's 95 k Types are never made."""
    from canonbtf.canon import canonicalize_checked
    from canonbtf.canon.dedup import BaseIndex

    base = reader.parse(corpus_path(VMLINUX_BLOBS[0]).read_bytes())
    index = BaseIndex.of(reader.parse(corpus_path(VMLINUX_BLOBS[0]).read_bytes()))
    module = reader.parse(corpus_path(MODULE_BLOBS[0]).read_bytes(), base=base)
    canonicalize_checked(module, dedup=True, index=index)
    assert base.packed is not None and base._types is None


@pytest.mark.parametrize("seed", range(10))
def test_sharing_is_the_references(seed, monkeypatch):
    """dedup._sharing by the compiled part: the same ids as the Python count, also with
    values past `last`, large values (left to Python) and nothing to count."""
    from canonbtf.canon.dedup import _sharing

    rng = random.Random(7000 + seed)
    count = rng.randrange(0, 300)
    spread = rng.choice([2, 10, count + 1, 5 * count + 50])
    values = [rng.randrange(0, spread) for _ in range(count + 1)]
    last = max(0, count - rng.randrange(0, 3))
    fast = accel.sharing(values, last)
    monkeypatch.setenv(native.PURE_ENV, "1")
    reference = _sharing(values, last)
    if last and max(values[1:last + 1]) > 4 * (last + 1) + 16:
        assert fast is None  # a table that large is not worth it
    else:
        assert fast == reference
    assert accel.sharing([0, 2**33], 1) is None  # no u32: counted in Python


@pytest.mark.parametrize("seed", range(10))
def test_named_groups_are_the_references(seed, monkeypatch):
    """dedup._named_groups with the compiled part's lookup (accel.members) and bytes of
    flags: the same declarations and definitions as the Python scan."""
    from canonbtf.canon.dedup import _named_groups

    rng = random.Random(7100 + seed)
    count = rng.randrange(1, 400)
    spread = rng.choice([3, 30, count + 1, 5 * count + 50])
    tokens = array("I", [0] + [rng.randrange(0, spread) for _ in range(count)])
    declares = bytes([0] + [rng.random() < 0.3 for _ in range(count)])
    last = count
    fast = _named_groups(tokens, declares, last)
    # The compiled lookup ran unless a value is too large for its table (then Python's).
    too_large = max(tokens) > 4 * len(tokens) + 16
    assert (accel.members(tokens, [1], last) is None) == too_large
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert _named_groups(list(tokens), list(declares), last) == fast


def test_module_names_take_the_bases_lowest_whole_string(pure):
    """A split BTF's names lend the base's offsets: the lowest offset where the name is a
    whole string (not a suffix of a longer one), else the name joins the module's own
    section; the compiled part looks the module's names up in one scan of the base's."""
    base_strings = StringTable(b"\0xab\0b\0ab\0zz\0b\0", 0)  # "b" at 5 and 13, "ab" at 7
    base = Btf([Type(f.INT, off, 0, 4, 32) for off in (1, 5, 7, 10, 13)], base_strings)
    base = reader.parse(writer.write(base))
    own, offsets = StringTable.build(["b", "ab", "q", "x"], base.strings.end)
    split = Btf([Type(f.STRUCT, offsets[name], 0, 4, 0, [(offsets["b"], 1, 0)])
                 for name in ("ab", "q", "x")] + [Type(f.FWD, offsets["b"], 0)], own, base)
    blob = writer.write(split)
    reference, fast = both_ways(pure, sorted_blob, blob, base)
    assert fast == reference
    out = reader.parse(fast, base=base)
    names = {out.name(t.name_off): t.name_off for t in out.types}
    assert names["b"] == 5 and names["ab"] == 7  # lowest whole strings of the base
    assert names["q"] >= base.strings.end and names["x"] >= base.strings.end
    assert {out.name(t.items[0][0]) for t in out.types if t.kind == f.STRUCT} == {"b"}
