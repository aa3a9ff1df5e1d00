"""One unit's DWARF to BTF records (canonbtf/dwarf/convert.py), on objects gcc and clang
compile here at DWARF 4 and 5.

The expectations come from outside the converter: sizes and member offsets from a
program gcc compiles with `sizeof` and `offsetof`, bit-fields and values from the C
source, which DIEs a compiler emitted from `readelf --debug-dump=info`, and the
converter's own contract (docs in convert.py): records numbered from 1 in DIE order with
0 for void, a unit converted alike wherever it is linked.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.dwarf.convert import ConvertContext, Skips, convert_unit
from canonbtf.dwarf.dies import DieReader
from canonbtf.dwarf.features import DEFAULT
from canonbtf.dwarf.sections import open_dwarf
from canonbtf.spec import dwarf_numbers as c
from canonbtf.spec import kinds as spec

from .conftest import REPO, need_tool

SOURCE = """\
#include <stddef.h>
struct pair { int a; char b:3; unsigned c:5; long d; };
union u { char c[3]; short s; };
typedef int matrix[3][4];
enum neg { N_MINUS = -1, N_ONE = 1 };
enum big { B_HUGE = 0x100000000ULL };
struct opaque;
typedef int (*callback)(int, ...);
typedef int (*nothing)(void);
struct holder {
	struct pair p;
	matrix m;
	enum neg e;
	enum big b;
	union u uu;
	const volatile int *cvp;
	callback cb;
	nothing n;
	struct opaque *op;
	struct { int inner; } anon;
	_Atomic int at;
	_Complex double z;
	_Complex double *zp;
};
struct holder h;
"""
HOLDER_MEMBERS = ["p", "m", "e", "b", "uu", "cvp", "cb", "n", "op", "anon", "at", "zp"]
COMPILERS = [pytest.param(cc, version, id=f"{cc}-dwarf{version}")
             for cc in ("gcc", "clang") for version in (4, 5)]
# Types only: functions and variables need the symbol table and the parent's decisions.
TYPES = ConvertContext(DEFAULT - {"func", "var", "global_var"})


class Unit:
    """The records of an object's first unit, looked up by name and followed by number."""

    def __init__(self, path: Path, context: ConvertContext = TYPES):
        dwarf = open_dwarf(str(path))
        self.skips = Skips()
        self.records = convert_unit(DieReader(dwarf).read_unit(dwarf.units[0]),
                                    dwarf.little_endian, self.skips, context)

    def named(self, kind: int, name: str) -> tuple:
        found = [r for r in self.records[1:] if r[0] == kind and r[1] == name]
        assert len(found) == 1, (kind, name, found)
        return found[0]

    def at(self, number: int) -> tuple | None:
        return self.records[number]

    def int_of(self, number: int) -> tuple[int, bool]:
        """(size, signed) of the INT record `number`."""
        kind, _, _, size, encoding, _ = self.records[number]
        assert kind == f.INT
        return size, bool((encoding >> 24) & f.INT_SIGNED)


def compile_object(tmp_path: Path, cc: str, version: int) -> Path:
    source = tmp_path / "conv.c"
    source.write_text(SOURCE)
    obj = tmp_path / f"conv-{cc}-{version}.o"
    subprocess.run([need_tool(cc), "-c", "-O0", "-g", f"-gdwarf-{version}", "-o", str(obj),
                    str(source)], check=True)
    return obj


def c_layout(tmp_path: Path) -> dict[str, int]:
    """sizeof of the aggregates and offsetof of holder's members, from gcc."""
    queries = {"sizeof pair": "sizeof(struct pair)", "sizeof u": "sizeof(union u)",
               "sizeof holder": "sizeof(struct holder)",
               "offsetof pair.d": "offsetof(struct pair, d)"}
    queries.update({f"offsetof {m}": f"offsetof(struct holder, {m})" for m in HOLDER_MEMBERS})
    body = "".join(f'\tprintf("%zu\\n", {q});\n' for q in queries.values())
    source = tmp_path / "layout.c"
    source.write_text("#include <stdio.h>\n" + SOURCE + "int main(void)\n{\n" + body
                      + "\treturn 0;\n}\n")
    program = tmp_path / "layout"
    subprocess.run([need_tool("gcc"), "-o", str(program), str(source)], check=True)
    out = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    return dict(zip(queries, map(int, out.split())))


