"""`canonbtf diff`: matching never depends on ids, and each change category is reported."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.cli import main
from canonbtf.diff import diff_btfs
from canonbtf.diff.text import render_json, render_text

from .conftest import corpus_path, load_cached, resolve_input
from .shuffle import shuffle

FETCHED_VMLINUX = Path(
    "/root/.cache/canonbtf-corpus/linux-image-6.1.0-56-cloud-amd64-dbg/usr/lib/debug/boot/"
    "vmlinux-6.1.0-56-cloud-amd64")


def text_of(result) -> str:
    out = io.StringIO()
    render_text(result, out)
    return out.getvalue()


def details(result, title: str) -> list[tuple]:
    """(change, path, old, new) of the one change titled `title`."""
    found = [c for c in result.changes if c.title == title]
    assert len(found) == 1, [c.title for c in result.changes]
    return [(d.change, d.path, d.old, d.new) for d in found[0].details]


# --- id independence -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["vmlinux-6.12.113-cloud-amd64.btf", "sysfs",
                                  "mod-6.1.0-56-cloud-xfs.btf"])
def test_shuffled_copy_gives_no_output_and_exit_0(name, tmp_path, capsys):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    shuffled = tmp_path / "shuffled.btf"
    shuffled.write_bytes(writer.write(shuffle(btf, seed=7)))
    argv = ["diff", str(path), str(shuffled)]
    if base is not None:
        argv += ["--base-old", str(base), "--base-new", str(base)]
    assert main(argv) == 0
    assert capsys.readouterr().out == ""


def test_report_does_not_change_when_both_sides_are_renumbered():
    old = load_cached(corpus_path("vmlinux-6.1.0-56-cloud-amd64.btf"))
    new = load_cached(corpus_path("vmlinux-6.12.113-cloud-amd64.btf"))
    report = text_of(diff_btfs(old, new))
    assert report
    assert text_of(diff_btfs(shuffle(old, seed=3), shuffle(new, seed=4))) == report


def test_renumbered_duplicates_and_anonymous_types_are_not_reported():
    def build(order: int):
        b = BtfBuilder()
        i32 = b.int("int", 4, f.INT_SIGNED)
        parts = [
            lambda: b.struct("dup", 4, [("a", i32, 0)]),
            lambda: b.struct("dup", 8, [("a", i32, 0), ("b", i32, 32)]),
            lambda: b.enum("", 4, [("ANON_A", 1), ("ANON_B", 2)]),
        ]
        for part in parts[::order]:
            part()
        return b.build()

    assert not diff_btfs(build(1), build(-1))


# --- one small pair per change category ------------------------------------------------


def pair(old_members, new_members, old_size=16, new_size=16):
    """Two BTFs whose only difference is the members of `struct s`."""
    out = []
    for members, size in ((old_members, old_size), (new_members, new_size)):
        b = BtfBuilder()
        i32 = b.int("int", 4, f.INT_SIGNED)
        i64 = b.int("long", 8, f.INT_SIGNED)
        types = {"int": i32, "long": i64}
        b.struct("s", size, [(n, types[t], *rest) for n, t, *rest in members])
        out.append(b.build())
    return diff_btfs(*out)


def test_member_added_and_removed():
    result = pair([("a", "int", 0), ("b", "int", 32)], [("a", "int", 0), ("c", "long", 64)])
    assert details(result, "struct s") == [
        ("member_removed", "b", {"type": "int", "bit_offset": 32, "bitfield_size": 0}, None),
        ("member_added", "c", None, {"type": "long", "bit_offset": 64, "bitfield_size": 0}),
    ]


def test_member_retyped_and_moved():
    result = pair([("a", "int", 0), ("b", "int", 32)], [("b", "long", 0), ("a", "int", 64)])
    assert details(result, "struct s") == [
        ("member_moved", "a", 0, 64),
        ("member_retyped", "b", "int", "long"),
        ("member_moved", "b", 32, 0),
    ]
    assert "~ member b: type int -> long, moved byte 4 -> byte 0" in text_of(result)


def test_bitfield_change():
    result = pair([("a", "int", 0, 3), ("b", "int", 3, 5)],
                  [("a", "int", 0, 4), ("b", "int", 4, 5)])
    assert details(result, "struct s") == [
        ("bitfield_changed", "a", 3, 4),
        ("member_moved", "b", 3, 4),
    ]
    assert "~ member b: moved bit 3 -> bit 4" in text_of(result)


def test_size_change():
    result = pair([("a", "int", 0)], [("a", "int", 0)], old_size=4, new_size=8)
    assert details(result, "struct s") == [("size_changed", "", 4, 8)]


def test_enum_values():
    def build(values):
        b = BtfBuilder()
        b.enum("e", 4, values)
        return b.build()

    result = diff_btfs(build([("A", 0), ("B", 1), ("C", 2)]), build([("A", 0), ("B", 5), ("D", 3)]))
    assert details(result, "enum e") == [
        ("value_changed", "B", 1, 5),
        ("value_removed", "C", 2, None),
        ("value_added", "D", None, 3),
    ]
    text = text_of(result)
    assert "~ B: 1 -> 5" in text and "- C = 2" in text and "+ D = 3" in text


def test_enum_grows_to_64_bits():
    def build(value):
        b = BtfBuilder()
        b.enum("e", 8 if value >> 32 else 4, [("A", value)])
        return b.build()

    assert details(diff_btfs(build(1), build(1 << 40)), "enum e") == [
        ("width_changed", "", "32-bit", "64-bit"),
        ("size_changed", "", 4, 8),
        ("value_changed", "A", 1, 1 << 40),
    ]


def test_function_prototype_changes():
    def build(ret, params):
        b = BtfBuilder()
        types = {"int": b.int("int", 4, f.INT_SIGNED), "long": b.int("long", 8, f.INT_SIGNED)}
        types["char *"] = b.ptr(b.int("char", 1))
        proto = b.func_proto(types[ret], [(n, types[t]) for n, t in params])
        b.func("f", proto)
        return b.build()

    result = diff_btfs(build("int", [("a", "int"), ("b", "char *"), ("c", "int")]),
                       build("long", [("a", "long"), ("name", "char *")]))
    assert details(result, "func f") == [
        ("return_changed", "", "int", "long"),
        ("param_retyped", "1", "int", "long"),
        ("param_renamed", "2", "b", "name"),
        ("param_removed", "3", {"name": "c", "type": "int"}, None),
    ]
    text = text_of(result)
    assert "~ return type: int -> long" in text
    assert "- param 3 c: int" in text


def test_typedef_target_change():
    def build(target):
        b = BtfBuilder()
        i32 = b.int("int", 4, f.INT_SIGNED)
        fn = b.func_proto(i32, [("x", i32)])
        b.typedef("handler_t", b.ptr(fn) if target == "fnptr" else i32)
        return b.build()

    assert details(diff_btfs(build("int"), build("fnptr")), "typedef handler_t") == [
        ("target_changed", "", "int", "int (*)(int)"),
    ]


def typedef_of(shape: str):
    """typedef `t` of a pointer to a const array of int, an array of pointers to const
    int, or a pointer to a plain array of int, all of 4 elements."""
    b = BtfBuilder()
    i32 = b.int("int", 4, f.INT_SIGNED)
    if shape == "ptr const array":
        target = b.ptr(b.modifier(f.CONST, b.array(i32, i32, 4)))
    elif shape == "array ptr const":
        target = b.array(b.ptr(b.modifier(f.CONST, i32)), i32, 4)
    else:
        target = b.ptr(b.array(i32, i32, 4))
    b.typedef("t", target)
    return b.build()


def test_pointer_to_array_through_a_qualifier_is_not_an_array_of_pointers():
    result = diff_btfs(typedef_of("ptr const array"), typedef_of("array ptr const"))
    # C has no place for const on an array (gcc emits it): the spelling is the C
    # header's, the qualifier is noted, so the comparison sees the structure.
    assert details(result, "typedef t") == [
        ("target_changed", "", "int(*)[4] /* pointer to const array[4] */",
         "const int *[4]")]
    assert text_of(diff_btfs(typedef_of("ptr const array"), typedef_of("ptr array")))
    assert not diff_btfs(typedef_of("ptr const array"), typedef_of("ptr const array"))


def test_per_cpu_variable_changes():
    def build(counter_type, extra):
        b = BtfBuilder()
        types = {"int": b.int("int", 4, f.INT_SIGNED), "long": b.int("long", 8, f.INT_SIGNED)}
        counter = b.var("counter", types[counter_type], f.LINKAGE_GLOBAL)
        entries = [(counter, 0, 4 if counter_type == "int" else 8)]
        if extra:
            entries.append((b.var("extra", types["int"], f.LINKAGE_STATIC), 8, 4))
        b.datasec(".data..percpu", 16, entries)
        return b.build()

    result = diff_btfs(build("int", False), build("long", True))
    assert details(result, "var counter") == [("type_changed", "", "int", "long")]
    assert [(c.status, c.title) for c in result.changes if c.family == "var"] == [
        ("added", "var extra"), ("changed", "var counter")]
    assert details(result, "datasec .data..percpu") == [
        ("var_resized", "counter", {"offset": 0, "size": 4}, {"offset": 0, "size": 8}),
        ("var_added", "extra", None, {"offset": 8, "size": 4}),
    ]


def test_added_and_removed_types():
    old, new = BtfBuilder(), BtfBuilder()
    old.struct("gone", 0, [])
    new.fwd("opaque")
    new_i = new.int("int", 4, f.INT_SIGNED)
    new.func("fresh", new.func_proto(new_i, []))
    result = diff_btfs(old.build(), new.build())
    assert [(c.status, c.title, c.old_brief or c.new_brief) for c in result.changes] == [
        ("removed", "struct gone", "size 0, 0 members"),
        ("added", "fwd opaque", "struct"),
        ("added", "func fresh", "int fresh(void)"),
        ("added", "int int", "size 4"),
    ]


# --- anonymous types and duplicate names ------------------------------------------------


def nested(inner_b_type: str, stats_x_offset: int):
    """struct outer { union { int a; T b; }; struct { int x; } stats; }"""
    b = BtfBuilder()
    types = {"int": b.int("int", 4, f.INT_SIGNED), "long": b.int("long", 8, f.INT_SIGNED)}
    union = b.struct("", 8, [("a", types["int"], 0), ("b", types[inner_b_type], 0)], union=True)
    stats = b.struct("", 8, [("x", types["int"], stats_x_offset)])
    b.struct("outer", 16, [("", union, 0), ("stats", stats, 64)])
    return b.build()


def test_anonymous_members_are_compared_by_member_path():
    result = diff_btfs(nested("int", 0), nested("long", 32))
    assert details(result, "struct outer") == [
        ("member_retyped", "b", "int", "long"),
        ("member_moved", "stats.x", 64, 96),
    ]
    # The anonymous union and struct are described inside `outer`, not on their own.
    assert [c.title for c in result.changes] == ["struct outer"]


def test_duplicate_names_are_paired_by_structure():
    def build(members_of_second):
        b = BtfBuilder()
        i32 = b.int("int", 4, f.INT_SIGNED)
        one = b.struct("dup", 4, [("only", i32, 0)])
        two = b.struct("dup", 8, [(n, i32, 32 * k) for k, n in enumerate(members_of_second)])
        b.struct("user", 16, [("p", b.ptr(one), 0), ("q", b.ptr(two), 64)])
        return b.build()

    result = diff_btfs(build(["left", "right"]), build(["right", "left"]))
    # `dup` with {left, right} pairs with its reordered self, not with {only}.
    changed = [c for c in result.changes if c.status == "changed"]
    assert [c.title for c in changed] == ["struct dup#2"]
    assert details(result, "struct dup#2") == [("member_moved", "left", 0, 32),
                                               ("member_moved", "right", 32, 0)]


def test_swapping_which_duplicate_a_member_uses_is_reported():
    def build(swap):
        b = BtfBuilder()
        i32 = b.int("int", 4, f.INT_SIGNED)
        one = b.struct("dup", 4, [("a", i32, 0)])
        two = b.struct("dup", 8, [("a", i32, 0), ("b", i32, 32)])
        b.struct("user", 8, [("p", b.ptr(two if swap else one), 0)])
        return b.build()

    result = diff_btfs(build(False), build(True))
    assert details(result, "struct user") == [
        ("member_retyped", "p", "struct dup#1 *", "struct dup#2 *")]


def test_anonymous_top_level_enum_paired_by_enumerators():
    def build(values):
        b = BtfBuilder()
        b.enum("", 4, [("UNRELATED", 7)])
        b.enum("", 4, values)
        return b.build()

    result = diff_btfs(build([("FLAG_A", 1), ("FLAG_B", 2)]),
                       build([("FLAG_A", 1), ("FLAG_B", 2), ("FLAG_C", 4)]))
    assert details(result, "enum (anon) {FLAG_A, FLAG_B, FLAG_C}") == [
        ("value_added", "FLAG_C", None, 4)]


def test_anonymous_types_alike_only_in_shape_are_not_paired_at_random():
    def build(handlers):
        b = BtfBuilder()
        i32 = b.int("int", 4, f.INT_SIGNED)
        for handler in handlers:
            b.struct("", 8, [("event", i32, 0), ("handler", b.typedef(handler, i32), 0)],
                     union=True)
        return b.build()

    result = diff_btfs(build(["trace_a", "trace_b"]), build(["trace_c", "trace_d"]))
    assert sorted((c.status, c.name) for c in result.changes if c.family == "union") == [
        ("added", "(anon) {int event, trace_c handler}"),
        ("added", "(anon) {int event, trace_d handler}"),
        ("removed", "(anon) {int event, trace_a handler}"),
        ("removed", "(anon) {int event, trace_b handler}"),
    ]


# --- command line and output formats -----------------------------------------------------


def write(tmp_path: Path, name: str, btf) -> str:
    path = tmp_path / name
    path.write_bytes(writer.write(btf))
    return str(path)


def test_cli_exit_status_and_json(tmp_path, capsys):
    old = write(tmp_path, "old.btf", nested("int", 0))
    new = write(tmp_path, "new.btf", nested("long", 0))
    assert main(["diff", old, old]) == 0
    assert capsys.readouterr().out == ""
    assert main(["diff", old, new, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == {"added": 0, "removed": 0, "changed": 1}
    assert doc["types"] == [{"kind": "struct", "name": "outer", "status": "changed", "details": [
        {"change": "member_retyped", "path": "b", "old": "int", "new": "long"}]}]
    assert main(["diff", old, new]) == 1
    assert capsys.readouterr().out == (
        "1 types differ: 1 changed\n\n== struct: 1 changed ==\n~ struct outer\n"
        "    ~ member b: type int -> long\n")


def test_cli_trouble_is_exit_2(tmp_path, capsys):
    old = write(tmp_path, "old.btf", nested("int", 0))
    assert main(["diff", old, str(tmp_path / "missing.btf")]) == 2
    err = capsys.readouterr().err
    assert "missing.btf" in err and "Traceback" not in err
    module = corpus_path("mod-6.1.0-56-cloud-bridge.btf")
    assert main(["diff", old, str(module)]) == 2
    assert "base" in capsys.readouterr().err


def test_empty_json_diff_is_a_document():
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    out = io.StringIO()
    render_json(diff_btfs(b.build(), b.build()), out)
    assert json.loads(out.getvalue()) == {"canonbtf_diff": 1, "summary": {
        "added": 0, "removed": 0, "changed": 0}, "by_kind": {}, "types": []}


# --- real kernels -------------------------------------------------------------------------


def test_kernel_upgrade_6_1_to_6_12():
    old = load_cached(corpus_path("vmlinux-6.1.0-56-cloud-amd64.btf"))
    new = load_cached(corpus_path("vmlinux-6.12.113-cloud-amd64.btf"))
    result = diff_btfs(old, new)
    text = text_of(result)
    totals = result.totals()
    assert text.splitlines()[0] == (f"{sum(totals.values())} types differ: "
                                    f"{totals['changed']} changed, {totals['added']} added, "
                                    f"{totals['removed']} removed")
    # Spot checks, confirmed against bpftool's C dumps of both kernels.
    assert details(result, "int char") == [("encoding_changed", "", "signed", "unsigned")]
    assert ("member_removed", "compound_mapcount",
            {"type": "atomic_t", "bit_offset": 160, "bitfield_size": 0},
            None) in details(result, "struct page")
    assert ("size_changed", "", 9728, 9792) in details(result, "struct task_struct")
    assert ("type_changed", "", "struct timer_base[2]",
            "struct timer_base[3]") in details(result, "var timer_bases")
    assert ("return_changed", "", "int", "bool") in details(result, "func PageHuge")
    counts = result.counts()
    assert set(counts) >= {"struct", "union", "enum", "typedef", "func", "var", "datasec"}


@pytest.mark.skipif(not FETCHED_VMLINUX.exists(), reason="fetched 6.1 kernel with DWARF absent"
                    " (../shared/tools/fetch-kernel-dbg)")
def test_pahole_j1_versus_j2_differs_only_in_functions(tmp_path):
    pahole = shutil.which("pahole")
    if pahole is None:
        pytest.skip("pahole is not installed")
    outputs = []
    for jobs in (1, 2):
        out = tmp_path / f"j{jobs}.btf"
        subprocess.run([pahole, "-J", f"-j{jobs}", f"--btf_encode_detached={out}",
                        str(FETCHED_VMLINUX)], check=True, capture_output=True)
        outputs.append(load_cached(out))
    result = diff_btfs(*outputs)
    # pahole 1.24 is not reproducible: whatever differs must be functions (and with them
    # their prototypes), never data types.
    assert {c.family for c in result.changes} <= {"func"}
    # Exactly the functions one output has more copies of than the other are reported.
    copies = [Counter(btf.type_name(t) for _, t in btf.own() if t.kind == f.FUNC)
              for btf in outputs]
    reported = {status: Counter(c.name.split("#")[0] for c in result.changes
                                if c.status == status) for status in ("added", "removed")}
    assert reported["added"] == copies[1] - copies[0]
    assert reported["removed"] == copies[0] - copies[1]
