"""The C header's compiled parts (canonbtf/emit/c/csrc/cdump.c) against their Python reference.

The reference is emit/c/shape.py (what C can spell), emit/c/spell.py, btf/declarator.py and
btf/sizes.py (the spelling of each definition) and emit/c/order.py (the placement).
Judges: the same header, byte for byte, on every corpus vmlinux; the same header or the
same error message on random BTF of every kind (by-value DAGs with pointers anywhere, few
names so that `___N` suffixes abound, bit-fields and padding, enums of every size); the
same outcome on damaged blobs; and the compiled shape check never passing what the
reference refuses.
"""

from __future__ import annotations

import io
import random

import pytest

from canonbtf import native
from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.model import Btf, Type
from canonbtf.btf.sizes import TypeSizes, pointer_size
from canonbtf.btf.strings import StringTable
from canonbtf.emit.c import header as c_header
from canonbtf.emit.c.accel import CompiledSpelling
from canonbtf.emit.c.shape import c_shape_problem
from canonbtf.errors import InputError

from . import fuzzing
from .conftest import VMLINUX_BLOBS, both_ways, corpus_path
from .test_dump_c import BUILTIN_NAMED_KINDS, builtin_named_btf

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "c_view") is None,
                                reason="canonbtf._btf is not built (no compiler, PyPy, or "
                                       "CANONBTF_PURE set)")


def dump(make) -> tuple[str, str]:
    """("ok", header) or ("error", message) of `make()`'s BTF: a new Btf each time, so
    that no header cached by the other path is reused."""
    btf = make() if callable(make) else reader.parse(make, "blob")
    out = io.StringIO()
    try:
        c_header.dump_c(btf, out)
    except InputError as e:
        return "error", str(e)
    return "ok", out.getvalue()


@pytest.mark.parametrize("name", VMLINUX_BLOBS)
def test_corpus_headers_match_the_reference(name, pure):  # noqa: F811
    path = str(corpus_path(name))
    btf = reader.load_with_base(path, None)
    compiled = CompiledSpelling.of(btf)
    assert compiled is not None and compiled.shape_ok(8)
    assert compiled.definitions(8) is not None
    reference, fast = both_ways(pure, dump, lambda: reader.load_with_base(path, None))
    assert fast[0] == "ok"
    assert fast == reference


