"""`dump --format raw` against bpftool 7.1's own text, byte for byte."""

from __future__ import annotations

import io
import subprocess

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.cli import main
from canonbtf.emit.raw import dump_raw

from .conftest import load_cached, need_tool, real_inputs, resolve_input


def bpftool_raw(path, base=None) -> str:
    cmd = [need_tool("bpftool")]
    if base is not None:
        cmd += ["-B", str(base)]
    cmd += ["btf", "dump", "file", str(path), "format", "raw"]
    done = subprocess.run(cmd, capture_output=True, check=True)
    return done.stdout.decode("latin-1")


def our_raw(btf) -> str:
    out = io.StringIO()
    dump_raw(btf, out)
    return out.getvalue()


def first_difference(expected: str, actual: str) -> str:
    for n, (a, b) in enumerate(zip(expected.splitlines(), actual.splitlines()), 1):
        if a != b:
            return f"line {n}: bpftool {a!r}, ours {b!r}"
    return f"line counts differ: bpftool {expected.count(chr(10))}, ours {actual.count(chr(10))}"


@pytest.mark.parametrize("name", real_inputs())
def test_raw_dump_matches_bpftool(name):
    path, base = resolve_input(name)
    expected = bpftool_raw(path, base)
    actual = our_raw(load_cached(path, base))
    assert actual == expected, first_difference(expected, actual)


def every_kind_and_corner() -> BtfBuilder:
    """Each kind, with the values bpftool spells specially (odd linkages, signed enums...)."""
    b = BtfBuilder()
    i32 = b.int("int", 4, f.INT_SIGNED)
    b.int("char", 1, f.INT_CHAR)
    b.int("_Bool", 1, f.INT_BOOL)
    b.int("odd", 4, f.INT_SIGNED | f.INT_CHAR)
    b.int("narrow", 4, 0, bits=3, offset=2)
    b.enum("sign", 4, [("MINUS", -1), ("PLUS", 5)], signed=True)
    b.enum("sign64", 8, [("MINUS", -1), ("BIG", 1 << 40)], signed=True)
    b.enum("max64", 8, [("ALL", 2**64 - 1)])
    b.struct("bits", 8, [("a", i32, 0, 3), ("b", i32, 3, 5), ("c", i32, 32)])
    b.struct("either", 4, [("a", i32, 0)], union=True)
    b.fwd("fwd_union", union=True)
    b.fwd("fwd_struct")
    proto = b.func_proto(i32, [("x", i32), ("", 0)])
    for linkage, name in enumerate(("fs", "fg", "fe", "fx")):
        b.func(name, proto, linkage)
    variables = [b.var(f"v{linkage}", i32, linkage) for linkage in (0, 1, 2, 7)]
    b.datasec(".data", 16, [(variables[0], 0, 4), (variables[1], 4, 4), (0, 8, 4),
                            (variables[2], 12, 4)])
    b.float("double", 8)
    b.decl_tag("tag", i32, -1)
    b.decl_tag("attr", i32, 0, attribute=True)
    b.type_tag("user", i32)
    b.type_tag("attr", i32, attribute=True)
    b.modifier(f.RESTRICT, i32)
    b.modifier(f.VOLATILE, i32)
    b.array(i32, i32, 7)
    b.typedef("T", i32)
    b.struct("caf\xe9", 0, [])
    return b


def test_hand_made_corners_match_bpftool(tmp_path):
    btf = every_kind_and_corner().build()
    blob = tmp_path / "corners.btf"
    blob.write_bytes(writer.write(btf))
    expected = bpftool_raw(blob)
    assert our_raw(btf) == expected, first_difference(expected, our_raw(btf))


def test_cli_raw_output_file(tmp_path, capsys):
    btf = every_kind_and_corner().build()
    blob = tmp_path / "corners.btf"
    blob.write_bytes(writer.write(btf))
    out = tmp_path / "corners.txt"
    assert main(["dump", str(blob), "--format", "raw", "-o", str(out)]) == 0
    assert out.read_bytes().decode("latin-1") == our_raw(btf)
    assert "caf\xe9".encode("latin-1") in out.read_bytes()
