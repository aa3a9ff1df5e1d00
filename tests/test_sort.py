"""The canonical order: independent of ids and string order, idempotent, meaning kept."""

from __future__ import annotations

import re
import subprocess

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.canon import canonicalize

from .conftest import corpus_path, load_cached, need_tool, real_inputs, resolve_input
from .libbpf import libbpf_dedup_count
from .shuffle import shuffle

VMLINUX_61 = "vmlinux-6.1.0-56-cloud-amd64.btf"
_sorted: dict[str, bytes] = {}


def sorted_blob(name: str) -> bytes:
    if name not in _sorted:
        path, base = resolve_input(name)
        _sorted[name] = writer.write(canonicalize(load_cached(path, base)))
    return _sorted[name]


@pytest.mark.parametrize("name", real_inputs())
@pytest.mark.parametrize("seed", [1, 2])
def test_sort_ignores_ids_and_string_order(name, seed):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    shuffled = shuffle(btf, seed)
    assert writer.write(shuffled) != path.read_bytes()
    assert writer.write(canonicalize(shuffled)) == sorted_blob(name)


@pytest.mark.parametrize("name", real_inputs())
def test_sort_is_idempotent_and_a_permutation(name):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    once = reader.parse(sorted_blob(name), "sorted", btf.base)
    assert writer.write(canonicalize(once)) == sorted_blob(name)
    assert len(once) == len(btf)
    assert type_multiset(once) == type_multiset(btf)


def type_multiset(btf: Btf) -> list:
    """Every type as an id-free text: kind, names and scalars, referenced types by name."""
    from canonbtf.canon.labels import label

    out = []
    for _, t in btf.own():
        targets = []
        for ref in t.refs():
            target = btf.type_by_id(ref)
            targets.append("void" if target is None else
                           (f.kind_name(target.kind), btf.type_name(target)))
        out.append(repr((label(t, btf.name), targets)))
    return sorted(out)


@pytest.mark.parametrize("name", real_inputs())
def test_order_name_follows_the_kernel_rule(name):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    by_name = canonicalize(btf, order="name")
    names = [by_name.type_name(t) for t in by_name.types]
    assert names == sorted(names)
    assert writer.write(canonicalize(shuffle(btf, 5), order="name")) == writer.write(by_name)


def concatenated(btf: Btf) -> Btf:
    """Two copies of `btf`'s types in one blob, the second referring to its own copies."""
    n = len(btf.types)
    first = btf.first_id
    new_id = list(range(btf.last_id + 1 + n))
    for old in range(first, btf.last_id + 1):
        new_id[old] = old + n
    second = [t.remap(new_id) for t in btf.types]
    return Btf(btf.types + second, btf.strings, btf.base, btf.byteorder)


@pytest.mark.parametrize("name", ["vmlinux-6.1.0-56-cloud-amd64.btf",
                                  "mod-6.1.0-56-cloud-xfs.btf"])
def test_dedup_of_two_copies_is_the_sort_of_one(name):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    doubled = concatenated(btf)
    assert len(doubled) == 2 * len(btf)
    assert writer.write(canonicalize(doubled, dedup=True)) == sorted_blob(name)


def test_sorted_output_declares_the_same_c_types(tmp_path):
    bpftool = need_tool("bpftool")
    path = corpus_path("vmlinux-6.12.113-cloud-amd64.btf")
    out = tmp_path / "sorted.btf"
    out.write_bytes(sorted_blob("vmlinux-6.12.113-cloud-amd64.btf"))

    def declarations(p):
        text = subprocess.run([bpftool, "btf", "dump", "file", str(p), "format", "c"],
                              check=True, capture_output=True, text=True).stdout
        # Forward declarations and blank lines depend on bpftool's emission order only.
        lines = (re.sub(r"___\d+\b", "", line) for line in text.splitlines())
        return sorted(line for line in lines
                      if line.strip() and not re.fullmatch(r"(struct|union) \w+;", line))

    assert declarations(out) == declarations(path)


