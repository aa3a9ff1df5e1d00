"""diff's compiled plan (canonbtf/diff/csrc/diffkeys.c) and compiled text report
(diff/csrc/diffreport.c, difffacts.c, diffwrite.c) against the reference, which describes
every root: the same report, text and JSON, byte for byte.

The plan leaves out names with one root on each side whose keys are equal and does not
spell roots only added or removed, so what is judged is that it never leaves out or
leaves unspelled what would have shown: on the corpus kernels both ways, renumbered,
with dedup leftovers (duplicate names), split BTF over a base, random BTF with loops,
few names (duplicates everywhere) and every kind a root can be, and damaged blobs.
"""

from __future__ import annotations

import io
import random
from array import array

import pytest

from canonbtf import native
from canonbtf.btf import format as f
from canonbtf.btf import reader
from canonbtf.btf.model import Btf, Type
from canonbtf.canon.dedup import equivalence_classes
from canonbtf.canon.order import canonical_order
from canonbtf.diff import compiled_report, diff_btfs
from canonbtf.diff import pairing as diff_pairing
from canonbtf.diff.pairing import Lookup
from canonbtf.diff.plan import _chain_words
from canonbtf.diff.text import render_json, render_text
from canonbtf.errors import InputError

from . import fuzzing
from .conftest import both_ways, corpus_path, load_cached, resolve_input
from .leftovers import with_leftovers
from .shuffle import shuffle
from .test_compiled_dump import random_c_btf

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "diff_plan") is None,
                                reason="canonbtf._btf is not built (no compiler, PyPy, or "
                                       "CANONBTF_PURE set)")

OLD = "vmlinux-6.1.0-56-cloud-amd64.btf"
NEW = "vmlinux-6.12.113-cloud-amd64.btf"


def report(make_old, make_new) -> tuple[str, str]:
    """The text and JSON reports of the diff of two freshly made BTFs (so that nothing one
    path decoded or packed is reused by the other), as `canonbtf diff` makes them: by the
    compiled report (diff/csrc/diffreport.c) where it takes the pair, else rendered."""
    result = diff_btfs(make_old(), make_new())
    reports = []
    for render, json in ((render_text, False), (render_json, True)):
        made = compiled_report(make_old(), make_new(), json)
        if made is None:
            out = io.StringIO()
            render(result, out)
            reports.append(out.getvalue())
        else:
            assert made[1] == len(result.changes)
            reports.append(made[0].decode("latin-1"))
    return reports[0], reports[1]


def loader(name: str, transform=None):
    path, base = resolve_input(name)

    def make() -> Btf:
        btf = reader.load_with_base(str(path), str(base) if base else None)
        return transform(btf) if transform else btf
    return make


@pytest.mark.parametrize("old,new", [(OLD, NEW), (NEW, OLD)])
def test_kernels_both_ways(old, new, pure):  # noqa: F811
    reference, fast = both_ways(pure, report, loader(old), loader(new))
    assert fast[0].count("\n") > 30000
    assert fast == reference
    assert compiled_report(loader(old)(), loader(new)()) is not None


def test_renumbered_and_with_leftovers(pure):  # noqa: F811
    old = loader(OLD, lambda btf: with_leftovers(btf, 5))
    new = loader(NEW, lambda btf: shuffle(btf, 3))
    reference, fast = both_ways(pure, report, old, new)
    assert "#2" in fast[0]
    assert fast == reference


def test_a_renumbered_copy_reports_nothing(pure):  # noqa: F811
    reference, fast = both_ways(pure, report, loader(NEW), loader(NEW, lambda b: shuffle(b, 7)))
    assert fast == reference == ("", reference[1])


@pytest.mark.parametrize("old,new", [("mod-6.1.0-56-cloud-virtio_net.btf",
                                      "mod-6.1.0-56-cloud-bridge.btf"),
                                     ("mod-6.1.0-56-cloud-xfs.btf",
                                      "mod-6.1.0-56-cloud-nf_tables.btf")])
def test_split_btf_pairs(old, new, pure):  # noqa: F811
    corpus_path(old)
    reference, fast = both_ways(pure, report, loader(old), loader(new))
    assert fast[0] and fast == reference