def emitted_atomic(path: Path) -> bool:
    out = subprocess.run([need_tool("readelf"), "--debug-dump=info", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return "DW_TAG_atomic_type" in out


@pytest.mark.parametrize("cc,version", COMPILERS)
def test_records_have_the_compilers_layout(tmp_path, cc, version):
    unit = Unit(compile_object(tmp_path, cc, version))
    layout = c_layout(tmp_path)
    pair = unit.named(f.STRUCT, "pair")
    assert pair[2] == 1 and pair[3] == layout["sizeof pair"]  # kind_flag: it has bit-fields
    members = [(name, word & 0xFFFFFF, word >> 24, unit.int_of(t)) for name, t, word in pair[5]]
    assert members == [("a", 0, 0, (4, True)), ("b", 32, 3, (1, True)),
                       ("c", 35, 5, (4, False)), ("d", 8 * layout["offsetof pair.d"], 0,
                                                  (8, True))]
    holder = unit.named(f.STRUCT, "holder")
    assert holder[3] == layout["sizeof holder"]
    # `z` (a complex double) has no BTF form: left out, the others where gcc puts them.
    assert [(name, offset) for name, _, offset in holder[5]] == [
        (m, 8 * layout[f"offsetof {m}"]) for m in HOLDER_MEMBERS]
    union = unit.named(f.UNION, "u")
    assert union[3] == layout["sizeof u"]
    assert all(offset == 0 for _, _, offset in union[5])


@pytest.mark.parametrize("cc,version", COMPILERS)
def test_references_follow_the_c_declarations(tmp_path, cc, version):
    unit = Unit(compile_object(tmp_path, cc, version))
    member = {name: t for name, t, _ in unit.named(f.STRUCT, "holder")[5]}
    # matrix: one ARRAY of all 12 ints, indexed by the unit's int.
    array = unit.at(unit.named(f.TYPEDEF, "matrix")[3])
    elem, index, nelems = array[4]
    assert array[0] == f.ARRAY and nelems == 12
    assert unit.int_of(elem) == (4, True) and unit.at(index)[1] == "int"
    # const volatile int *: a PTR to the two qualifiers (in the compiler's order) to int.
    ptr = unit.at(member["cvp"])
    first = unit.at(ptr[3])
    second = unit.at(first[3])
    assert ptr[0] == f.PTR and {first[0], second[0]} == {f.CONST, f.VOLATILE}
    assert unit.int_of(second[3]) == (4, True)
    # A prototype with `...` ends with the {0, void} item; one with (void) has no items.
    callback = unit.at(unit.at(unit.named(f.TYPEDEF, "callback")[3])[3])
    assert callback[0] == f.FUNC_PROTO and unit.int_of(callback[3]) == (4, True)
    assert [unit.int_of(t) if t else t for _, t in callback[5]] == [(4, True), 0]
    nothing = unit.at(unit.at(unit.named(f.TYPEDEF, "nothing")[3])[3])
    assert nothing[0] == f.FUNC_PROTO and nothing[5] == ()
    # A struct only declared is a FWD; a pointer to a skipped type points to void.
    assert unit.at(unit.at(member["op"])[3])[:3] == (f.FWD, "opaque", 0)
    assert unit.at(member["zp"])[:4] == (f.PTR, "", 0, 0)
    assert unit.at(member["anon"])[:2] == (f.STRUCT, "")
    assert unit.int_of(member["at"]) == (4, True)


@pytest.mark.parametrize("cc,version", COMPILERS)
def test_enums_by_sign_and_size(tmp_path, cc, version):
    path = compile_object(tmp_path, cc, version)
    unit = Unit(path)
    assert unit.named(f.ENUM, "neg")[2:] == (1, 4, 0, (("N_MINUS", 0xFFFFFFFF), ("N_ONE", 1)))
    assert unit.named(f.ENUM64, "big")[2:] == (0, 8, 0, (("B_HUGE", 1 << 32),))
    without = Unit(path, ConvertContext(TYPES.features - {"enum64"}))
    assert without.named(f.ENUM, "big")[3:] == (8, 0, (("B_HUGE", 0),))  # truncated


@pytest.mark.parametrize("cc,version", COMPILERS)
def test_what_btf_cannot_hold_is_counted(tmp_path, cc, version):
    path = compile_object(tmp_path, cc, version)
    unit = Unit(path)
    expected = {"complex float base type": 1, "member of a skipped type left out": 1}
    if emitted_atomic(path):
        expected["_Atomic qualifier dropped"] = 1
    assert unit.skips.counts == expected


@pytest.mark.parametrize("cc,version", COMPILERS)
def test_records_are_numbered_from_one_with_void_zero(tmp_path, cc, version):
    records = Unit(compile_object(tmp_path, cc, version)).records
    assert records[0] is None and all(r is not None for r in records[1:])
    for kind, _, _, size_or_type, extra, items in records[1:]:
        refs = []
        if kind in spec.TYPED:
            refs.append(size_or_type)
        if kind == f.ARRAY:
            refs += extra[:2]
        if kind in (f.STRUCT, f.UNION, f.FUNC_PROTO):
            refs += [item[1] for item in items]
        assert all(0 <= r < len(records) for r in refs)


def test_a_unit_converts_alike_alone_and_linked():
    """multi.o is multi_a.o and multi_b.o linked (`ld -r`): each unit's records are the
    same as from its own object, though the second unit sits at another offset there."""
    golden = REPO / "golden" / "obj"
    linked = open_dwarf(str(golden / "multi.gcc-dwarf5.o"))
    assert len(linked.units) == 2 and linked.units[1].offset != 0
    reader = DieReader(linked)
    for unit, part in zip(linked.units, ("multi_a", "multi_b")):
        alone = Unit(golden / f"{part}.gcc-dwarf5.o")
        records = convert_unit(reader.read_unit(unit), linked.little_endian, Skips(), TYPES)
        assert len(records) > 1 and records == alone.records


def test_children_come_in_the_order_the_converter_unpacks():
    """numbering.py, type_records.py and convert.py unpack a child's fields by position;
    every child the fast reader gives on the golden objects has exactly its fields."""
    assert c.CHILD_FIELDS[c.TAG_member] == (
        c.AT_name, c.AT_type, c.AT_data_member_location,
        (c.AT_data_bit_offset, c.AT_bit_offset, c.AT_bit_size, c.AT_byte_size,
         c.AT_declaration, c.AT_external),
        c.ANNOTATIONS)
    assert c.CHILD_FIELDS[c.TAG_formal_parameter] == (c.AT_name, c.AT_type, c.AT_location,
                                                      c.AT_abstract_origin, c.ANNOTATIONS)
    assert c.CHILD_FIELDS[c.TAG_enumerator] == (c.AT_name, c.AT_const_value, c.ANNOTATIONS)
    assert c.CHILD_FIELDS[c.TAG_LLVM_annotation] == (c.AT_name, c.AT_const_value,
                                                     c.ANNOTATIONS)
    assert c.CHILD_FIELDS[c.TAG_subrange_type] == (c.AT_type, c.AT_lower_bound,
                                                   c.AT_upper_bound, c.AT_count, c.ANNOTATIONS)
    annotated = groups = 0
    for path in sorted((REPO / "golden" / "obj").glob("*.o")):
        dwarf = open_dwarf(str(path))
        reader = DieReader(dwarf)
        for unit in dwarf.units:
            children = [child for die in reader.read_unit(unit).types.values()
                        for child in die.children]
            while children:
                tag, fields = children.pop()
                assert fields.__class__ is tuple
                assert len(fields) == len(c.CHILD_FIELDS[tag]), (path.name, tag)
                for field, value in zip(c.CHILD_FIELDS[tag], fields):
                    if isinstance(field, tuple) and value is not None:
                        assert len(value) == len(field) and value != (None,) * len(field)
                        groups += 1
                if fields[-1] is not None:
                    annotated += 1
                    children.extend(fields[-1])
    assert annotated  # clang's btf_decl_tag on members and parameters
    assert groups  # bit-fields
