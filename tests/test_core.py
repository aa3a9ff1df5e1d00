"""The compiled encode core against the pure-Python reference (canonbtf/dwarf/core.py).

Both must give the same records and keys per unit, the same bytes for whole files
(golden objects, a module over its base, a sample of a real kernel), and the same outcome
on damaged input: the same exit status, message and output. Units the compiled core
gives up go through the pure path and still come out the same.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from array import array
from pathlib import Path

import pytest

from canonbtf.btf import writer
from canonbtf.dwarf import core
from canonbtf.dwarf.convert import ConvertContext, Skips, convert_unit
from canonbtf.dwarf.dies import DieReader
from canonbtf.dwarf.encode import _Worker, context_for, encode_dwarf, encode_file
from canonbtf.dwarf.features import DEFAULT
from canonbtf.dwarf.keys import KeyPool, PackedEntries
from canonbtf.dwarf.sections import DwarfFile, list_units, open_dwarf

from . import fuzzing
from .conftest import FETCHED_DEBUG, REPO, both_ways, fetched_kernel, fetched_kernel_sample

GOLDEN_OBJECTS = sorted((REPO / "golden" / "obj").glob("*.o"))
TIMES = re.compile(r"\b\d+\.\d+s\b")
MODULE = (FETCHED_DEBUG / "lib" / "modules" / "6.1.0-56-cloud-amd64" / "kernel" / "drivers"
          / "net" / "virtio_net.ko")

pytestmark = pytest.mark.skipif(core.compiled_module() is None,
                                reason="the compiled core is not built (pure Python only)")


def compare_units(dwarf, units) -> set[int]:
    """Records, skips and keys of each unit from both cores; the kinds of the records."""
    context = context_for(dwarf, DEFAULT)
    encoder = core.new_encoder(dwarf, context)
    reader = DieReader(dwarf)
    pool = KeyPool()
    kinds: set[int] = set()
    for unit in units:
        skips = Skips()
        records = convert_unit(reader.read_unit(unit), dwarf.little_endian, skips, context)
        kinds.update(record[0] for record in records[1:])
        pool.add_unit(records, unit)
        assert encoder.records(core.unit_fields(unit)) == records, hex(unit.offset)
        encoder.add_keys(core.unit_fields(unit))
        reasons, tags, dies = encoder.take_counts()
        # records() and add_keys() each counted the unit once
        assert {k: v // 2 for k, v in reasons.items()} == skips.counts
    fragment = pool.fragment(0, 0, {})
    packed, unit_keys = encoder.take_fragment()
    assert PackedEntries(*packed).unpacked() == fragment.entries
    assert [(o, sorted(array("I", k))) for o, k in unit_keys] == \
        [(o, sorted(k)) for o, k in fragment.unit_keys]
    return kinds


@pytest.mark.parametrize("path", GOLDEN_OBJECTS, ids=lambda p: p.name)
def test_records_and_keys_agree_on_golden_objects(path):
    dwarf = open_dwarf(str(path))
    compare_units(dwarf, dwarf.units)


@pytest.mark.parametrize("path", GOLDEN_OBJECTS, ids=lambda p: p.name)
def test_same_bytes_on_golden_objects(path, pure):
    reference, compiled = both_ways(pure, lambda: writer.write(encode_file(str(path), 1)[0]))
    assert compiled == reference


def test_kernel_sampled_units_agree():
    """Records and keys of every 100th unit of the 6.1 kernel, unit by unit."""
    dwarf = fetched_kernel_sample(100)
    compare_units(dwarf, dwarf.units)


def test_kernel_every_8th_unit_same_bytes(pure):
    """272 of the 6.1 kernel's 2,172 units, whole encode, both cores."""
    dwarf = fetched_kernel_sample(8)
    reference, compiled = both_ways(pure, lambda: writer.write(encode_dwarf(dwarf, 2)[0]))
    assert compiled == reference


@pytest.mark.parametrize("jobs,seed", [(1, None), (2, 5)])
def test_module_over_its_base_same_bytes(jobs, seed, pure):
    if not MODULE.exists():
        pytest.skip(f"{MODULE} not fetched (MODULES=drivers/net/virtio_net.ko "
                    "../shared/tools/fetch-kernel-dbg)")
    from canonbtf.btf import reader as btf_reader

    base = btf_reader.load(str(fetched_kernel()))

    def encode() -> bytes:
        dwarf = open_dwarf(str(MODULE))
        return writer.write(encode_dwarf(dwarf, jobs, seed, base=base)[0])

    reference, compiled = both_ways(pure, encode)
    assert compiled == reference