def with_roots(btf: Btf, rng: random.Random) -> Btf:
    """`btf` with functions, variables, a datasec and decl tags on random types appended:
    the root kinds random_c_btf does not make."""
    types = list(btf.types)
    count = len(types)
    names = [btf.names(t.name_off) for t in types if t.name_off]
    offsets = {btf.names(t.name_off): t.name_off for t in types if t.name_off}
    extra = []
    for _ in range(rng.randrange(1, 8)):
        name = offsets[rng.choice(names)] if names else 0
        target = rng.randrange(0, count + 1)
        kind = rng.choice([f.FUNC, f.FUNC, f.VAR, f.DECL_TAG])
        if kind == f.FUNC:
            extra.append(Type(f.FUNC, name, 0, target, rng.randrange(3)))
        elif kind == f.VAR:
            extra.append(Type(f.VAR, name, 0, target, rng.randrange(2)))
        else:
            extra.append(Type(f.DECL_TAG, name, 0, target, rng.choice([-1, 0, 1])))
    vars_ = [count + 1 + n for n, t in enumerate(extra) if t.kind == f.VAR]
    if vars_:
        extra.append(Type(f.DATASEC, offsets.get("a", 0), 0, 64, 0,
                          [(v, 8 * n, 8) for n, v in enumerate(vars_)]))
    return Btf(types + extra, btf.strings)


def changed(btf: Btf, rng: random.Random, seed: int) -> Btf:
    """`btf` with a few types swapped for those of another random BTF of its size."""
    other = random_c_btf(random.Random(seed + 10_000), len(btf.types))
    types = list(btf.types)
    for _ in range(rng.randrange(0, 4)):
        i = rng.randrange(len(other.types))
        types[i] = other.types[i]
    return Btf(types, btf.strings)


@pytest.mark.parametrize("seed", range(150))
def test_random_pairs(seed, pure):  # noqa: F811
    rng = random.Random(seed)
    count = rng.choice([3, 10, 40, 120])

    def old() -> Btf:
        return with_roots(random_c_btf(random.Random(seed), count), random.Random(seed))

    def new() -> Btf:
        return changed(old(), random.Random(seed + 1), seed)
    reference, fast = both_ways(pure, report, old, new)
    assert fast == reference


@pytest.mark.parametrize("seed", range(60))
def test_damaged_blobs(seed, pure):  # noqa: F811
    source = fuzzing.handmade_seed()
    blob, _names = fuzzing.mutate(source, random.Random(seed))
    try:
        reader.parse(blob, "damaged")
    except InputError:
        return
    for old, new in ((source.blob, blob), (blob, source.blob)):
        reference, fast = both_ways(pure, report, lambda b=old: reader.parse(b, "old"),
                                    lambda b=new: reader.parse(b, "new"))
        assert fast == reference


def test_loops_differing_only_where_they_close(pure):  # noqa: F811
    """`typedef t` leads into a loop of pointers and a prototype that closes at the
    prototype on one side and at the pointer before it on the other: records alike, only
    the edge closing the loop differs, so keys must not be trusted through a loop."""
    from canonbtf.btf.strings import StringTable

    strings, offset = StringTable.build(["int", "t"])

    def make(back: int):
        return lambda: Btf([Type(f.INT, offset["int"], 0, 4, 32 | f.INT_SIGNED << 24),
                            Type(f.TYPEDEF, offset["t"], 0, 3), Type(f.PTR, 0, 0, 4),
                            Type(f.FUNC_PROTO, 0, 0, 1, 0, [(0, 5)]), Type(f.PTR, 0, 0, back)],
                           strings)
    reference, fast = both_ways(pure, report, make(4), make(3))
    assert "typedef t" in fast[0]
    assert fast == reference


def test_added_roots_whose_name_reads_empty_are_spelled(pure):  # noqa: F811
    """A name offset at a NUL (split BTF over the wrong base reads such names) makes a
    named root shown as anonymous, by its first enumerators: its facts are read even
    when it is only added."""
    from canonbtf.btf.strings import StringTable

    strings, offset = StringTable.build(["int", "red", "green"])
    empty = offset["int"] + len("int")   # the NUL ending "int"

    def make(enum: bool):
        types = [Type(f.INT, offset["int"], 0, 4, 32 | f.INT_SIGNED << 24)]
        if enum:
            types.append(Type(f.ENUM, empty, 0, 4, 0,
                              [(offset["red"], 0), (offset["green"], 1)]))
        return lambda: Btf(types, strings)
    reference, fast = both_ways(pure, report, make(False), make(True))
    assert "(anon) {red, green}" in fast[0]
    assert fast == reference