# Hand-built graphs.

def sorted_text(btf: Btf, **kwargs) -> bytes:
    return writer.write(canonicalize(btf, **kwargs))


def build_list_head(order: int) -> Btf:
    b = BtfBuilder()
    if order == 0:
        s = b.struct("list_head", 16, [])
        p = b.ptr(s)
        b.types[s - 1].items = [(b.strings.add("next"), p, 0), (b.strings.add("prev"), p, 64)]
        b.int("int", 4, f.INT_SIGNED)
    else:
        b.int("int", 4, f.INT_SIGNED)
        p = b.ptr(0)
        s = b.struct("list_head", 16, [("next", p, 0), ("prev", p, 64)])
        b.types[p - 1].size_or_type = s
    return b.build()


def test_list_head_cycle_is_ordered_the_same_from_any_input_order():
    assert sorted_text(build_list_head(0)) == sorted_text(build_list_head(1))
    out = canonicalize(build_list_head(1))
    assert [f.kind_name(t.kind) for t in out.types] == ["INT", "PTR", "STRUCT"]


def mutual(swap: bool) -> Btf:
    """struct a { struct b *b; }; struct b { struct a *a; int x; };"""
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    pa = b.ptr(0)
    pb = b.ptr(0)
    if swap:
        sb = b.struct("b", 16, [("a", pa, 0), ("x", i, 64)])
        sa = b.struct("a", 8, [("b", pb, 0)])
    else:
        sa = b.struct("a", 8, [("b", pb, 0)])
        sb = b.struct("b", 16, [("a", pa, 0), ("x", i, 64)])
    b.types[pa - 1].size_or_type = sa
    b.types[pb - 1].size_or_type = sb
    return b.build()


def test_mutually_recursive_structs():
    out = canonicalize(mutual(False))
    assert sorted_text(mutual(True)) == writer.write(out)
    ptr_targets = [out.type_name(out.type_by_id(t.size_or_type))
                   for t in out.types if t.kind == f.PTR]
    assert ptr_targets == ["a", "b"]


def nested_anon(variant: int) -> Btf:
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    c = b.int("char", 1, f.INT_SIGNED)
    u1 = b.struct("", 4, [("x", i, 0), ("c", c, 0)], union=True)
    u2 = b.struct("", 4, [("x", i, 0), ("c", c, 0)], union=True)
    if variant:
        u1, u2 = u2, u1
    b.struct("outer", 8, [("", u1, 0), ("y", i, 32)])
    b.struct("other", 4, [("", u2, 0)])
    return b.build()


def test_identical_anonymous_unions_are_placed_by_their_referrers():
    out = canonicalize(nested_anon(0))
    assert writer.write(out) == sorted_text(nested_anon(1))
    assert len(out) == 6
    unions = [type_id for type_id, t in out.own() if t.kind == f.UNION]
    outer = next(t for t in out.types if out.type_name(t) == "outer")
    other = next(t for t in out.types if out.type_name(t) == "other")
    # "other" (vlen 1) sorts before "outer" (vlen 2), so its union comes first.
    assert other.items[0][1] == unions[0] and outer.items[0][1] == unions[1]
    assert len(canonicalize(nested_anon(0), dedup=True)) == 5


def same_name_layouts(swap: bool) -> Btf:
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    ll = b.int("long", 8, f.INT_SIGNED)
    layouts = [[("v", i, 0)], [("v", ll, 0)]]
    if swap:
        layouts.reverse()
    for members in layouts:
        b.struct("dup", 8, members)
    return b.build()


def test_same_name_structs_with_different_layouts_stay_apart():
    out = canonicalize(same_name_layouts(False), dedup=True)
    assert writer.write(out) == sorted_text(same_name_layouts(True), dedup=True)
    structs = [t for t in out.types if t.kind == f.STRUCT]
    assert [out.type_name(out.type_by_id(s.items[0][1])) for s in structs] == ["int", "long"]