def random_c_btf(rng: random.Random, count: int) -> Btf:
    """Types a header spells: what is held by value refers to earlier ids only (so most
    are spellable), pointers and prototypes anywhere; now and then a loop or a nameless
    typedef, which both paths must refuse with the same message."""
    names = ["", "", "a", "b", "ab", "__builtin_va_list", "__gnuc_va_list", "long int",
             "bpf_kfunc", "bpf_fastcall"]
    strings, offset = StringTable.build([n for n in names if n])
    last = count

    def name() -> int:
        return offset[rng.choice(names)]

    def earlier(me: int) -> int:
        if rng.random() < 0.01:
            return rng.randrange(0, last + 1)  # maybe a loop
        return rng.randrange(0, me)

    def anywhere() -> int:
        return rng.randrange(0, last + 1)

    def member(me: int, kflag: int) -> tuple[int, int, int]:
        bits = rng.choice([0, 0, 1, 3, 8, 17, 33]) if kflag else 0
        return name(), earlier(me), (bits << 24) + rng.choice([0, 8, 32, 64, 96, 200, 1024])

    def maker(kind: int, me: int) -> Type:
        if kind in (f.STRUCT, f.UNION):
            kflag = rng.randrange(2)
            return Type(kind, name(), kflag, rng.choice([0, 1, 4, 8, 12, 16, 24, 40, 200]), 0,
                        [member(me, kflag) for _ in range(rng.randrange(5))])
        if kind in (f.ENUM, f.ENUM64):
            values = [0, 1, 0x7FFFFFFF, 0xFFFFFFFF] + ([1 << 40, 1 << 63, (1 << 64) - 1]
                                                       if kind == f.ENUM64 else [])
            return Type(kind, name(), rng.randrange(2), rng.choice([1, 2, 4, 8]), 0,
                        [(name(), rng.choice(values)) for _ in range(rng.randrange(4))])
        if kind == f.INT:
            return Type(f.INT, name(), 0, rng.choice([1, 2, 4, 8, 16]), 0)
        if kind == f.ARRAY:
            return Type(f.ARRAY, 0, 0, 0, (earlier(me), 1, rng.randrange(4)))
        if kind == f.FUNC_PROTO:
            return Type(f.FUNC_PROTO, 0, 0, anywhere(), 0,
                        [(name(), anywhere()) for _ in range(rng.randrange(4))])
        if kind == f.FWD:
            return Type(f.FWD, name() or offset["a"], rng.randrange(2))
        if kind == f.TYPEDEF:
            return Type(f.TYPEDEF, name() or (offset["b"] if rng.random() < 0.97 else 0), 0,
                        earlier(me))
        if kind == f.PTR:
            return Type(f.PTR, 0, 0, anywhere())
        if kind == f.TYPE_TAG:
            return Type(f.TYPE_TAG, name() or offset["a"], rng.randrange(2), earlier(me))
        if kind == f.FLOAT:
            return Type(f.FLOAT, name(), 0, rng.choice([4, 8]))
        if kind == f.FUNC:
            return Type(f.FUNC, name() or offset["a"], 0, anywhere(), 0)
        if kind == f.DECL_TAG:  # mostly kfunc tags of whole functions
            tag = offset[rng.choice(["bpf_kfunc", "bpf_kfunc", "bpf_fastcall", "a"])]
            return Type(f.DECL_TAG, tag, rng.random() < 0.1, anywhere(),
                        -1 if rng.random() < 0.8 else rng.randrange(3))
        return Type(kind, 0, 0, earlier(me))  # CONST, VOLATILE, RESTRICT

    kinds = [f.INT, f.PTR, f.PTR, f.ARRAY, f.STRUCT, f.STRUCT, f.UNION, f.ENUM, f.ENUM64,
             f.FWD, f.TYPEDEF, f.TYPEDEF, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG,
             f.FUNC_PROTO, f.FLOAT, f.FUNC, f.DECL_TAG]
    types = [maker(rng.choice(kinds), me) for me in range(1, count + 1)]
    return Btf(types, strings)


@pytest.mark.parametrize("seed", range(120))
def test_random_btf_gives_the_references_header_or_message(seed, pure):  # noqa: F811
    count = random.Random(seed).choice([3, 10, 40, 120])
    reference, fast = both_ways(pure, dump, lambda: random_c_btf(random.Random(seed), count))
    assert fast == reference



@pytest.mark.parametrize("kind", BUILTIN_NAMED_KINDS)
def test_a_type_named_builtin_va_list_gives_the_references_header(kind, pure):  # noqa: F811
    reference, fast = both_ways(pure, dump, lambda: builtin_named_btf(kind))
    assert fast == reference
    assert fast[0] == "ok"


@pytest.mark.parametrize("seed", range(300))
def test_the_shape_check_never_passes_what_the_reference_refuses(seed):
    btf = random_c_btf(random.Random(seed), random.Random(seed).choice([5, 30, 100]))
    compiled = CompiledSpelling.of(btf)
    if compiled is None:
        return
    sizes = TypeSizes(btf.all_types(), pointer_size(btf))
    if compiled.shape_ok(sizes.ptr_size):
        assert c_shape_problem(btf, None, sizes) is None


def test_deep_nesting_is_left_to_the_reference(pure):  # noqa: F811
    """Past the compiled check's depth the reference decides (and refuses past 150)."""
    for depth in (90, 120, 160):
        def make(depth: int = depth) -> Btf:
            strings, offset = StringTable.build(["int", "s"])
            types = [Type(f.INT, offset["int"], 0, 4, 0x01000020)]
            for i in range(depth):
                types.append(Type(f.STRUCT, offset["s"] if i % 2 else 0, 0, 4, 0,
                                  [(0, len(types), 0)]))
            return Btf(types, strings)
        reference, fast = both_ways(pure, dump, make)
        assert fast == reference
        assert fast[0] == ("error" if depth > 150 else "ok")