def compiled_and_reference(btf: Btf, briefs: bool = False) -> tuple[dict, dict]:
    """The texts diff_plan makes against a BTF without types (every root of `btf` only
    removed): the spelling of every type read, or with `briefs` the one-line description
    of every root, and the reference's (ReferenceSpeller.expr, diff._Speller.brief) where
    the compiled part gives one."""
    from canonbtf.diff.plan import _chain_words, _ids
    from canonbtf.diff.speller import _Speller

    compiled = native.compiled("canonbtf._btf", "diff_plan")
    sides = [(*_chain_words(b), b.first_id) for b in (btf, Btf([], btf.strings))]
    roots, _, _, need, spellings, made_briefs = compiled.diff_plan(*sides)[0]
    ids, fast = (_ids(roots), made_briefs) if briefs else (_ids(need), spellings)
    speller = _Speller(btf)
    reference = speller.brief if briefs else speller.expr
    return (dict(zip(ids, fast)),
            {i: reference(i) if text is not None else None for i, text in zip(ids, fast)})


@pytest.mark.parametrize("first", range(0, 40, 5))
def test_compiled_briefs_are_the_references(first):
    """Functions and variables described in one line by the compiled part as by the
    reference: names, `...`, `void`, declarators named by a whole signature."""
    made = 0
    for seed in range(first, first + 5):
        count = random.Random(seed).choice([10, 40, 120])
        btf = with_roots(random_c_btf(random.Random(seed), count), random.Random(seed))
        fast, reference = compiled_and_reference(btf, briefs=True)
        assert fast == reference
        made += sum(text is not None for text in fast.values())
    assert made


@pytest.mark.parametrize("seed", range(40))
def test_compiled_spellings_are_the_references(seed):
    """diff_plan's spellings (diffspell.c) against ReferenceSpeller on random BTF: qualified
    arrays and prototypes (the comment), type tags, pointers to functions, loops (left to it)."""
    count = random.Random(seed).choice([10, 40, 120])
    btf = with_roots(random_c_btf(random.Random(seed), count), random.Random(seed))
    fast, reference = compiled_and_reference(btf)
    assert fast == reference
    assert any(text is not None for text in fast.values())


def test_long_chains_and_deep_prototypes():
    """A chain past MAX_CHAIN ends in "..." as the reference's does; prototypes nested
    deeper than the compiled part goes are left to the reference."""
    from canonbtf.btf.strings import StringTable

    strings, offset = StringTable.build(["int", "x"])
    types = [Type(f.INT, offset["int"], 0, 4, 32 | f.INT_SIGNED << 24)]
    types += [Type(f.PTR, 0, 0, n) for n in range(1, 60)]                    # ids 2..60
    types += [Type(f.CONST, 0, 0, 62), Type(f.ARRAY, 0, 0, 0, (1, 1, 4))]   # 61, 62
    types += [Type(f.TYPE_TAG, offset["x"], 0, 61), Type(f.PTR, 0, 0, 63)]  # 63, 64
    first = len(types) + 1   # each prototype takes the next: spelled from the first,
    types += [Type(f.FUNC_PROTO, 0, 0, 1, 0, [(offset["x"], n + 1 if n < first + 79 else 64)])
              for n in range(first, first + 80)]      # the nesting is 80 deep
    types += [Type(f.TYPEDEF, offset["x"], 0, first), Type(f.TYPEDEF, offset["x"], 0, 60)]
    fast, reference = compiled_and_reference(Btf(types, strings))
    assert fast == reference
    assert [fast[n] for n in range(first, first + 40)] == [None] * 40
    assert None not in [fast[n] for n in range(first + 60, first + 80)]
    assert fast[60].startswith("... *") and "/* pointer to tag x const array[4] */" in fast[64]


