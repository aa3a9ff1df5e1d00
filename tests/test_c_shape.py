"""What C can spell (canonbtf/emit/c/shape.py) and the sizes and alignments the header
lays structs out with (canonbtf/btf/sizes.py).

The shape check is held to hand-made BTF whose loops and depths are known by
construction; the sizes to gcc itself: a C file's types are encoded by pahole (not by
canonbtf), and every size and alignment `TypeSizes` derives from that BTF must be the
one gcc prints for the same type.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import reader
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.sizes import TypeSizes, by_value_edges, pointer_size
from canonbtf.emit.c.shape import MAX_NESTING, MAX_PADDING, c_shape_problem

from .conftest import need_tool


def builder_with_int() -> tuple[BtfBuilder, int]:
    b = BtfBuilder()
    return b, b.int("int", 4, f.INT_SIGNED)


def test_spellable_btf_has_no_problem():
    b, int_ = builder_with_int()
    node = b.first_id + len(b.types) + 1
    b.struct("node", 16, [("next", b.ptr(node), 0), ("value", int_, 64)])
    b.typedef("node_t", node)
    assert c_shape_problem(b.build()) is None


def test_a_struct_holding_itself_is_named_with_its_loop():
    b, int_ = builder_with_int()
    me = b.first_id + len(b.types)
    b.struct("me", 8, [("a", int_, 0), ("again", me, 32)])
    assert c_shape_problem(b.build()) == (
        f"type {me} (STRUCT 'me') contains itself by value ({me} -> {me})")


def test_a_typedef_loop_is_found_through_every_step():
    b, _ = builder_with_int()
    first = b.first_id + len(b.types)
    b.typedef("a_t", first + 1)
    b.modifier(f.CONST, first + 2)
    b.typedef("c_t", first)
    problem = c_shape_problem(b.build())
    assert problem == (f"type {first} (TYPEDEF 'a_t') contains itself by value "
                       f"({first} -> {first + 1} -> {first + 2} -> {first})")


def test_pointers_loop_only_without_a_struct_tag_between():
    """C can say `struct s { struct s *next; }`, not an anonymous struct pointing to
    itself, nor a prototype taking a pointer to itself."""
    b, int_ = builder_with_int()
    anon = b.first_id + len(b.types)
    b.struct("", 8, [("self", anon + 1, 0)])
    b.ptr(anon)
    assert c_shape_problem(b.build()) == (
        f"type {anon} (STRUCT) refers to itself without a named struct or union in "
        f"between ({anon} -> {anon + 1} -> {anon})")

    b, int_ = builder_with_int()
    proto = b.first_id + len(b.types)
    b.func_proto(int_, [("f", proto + 1)])
    b.ptr(proto)
    assert "refers to itself without a named struct" in c_shape_problem(b.build())


@pytest.mark.parametrize("kind", [f.FWD, f.TYPEDEF])
def test_a_declaration_needs_a_name(kind):
    b, int_ = builder_with_int()
    tid = b.add(kind, "", 0 if kind == f.FWD else int_)
    assert c_shape_problem(b.build()) == f"type {tid} ({f.kind_name(kind)}) has no name"


def nested(levels: int):
    """`levels` structs, each holding the one before by value; the first holds an int."""
    b, held = builder_with_int()
    for level in range(levels):
        held = b.struct(f"s{level}", 4, [("inner", held, 0)])
    return b.build()


def test_nesting_is_bounded():
    assert c_shape_problem(nested(MAX_NESTING // 2)) is None
    problem = c_shape_problem(nested(MAX_NESTING + 10))
    assert problem is not None and problem.endswith(f"nested more than {MAX_NESTING} deep")


def test_padding_up_to_the_limit_is_written_past_it_refused():
    for gap, refused in ((MAX_PADDING, False), (MAX_PADDING + 1, True)):
        b, int_ = builder_with_int()
        b.struct("gap", 8 + gap, [("head", int_, 0), ("tail", int_, 8 * (4 + gap))])
        problem = c_shape_problem(b.build())
        if refused:
            assert problem == (f"type 2 (STRUCT 'gap') would need {gap} bytes of padding "
                               f"between its members; the C dump writes at most {MAX_PADDING}")
        else:
            assert problem is None


def test_the_by_value_relation_is_members_elements_and_names():
    b, int_ = builder_with_int()
    ptr = b.ptr(int_)
    arr = b.array(ptr, int_, 4)
    const = b.modifier(f.CONST, arr)
    s = b.struct("s", 40, [("p", ptr, 0), ("a", const, 64)])
    proto = b.func_proto(int_, [("x", s)])
    edges = by_value_edges(b.build().all_types())
    assert edges[ptr] == () and edges[proto] == ()
    assert edges[arr] == (ptr,) and edges[const] == (arr,) and edges[s] == (ptr, const)


# -- sizes and alignments, judged by gcc -----------------------------------------------

TYPES_C = """\
#include <stdio.h>
struct pair { int a; char b:3; unsigned c:5; long d; };
struct __attribute__((packed)) packed { char c; int i; short s; };
struct tail_pad { long l; char c; };
struct bits_only { unsigned a:1, b:30; unsigned long long c:40; };
union mixed { char c[3]; short s; double d; };
typedef int matrix[3][4];
typedef const matrix cmatrix;
enum small { SMALL_A = 1 };
enum __attribute__((mode(byte))) tiny { TINY_A = 1 };
struct nest { struct pair p; union mixed m; matrix x; enum tiny t; void *ptr; };
struct flex { short n; long long data[]; };
struct floats { float f; double d; long double ld; };
"""
NAMES = ["struct pair", "struct packed", "struct tail_pad", "struct bits_only", "union mixed",
         "matrix", "cmatrix", "enum small", "enum tiny", "struct nest", "struct flex",
         "struct floats"]


def gcc_sizes(tmp_path: Path) -> dict[str, tuple[int, int]]:
    """(sizeof, _Alignof) of each of NAMES, as gcc compiles them for this machine."""
    prints = "".join(f'    printf("%zu %zu\\n", sizeof({n}), _Alignof({n}));\n' for n in NAMES)
    source = tmp_path / "sizes.c"
    source.write_text(TYPES_C + "int main(void)\n{\n" + prints + "    return 0;\n}\n")
    program = tmp_path / "sizes"
    subprocess.run([need_tool("gcc"), "-o", str(program), str(source)], check=True)
    out = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    return {n: tuple(map(int, line.split())) for n, line in zip(NAMES, out.splitlines())}


def pahole_btf(tmp_path: Path):
    """The same types as pahole encodes them from gcc's DWARF."""
    source = tmp_path / "types.c"
    source.write_text(TYPES_C + "".join(f"{n} v{i};\n" for i, n in enumerate(NAMES)))
    obj = tmp_path / "types.o"
    subprocess.run([need_tool("gcc"), "-c", "-g", "-o", str(obj), str(source)], check=True)
    subprocess.run([need_tool("pahole"), "-J", "--btf_gen_floats", str(obj)], check=True,
                   capture_output=True)
    return reader.load(str(obj))


def test_sizes_and_alignments_are_gccs(tmp_path):
    expected = gcc_sizes(tmp_path)
    btf = pahole_btf(tmp_path)
    sizes = TypeSizes(btf.all_types(), pointer_size(btf))
    found = {}
    for type_id, t in btf.own():
        name = btf.name(t.name_off)
        word = {f.STRUCT: "struct ", f.UNION: "union ", f.ENUM: "enum "}.get(t.kind, "")
        if word + name in expected and t.kind != f.VAR:
            found[word + name] = sizes.measure(type_id)
    assert pointer_size(btf) == 8
    assert found == expected