def random_c_seed() -> fuzzing.Seed:
    """Random spellable types (with kfuncs) as a blob to damage: reaches more of cdump.c
    than the handmade types."""
    for seed in range(100):
        blob = writer.write(random_c_btf(random.Random(seed), 60))
        result, header = dump(blob)
        if result == "ok" and "BPF kfuncs" in header:
            return fuzzing.Seed("random-c", blob)
    raise AssertionError("no spellable random BTF with kfuncs")


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-layout", "random-c"])
def test_damaged_blobs_dump_alike(seed_name, pure):  # noqa: F811
    seed = {"handmade": fuzzing.handmade_seed, "handmade-layout": fuzzing.layout_seed,
            "random-c": random_c_seed}[seed_name]()
    rnd = random.Random(seed_name)
    results = {"ok": 0, "error": 0}
    for _ in range(300):
        blob, _names = fuzzing.mutate(seed, rnd)
        try:
            reader.parse(blob, "blob")
        except InputError:
            continue
        reference, fast = both_ways(pure, dump, blob)
        assert fast == reference
        results[fast[0]] += 1
    assert results["ok"]


@pytest.mark.parametrize("seed", range(60))
def test_facts_are_the_references(seed):
    """c_facts (pointer size, info bytes, names, FUNC tags) = c.type_facts of the Types."""
    rng = random.Random(seed)
    btf = random_c_btf(rng, rng.choice([3, 20, 80]))
    blob = writer.write(btf)
    fast = CompiledSpelling.of(reader.parse(blob, "blob")).facts()
    assert fast == c_header.type_facts(reader.parse(blob, "blob"), None, btf.strings.get)


@pytest.mark.parametrize("name", VMLINUX_BLOBS)
def test_corpus_facts_are_the_references(name):
    path = str(corpus_path(name))
    fast = CompiledSpelling.of(reader.load_with_base(path, None)).facts()
    btf = reader.load_with_base(path, None)
    assert fast == c_header.type_facts(btf, None, btf.strings.lookup)
    assert fast[0] == 8


def test_bad_arguments_are_value_errors():
    module = native.compiled("canonbtf._btf", "c_view")
    strings, offset = StringTable.build(["int"])
    btf = Btf([Type(f.INT, offset["int"], 0, 4, 32)], strings)
    words = writer.section_words(btf)
    sections = btf.string_sections()
    view = module.c_view(words, 1, sections)
    split = module.c_view(words, 2, [(0, b"\0"), (1, strings.data()[1:])])
    with pytest.raises(ValueError):
        module.c_definitions(split, 8)  # not a BTF without a base
    with pytest.raises(ValueError):
        module.c_facts(split)
    with pytest.raises(ValueError):
        module.c_view(words[:-4], 1, sections)  # not a type section the reader takes
    with pytest.raises(ValueError):
        module.c_shape_ok(view, 3)  # no such pointer size
    with pytest.raises(ValueError):
        module.c_render(view, 8, [5], {}, {})  # not an own id
    with pytest.raises(ValueError):
        module.c_render(view, 8, [1], {}, {})  # not a definition
    with pytest.raises(ValueError):
        module.c_placement(view, 8, [1, 1], {1: []}, {1: 0})  # twice
    with pytest.raises(ValueError):
        module.c_placement(view, 8, [1], {}, {})  # no mentions given
    with pytest.raises(ValueError):
        module.c_facts(words)  # not a view


def test_a_view_reads_bytes_in_place_and_copies_the_rest():
    """A view holds the words of a bytes object (immutable) and copies other buffers, so
    a bytearray changed after the view was made does not change what it reads."""
    module = native.compiled("canonbtf._btf", "c_view")
    btf = random_c_btf(random.Random(3), 40)
    words = writer.section_words(btf)
    sections = btf.string_sections()
    expected = module.c_facts(module.c_view(words, 1, sections))
    mutable = bytearray(words)
    view = module.c_view(mutable, 1, sections)
    mutable[:] = bytes(len(mutable))
    assert module.c_facts(view) == expected