def every_detail(side: int) -> Btf:
    """A BTF whose `side` 0 and 1 differ in every way a root can: members retyped, moved,
    made bitfields, repeated names (tagged #2), renamed and retyped parameters, a
    prototype becoming a pointer, negative enumerators, a datasec whose variables moved
    (more than the five shown), resized, added and removed, int encodings, a fwd turned
    union, a var's linkage, decl tags repeated on one side."""
    from canonbtf.btf.strings import StringTable

    words = ["int", "u", "s", "a", "b", "c", "e", "neg", "f", "x", "y", "t", "v", "w", ".data",
             "fw", "tag", "d1", "d2", "d3", "d4", "d5", "d6", "d7"]
    strings, off = StringTable.build(words)
    new = side == 1
    types = [
        Type(f.INT, off["int"], 0, 4, 32 | (f.INT_SIGNED << 24 if new else 0)),   # 1
        Type(f.INT, off["u"], 0, 8 if new else 4, 32),                              # 2
        Type(f.PTR, 0, 0, 1),                                                       # 3
        Type(f.STRUCT, off["s"], 1, 16, 0,
             [(off["a"], 2 if new else 1, 0), (off["b"], 1, (3 << 24 | 32) if new else 32),
              (off["a"], 3, 64), (off["c"] if new else off["b"], 1, 96)]),        # 4
        Type(f.ENUM, off["e"], 1, 4, 0, [(off["neg"], 0xFFFFFFFE if new else 0xFFFFFFFF),
                                         (off["a"], 1)]),                           # 5
        Type(f.FUNC_PROTO, 0, 0, 1, 0,
             [(off["x"], 1), (off["b"] if new else off["y"], 3 if new else 1), (0, 0)]),  # 6
        Type(f.FUNC, off["f"], 0, 3 if new else 6, 1),                              # 7
        Type(f.FWD, off["fw"], 1 if new else 0, 0),                                 # 8
        Type(f.FUNC, off["x"], 0, 6, 0),                                            # 9
    ]
    var_names = ["v", "w", "d1", "d2", "d3", "d4", "d5", "d6"] + (["d7"] if new else ["t"])
    first_var = len(types) + 1
    for name in var_names:
        types.append(Type(f.VAR, off[name], 0, 1, 1 if new and name == "v" else 0))
    entries = [(first_var + n, 8 * n + (4 if new else 0), 8 if name != "w" or not new else 16)
               for n, name in enumerate(var_names)]
    types.append(Type(f.DATASEC, off[".data"], 0, 128, 0, entries))
    tags = 3 if new else 1
    types += [Type(f.DECL_TAG, off["tag"], 0, 4, 0) for _ in range(tags)]
    types.append(Type(f.DECL_TAG, off["tag"], 0, 7, -1 if new else 1))
    types.append(Type(f.DECL_TAG, off["tag"], 1, 0 if new else 4, -1))   # an attribute
    return Btf(types, strings)


def test_every_detail(pure):  # noqa: F811
    reference, fast = both_ways(pure, report, lambda: every_detail(0), lambda: every_detail(1))
    text = fast[0]
    for expected in ("- member b#2: int at byte 12", "bitfield not a bitfield -> 3 bits",
                     "neg: -1 -> -2", "~ param 2: renamed y -> b, type int -> int *",
                     "~ proto: (none) -> int *", "~ return type: int -> None",
                     "variables at new offsets", "and 2 more", "~ variable w: size 8 -> 16",
                     "+ variable d7", "- variable t", "~ encoding: unsigned -> signed",
                     "~ fwd kind: struct -> union", "~ linkage: static -> global",
                     "+ decl_tag tag on struct s member a", "- decl_tag tag on func f param y",
                     "- decl_tag attribute tag on struct s", "+ decl_tag tag on void"):
        assert expected in text, expected
    assert fast == reference
    assert compiled_report(every_detail(0), every_detail(1), json=True) is not None


def test_a_name_at_a_nul_is_not_no_name(pure):  # noqa: F811
    """A prototype's last parameter with no name and no type is `...`; one whose name is
    an offset reading empty is a parameter of type void. Keys hold names by what they
    read, so they must still tell offset 0 from an empty name (found by fuzz_btf)."""
    from canonbtf.btf.strings import StringTable

    strings, offset = StringTable.build(["int", "f"])
    empty = offset["int"] + len("int")   # the NUL ending "int"

    def make(last_name: int):
        return lambda: Btf([Type(f.INT, offset["int"], 0, 4, 32 | f.INT_SIGNED << 24),
                            Type(f.FUNC_PROTO, 0, 0, 1, 0, [(0, 1), (last_name, 0)]),
                            Type(f.FUNC, offset["f"], 0, 2, 1)], strings)
    reference, fast = both_ways(pure, report, make(0), make(empty))
    assert "~ varargs: yes -> no" in reference[0]
    assert fast == reference