def chained_typedefs(directory: Path, depth: int) -> Path:
    """An object whose types nest `depth` typedefs deep (past the core's MAX_DEPTH)."""
    # clang writes a type's DIE before those it refers to, so numbering recurses
    compiler = shutil.which("clang")
    if compiler is None:
        pytest.skip("clang not installed")
    lines = ["typedef int t0;"]
    lines += [f"typedef t{i - 1} t{i};" for i in range(1, depth)]
    lines.append(f"t{depth - 1} deep_value; struct s {{ t{depth - 1} x; }} deep_struct;")
    source = directory / "deep.c"
    source.write_text("\n".join(lines) + "\n")
    obj = directory / "deep.o"
    subprocess.run([compiler, "-g", "-c", str(source), "-o", str(obj)], check=True)
    return obj


@pytest.mark.parametrize("keyed", [True, False])
def test_a_unit_the_core_gives_up_goes_the_pure_way(tmp_path, keyed, pure):
    obj = chained_typedefs(tmp_path, core.compiled_module().MAX_DEPTH + 50)
    dwarf = open_dwarf(str(obj))
    worker = _Worker(dwarf, "fast", context_for(dwarf, DEFAULT), keyed=keyed)
    fragments = worker.encode_batch(dwarf.units)
    assert worker.fallbacks == 1
    if keyed:
        assert [pool for pool, _ in fragments] == [0, 1]
    reference, compiled = both_ways(pure, lambda: writer.write(encode_file(str(obj), 1)[0]))
    assert compiled == reference
    assert b"deep_struct" not in compiled and b"t249" in compiled


@pytest.mark.parametrize("index", range(60))
def test_damaged_objects_same_outcome(index, tmp_path, pure):
    """A damaged golden object: the same exit status, message and bytes from both."""
    rnd = random.Random(index)
    paths = [REPO / "golden" / "obj" / name for name in fuzzing.GOLDEN_OBJECTS]
    seed = fuzzing.ElfSeed(rnd.choice([p for p in paths if p.exists()]))
    data, mutation = fuzzing.mutate_object(seed, rnd)
    path = tmp_path / "input.o"
    path.write_bytes(data)
    out = tmp_path / "out.btf"

    def run() -> tuple:
        if out.exists():
            out.unlink()
        outcome = fuzzing.run_in_process(["encode", "-j", "1", str(path), "-o", str(out)], 60)
        assert outcome.error is None, outcome.error
        # The summary line's times differ from run to run (0.0s / 0.1s on a loaded host).
        first = [TIMES.sub("Ts", line) for line in outcome.stderr.splitlines()[:1]]
        return (outcome.status, first, out.read_bytes() if out.exists() else None)

    reference, compiled = both_ways(pure, run)
    assert compiled == reference, mutation


def handmade_dwarf(abbrev: bytes, dies: bytes) -> DwarfFile:
    """A DWARF 4 unit of `dies` over the abbreviation table `abbrev` (no ELF around it)."""
    body = (4).to_bytes(2, "little") + bytes(4) + bytes([8]) + dies
    info = len(body).to_bytes(4, "little") + body
    dwarf = DwarfFile("handmade", True, "ET_REL",
                      {".debug_info": info, ".debug_abbrev": abbrev}, None)
    dwarf.units = list_units(dwarf)
    return dwarf


def test_children_of_a_child_without_attributes():
    """A prototype's DW_TAG_unspecified_parameters with a child of its own: the pure
    reader crashed on it (tools/fuzz_core.py found it); both cores read it alike."""
    abbrev = bytes([
        1, 0x11, 1, 0, 0,  # compile_unit, children, no attributes
        2, 0x15, 1, 0, 0,  # subroutine_type, children
        3, 0x18, 1, 0x03, 0x08, 0, 0,  # unspecified_parameters, children, a name (string)
        4, 0x05, 0, 0, 0,  # formal_parameter
        0])
    dwarf = handmade_dwarf(abbrev, bytes([1, 2, 3]) + b"x\0" + bytes([4, 0, 0, 0]))
    context = ConvertContext(DEFAULT, None)
    records = convert_unit(DieReader(dwarf).read_unit(dwarf.units[0]), True, Skips(), context)
    assert records[1] == (13, "", 0, 0, 0, (("", 0),))  # FUNC_PROTO (...) returning void
    encoder = core.new_encoder(dwarf, context)
    assert encoder.records(core.unit_fields(dwarf.units[0])) == records