def fwd_and_full(with_second_definition: bool) -> Btf:
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    full = b.struct("task", 4, [("pid", i, 0)])
    fwd = b.fwd("task")
    b.struct("user_a", 8, [("t", b.ptr(fwd), 0)])
    b.struct("user_a", 8, [("t", b.ptr(full), 0)])
    if with_second_definition:
        b.struct("task", 8, [("pid", b.int("long", 8, f.INT_SIGNED), 0)])
    return b.build()


def test_fwd_resolves_to_the_single_definition():
    out = canonicalize(fwd_and_full(False), dedup=True)
    kinds = sorted(f.kind_name(t.kind) for t in out.types)
    assert kinds == ["INT", "PTR", "STRUCT", "STRUCT"]


def test_fwd_resolves_in_context_when_the_name_has_two_definitions():
    """Two `task`s: the FWD resolves to none by name, but the copy of `user_a` holding it
    has one twin holding a definition, and merges into it, as in libbpf's dedup
    (canon/twins.py; tests/test_dedup.py has the ambiguous case)."""
    out = canonicalize(fwd_and_full(True), dedup=True)
    assert not any(t.kind == f.FWD for t in out.types)
    assert sum(1 for t in out.types if out.type_name(t) == "user_a") == 1
    assert sum(1 for t in out.types if out.type_name(t) == "task") == 2
    assert len(out.types) <= libbpf_dedup_count(writer.write(fwd_and_full(True)))


def protos(deep_difference: bool) -> Btf:
    """Two prototypes taking pointers to structs that differ only three levels down."""
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    c = b.int("char", 1, f.INT_SIGNED)
    leaves = [i, c if deep_difference else i]
    out = []
    for leaf in leaves:
        inner = b.struct("", 4, [("v", leaf, 0)])
        mid = b.struct("", 8, [("in", b.ptr(inner), 0)])
        out.append(b.func_proto(i, [("arg", b.ptr(mid))]))
    for n, proto in enumerate(out):
        b.func(f"fn{n}", proto)
    return b.build()


def test_prototypes_differing_deep_inside():
    assert len(canonicalize(protos(True), dedup=True)) == len(protos(True))
    merged = canonicalize(protos(False), dedup=True)
    assert sum(1 for t in merged.types if t.kind == f.FUNC_PROTO) == 1
    assert sum(1 for t in merged.types if t.kind == f.FUNC) == 2


def test_split_duplicates_of_one_base_anonymous_struct_merge_into_it():
    """The module's pt_regs and both anonymous copies become the base's types."""
    base_btf, btf = pt_regs_case()
    out = canonicalize(btf, dedup=True)
    assert [f.kind_name(t.kind) for t in out.types] == ["PTR", "FUNC", "FUNC_PROTO"]
    regs = next(type_id for type_id, t in base_btf.own() if base_btf.type_name(t) == "pt_regs")
    assert out.types[0].size_or_type == regs


def test_vars_merge_only_inside_identical_datasecs():
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    v1 = b.var("counter", i)
    v2 = b.var("counter", i)
    b.datasec(".data..percpu", 8, [(v1, 0, 4), (v2, 4, 4)])
    single = b.build()
    out = canonicalize(single, dedup=True)
    assert sum(1 for t in out.types if t.kind == f.VAR) == 2
    assert writer.write(canonicalize(concatenated(single), dedup=True)) == writer.write(out)


# libbpf's btf__dedup as the reference: ours must never leave more types.