def joint_reference(old: Btf, new: Btf, roots: tuple[list[int], list[int]]) -> tuple:
    """What settle_duplicates' reference computes for `roots` (_reference_joint's parts):
    per side the ids reached and each one's place in that side's canonical order, and the
    partition of both sides' reached types into the joint graph's classes."""
    sides = [Lookup(btf.all_types(), btf.names) for btf in (old, new)]
    reached = [diff_pairing._reach(side.types, ids) for side, ids in zip(sides, roots)]
    classes, _ = equivalence_classes(diff_pairing._Graph(list(zip(sides, reached))))
    places = []
    for side, reach in zip(sides, reached):
        order = canonical_order(diff_pairing._Graph([(side, reach)]))
        place = [0] * len(reach)
        for n, node in enumerate(order):
            place[node - 1] = n
        places.append(place)
    return reached[0], places[0], reached[1], places[1], partition(classes[1:])


def joint_compiled(old: Btf, new: Btf, roots: tuple[list[int], list[int]]) -> tuple:
    """The same by diff/csrc/diffjoint.c."""
    module = native.compiled("canonbtf._btf", "diff_joint")
    args = [*_chain_words(old), array("I", roots[0]), *_chain_words(new), array("I", roots[1])]
    *sides, classes = (memoryview(done).cast("I").tolist() for done in module.diff_joint(*args))
    return (*sides, partition(classes[1:]))


def partition(classes: list[int]) -> list[list[int]]:
    """Positions grouped by equal class: what the class numbers say, not the numbers."""
    groups: dict[int, list[int]] = {}
    for position, value in enumerate(classes):
        groups.setdefault(value, []).append(position)
    return sorted(groups.values())


@pytest.mark.parametrize("seed", range(120))
def test_joint_classes_and_orders_are_the_references(seed):
    """Random BTF (few names: declarations, same-named definitions, loops) and a changed
    copy, from random roots: the same types reached, the same places in each side's
    order, the same classes."""
    rng = random.Random(seed)
    count = rng.choice([3, 10, 40, 120])
    old = with_roots(random_c_btf(random.Random(seed), count), random.Random(seed))
    new = changed(old, random.Random(seed + 1), seed)
    if rng.random() < 0.3:
        new = shuffle(new, seed)
    roots = tuple(rng.sample(range(1, len(btf.types) + 1), rng.randint(1, min(6, len(btf.types))))
                  for btf in (old, new))
    assert joint_compiled(old, new, roots) == joint_reference(old, new, roots)


def with_twin(btf: Btf, name: str) -> tuple[Btf, int]:
    """`btf` with a second `struct name` of equal facts appended (a generic kernel's two
    `struct dma_chan`), and the first one's id."""
    first = next(n for n, t in enumerate(btf.types, btf.first_id)
                 if t.kind == f.STRUCT and btf.names(t.name_off) == name)
    return Btf([*btf.types, btf.types[first - btf.first_id]], btf.strings), first


def test_joint_work_over_most_of_a_kernel_is_the_references():
    """Twins of `struct task_struct` reach thousands of types on each side, 6.1 and 6.12
    (as the two `struct dma_chan` of a generic kernel reach 7,520)."""
    (old, old_first), (new, new_first) = (with_twin(load_cached(corpus_path(name)),
                                                    "task_struct") for name in (OLD, NEW))
    roots = ([old_first, old.last_id], [new_first, new.last_id])
    fast = joint_compiled(old, new, roots)
    assert len(fast[0]) > 5000 and len(fast[2]) > 5000
    assert fast == joint_reference(old, new, roots)


def test_twins_reaching_most_of_the_kernel(pure):  # noqa: F811
    """The report where alike twins reach thousands of types in both kernels (6.1 against 6.12
    renumbered): the compiled pairing pairs and numbers them as the reference."""
    old = loader(OLD, lambda btf: with_twin(btf, "task_struct")[0])
    new = loader(NEW, lambda btf: shuffle(with_twin(btf, "task_struct")[0], 5))
    reference, fast = both_ways(pure, report, old, new)
    assert fast == reference


def test_joint_work_on_split_btf_is_the_references():
    """Modules over their vmlinux: the roots are the modules' own types, what they reach
    runs into the base."""
    old, new = (loader(name)() for name in ("mod-6.1.0-56-cloud-virtio_net.btf",
                                            "mod-6.1.0-56-cloud-bridge.btf"))
    rng = random.Random(3)
    roots = tuple(rng.sample(range(btf.first_id, btf.last_id + 1), 8) for btf in (old, new))
    fast = joint_compiled(old, new, roots)
    assert fast[0][0] < old.first_id  # base types reached
    assert fast == joint_reference(old, new, roots)
