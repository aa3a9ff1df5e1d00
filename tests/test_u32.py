"""canonbtf/u32.py, the compiled parts' u32s without the array module, held to array('I')
(the judge: what the C read before), and what a kernel module's run imports because of it."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from array import array

import pytest

from canonbtf import native, u32
from canonbtf.btf import writer
from canonbtf.dwarf.encode import encode_file

from .conftest import REPO

GOLDEN = REPO / "golden" / "obj"


@pytest.mark.parametrize("seed", range(5))
def test_pack_gives_arrays_bytes(seed):
    rng = random.Random(seed)
    values = [rng.choice([0, 1, 2**31, 2**32 - 1, rng.randrange(2**32)])
              for _ in range(rng.randrange(0, 3000))]
    expected = array("I", values).tobytes()
    assert u32.pack(values) == expected
    assert u32.pack(tuple(values)) == expected
    assert u32.pack(v for v in values) == expected
    assert u32.pack(dict.fromkeys(values)) == array("I", dict.fromkeys(values)).tobytes()
    assert u32.pack(array("I", values)) == expected
    assert u32.pack(u32.view(expected)) == expected


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "1", None])
def test_pack_refuses_what_no_u32_holds(bad):
    with pytest.raises((OverflowError, TypeError)):
        array("I", [3, bad])  # the judge refuses it too
    with pytest.raises(OverflowError):
        u32.pack([3, bad])


def test_view_reads_bytes_and_arrays_in_place():
    values = [5, 0, 2**32 - 1, 7]
    raw = array("I", values).tobytes()
    for source in (raw, bytearray(raw), array("I", values)):
        seen = u32.view(source)
        assert seen.format == "I" and seen.tolist() == values and len(seen) == 4
        assert u32.is_view(seen)
    assert u32.is_view(array("I", values))
    for other in (raw, values, array("H", [1]), array("Q", [1]), None):
        assert not u32.is_view(other)


@pytest.mark.parametrize("order", ["<", ">"])
def test_in_host_order_reads_either_byte_order(order):
    values = [0, 1, 0x01020304, 2**32 - 1]
    raw = struct.pack(f"{order}4I", *values)
    assert u32.in_host_order(raw, order).tolist() == values
    assert u32.in_host_order(u32.pack(values), order).tobytes() == raw  # and back


def test_a_module_run_imports_neither_array_nor_collections(tmp_path):
    """canonbtf-pahole's run on a module over a base, compiled, in a process of its own:
    importing `array` imports `collections` (about 6 % of a small module's whole run), so
    neither may come in with canonbtf. Skipped where the interpreter's start imported
    them already (a site hook) or the compiled parts are not built."""
    if native.compiled("canonbtf._btf", "order") is None:
        pytest.skip("the compiled parts are not built (or CANONBTF_PURE is set)")
    base = tmp_path / "vmlinux.BTF"
    base.write_bytes(writer.write(encode_file(str(GOLDEN / "funcs.gcc-dwarf5.o"), 1)[0]))
    out = tmp_path / "mod.BTF"
    script = f"""
import sys
early = {{"array", "collections"}} & set(sys.modules)
from canonbtf.pahole import front
status = front.main(["-J", "-j", "--btf_base", {str(base)!r},
                     "--btf_encode_detached={out}", {str(GOLDEN / "funcs_b.gcc-dwarf5.o")!r}])
print(status, sorted(early), sorted({{"array", "collections"}} & set(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, check=True)
    status, early, late = done.stdout.split(" ", 2)
    if early != "[]":
        pytest.skip(f"the interpreter's start imported {early} already")
    assert status == "0" and out.stat().st_size > 0
    assert late.strip() == "[]", done.stdout