def pt_regs_case() -> tuple[Btf, Btf]:
    """The s390 pt_regs shape: the base's struct embeds one anonymous struct twice; the
    module repeats the struct with two separate (identical) copies of the anonymous one.
    libbpf's one-to-one hypothetical mapping cannot map both copies onto the base's one."""
    base = BtfBuilder()
    ul = base.int("long unsigned int", 8)
    anon = base.struct("", 16, [("gprs", base.ptr(ul), 0), ("psw", ul, 64)])
    base.struct("pt_regs", 32, [("a", anon, 0), ("b", anon, 128)])
    base_btf = base.build()
    mod = BtfBuilder(base_btf)
    # The containing struct comes first, as an encoder emits it; libbpf meets it before
    # it has mapped either copy.
    regs = mod.struct("pt_regs", 32, [("a", 0, 0), ("b", 0, 128)])
    copies = [mod.struct("", 16, [("gprs", mod.ptr(ul), 0), ("psw", ul, 64)])
              for _ in range(2)]
    mod.types[0].items = [(n, copy, o) for (n, _, o), copy in zip(mod.types[0].items, copies)]
    mod.func("show_regs", mod.func_proto(0, [("regs", mod.ptr(regs))]))
    return base_btf, mod.build()


@pytest.mark.parametrize("case", ["pt_regs", "fwd", "protos", "anon", "virtio_net", "xfs",
                                  "vmlinux"])
def test_dedup_never_leaves_more_types_than_libbpf(case):
    from .libbpf import libbpf_dedup_count

    base_blob = None
    if case == "pt_regs":
        base_btf, btf = pt_regs_case()
        base_blob = writer.write(base_btf)
    elif case == "fwd":
        btf = fwd_and_full(False)
    elif case == "protos":
        btf = protos(False)
    elif case == "anon":
        btf = nested_anon(0)
    elif case == "vmlinux":
        btf = shuffle(concatenated(load_cached(corpus_path(VMLINUX_61))), 7)
    else:
        base_path = corpus_path(VMLINUX_61)
        btf = shuffle(concatenated(load_cached(corpus_path(f"mod-6.1.0-56-cloud-{case}.btf"),
                                               base_path)), 7)
        base_blob = base_path.read_bytes()
    ours = len(canonicalize(btf, dedup=True))
    theirs = libbpf_dedup_count(writer.write(btf), base_blob)
    assert ours <= theirs
    if case == "pt_regs":
        assert ours < theirs


@pytest.mark.parametrize("name", real_inputs())
@pytest.mark.parametrize("dedup", [False, True], ids=["sort", "dedup"])
def test_kernel_accepts_sorted_output_when_it_accepts_the_input(name, dedup):
    from canonbtf.btf.kernel import check_btf

    path, base = resolve_input(name)
    btf = load_cached(path, base)
    before = check_btf(btf)
    if before.accepted is None:
        pytest.skip(f"cannot ask the kernel: {before.summary()}")
    if not before.accepted:
        pytest.skip(f"the kernel rejects the input itself: {before.summary()}")
    out = canonicalize(btf, dedup=True) if dedup else reader.parse(
        sorted_blob(name), "sorted", btf.base)
    after = check_btf(out)
    assert after.accepted, after.log_tail


def test_split_of_split_reuses_the_grand_bases_names():
    grand = BtfBuilder()
    i32 = grand.int("int", 4, f.INT_SIGNED)
    grand.struct("shared_name", 4, [("field", i32, 0)])
    grand_btf = grand.build()
    middle = BtfBuilder(grand_btf)
    middle.struct("middle_only", 4, [("field", i32, 0)])
    middle_btf = middle.build()
    top = BtfBuilder(middle_btf)
    top.struct("shared_name", 8, [("field", i32, 0), ("middle_only", i32, 32)])
    top.struct("top_only", 4, [("field", i32, 0)])
    result = canonicalize(top.build())
    # Only the one name no base has is new; the others point into the bases.
    assert result.strings.data() == b"top_only\0"
    assert {result.name(o) for _, t in result.own() for o in t.name_offsets()} == {
        "shared_name", "field", "middle_only", "top_only"}
