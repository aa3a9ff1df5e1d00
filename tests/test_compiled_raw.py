"""The compiled raw dump (canonbtf/emit/csrc/rawdump.c) against its reference, emit/raw.py.

Judges: the same text, byte for byte, on every corpus BTF (the modules over their
vmlinux) and on random BTF of every kind, plain and split (DATASEC entries naming base
types); the same outcome on damaged blobs (the reader's message, or the same text); the
text in chunks of at most 1 MiB, even for a name longer than that; where the compiled
part does not apply (hand-made Types, a base over a base) the reference runs; a failing
write stops the dump with its error. test_dump_raw.py holds the text to bpftool's.
"""

from __future__ import annotations

import io
import random

import pytest

from canonbtf import native
from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.model import Btf, Type
from canonbtf.btf.strings import StringTable
from canonbtf.cli import main
from canonbtf.emit import raw
from canonbtf.errors import InputError

from . import fuzzing
from .conftest import MODULE_BLOBS, VMLINUX_BLOBS, both_ways, corpus_path
from .test_compiled_order import mutants_end_alike, random_btf
from .test_dump_raw import bpftool_raw, every_kind_and_corner

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "raw_dump") is None,
                                reason="canonbtf._btf is not built (no compiler, PyPy, or "
                                       "CANONBTF_PURE set)")

CHUNK = 1 << 20  # rawdump.c's RAW_CHUNK


class Chunks:
    """A text sink that keeps each write apart, to see the chunks."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def text(self) -> str:
        return "".join(self.parts)


def dumped(btf: Btf) -> tuple[bool, Chunks]:
    """(whether the compiled part wrote it, what was written) for `btf`."""
    out = Chunks()
    if raw._compiled_dump(btf, out):
        return True, out
    raw.dump_raw(btf, out)
    return False, out


def outcome(blob: bytes, base: bytes | None = None) -> tuple[str, str]:
    """("ok", text) or ("error", message) of `blob` read afresh (over a fresh `base`) and
    dumped raw."""
    try:
        btf = reader.parse(blob, "blob", reader.parse(base, "base") if base else None)
    except InputError as e:
        return "error", str(e)
    out = io.StringIO()
    raw.dump_raw(btf, out)
    return "ok", out.getvalue()


def corpus_inputs() -> list:
    return [pytest.param(name, None, id=name) for name in VMLINUX_BLOBS] + [
        pytest.param(name, VMLINUX_BLOBS[0], id=name) for name in MODULE_BLOBS]


@pytest.mark.parametrize(("name", "base_name"), corpus_inputs())
def test_corpus_dumps_match_the_reference(name, base_name, pure):  # noqa: F811
    path = str(corpus_path(name))
    base = str(corpus_path(base_name)) if base_name else None
    pure(True)
    reference = io.StringIO()
    raw.dump_raw(reader.load_with_base(path, base), reference)
    pure(False)
    compiled, out = dumped(reader.load_with_base(path, base))
    assert compiled
    assert out.text() == reference.getvalue()
    assert max(map(len, out.parts)) <= CHUNK
    if base is None:
        assert len(out.parts) > 1


def test_the_corners_match_bpftool(tmp_path):
    """Every value bpftool spells specially (linkages, signed enums, kflag, component_idx)."""
    blob = writer.write(every_kind_and_corner().build())
    path = tmp_path / "corners.btf"
    path.write_bytes(blob)
    compiled, out = dumped(reader.parse(blob, "corners"))
    assert compiled
    assert out.text() == bpftool_raw(path)


@pytest.mark.parametrize("seed", range(40))
def test_random_btf_dumps_alike(seed, pure):  # noqa: F811
    rng = random.Random(seed)
    base = None
    if seed % 2:  # split: DATASEC entries and references reach into the base
        base = writer.write(random_btf(rng, rng.choice([5, 30])))
        btf = random_btf(rng, rng.choice([1, 10, 60]), reader.parse(base))
    else:
        btf = random_btf(rng, rng.choice([1, 10, 60]))
    blob = writer.write(btf, rng.choice("<>"))
    reference, fast = both_ways(pure, outcome, blob, base)
    assert fast[0] == "ok"
    assert fast == reference
    parsed = reader.parse(blob, "blob", reader.parse(base, "base") if base else None)
    assert dumped(parsed)[0]


def split_seed() -> tuple[fuzzing.Seed, bytes]:
    base = writer.write(random_btf(random.Random(9), 40))
    blob = writer.write(random_btf(random.Random(10), 30, reader.parse(base)))
    return fuzzing.Seed("split", blob, reader.parse(base)), base


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-be", "handmade-layout", "split"])
def test_damaged_blobs_dump_alike(seed_name, pure):  # noqa: F811
    base = None
    if seed_name == "split":
        seed, base = split_seed()
    elif seed_name == "handmade-layout":
        seed = fuzzing.layout_seed()
    else:
        seed = fuzzing.handmade_seed("<" if seed_name == "handmade" else ">")
    mutants_end_alike(pure, seed, outcome, 250, base)


def long_named_btf() -> Btf:
    """A name longer than a chunk, among members and enumerators."""
    long_name = "n" * (CHUNK + CHUNK // 2)
    strings, offset = StringTable.build([long_name, "int", "x\xe9"])
    types = [Type(f.INT, offset["int"], 0, 4, 0x01000020),
             Type(f.STRUCT, offset[long_name], 0, 4, 0, [(offset["x\xe9"], 1, 0)]),
             Type(f.ENUM, offset["x\xe9"], 1, 4, 0, [(offset[long_name], 0xFFFFFFFF)])]
    return Btf(types, strings)


def test_a_name_longer_than_a_chunk(pure):  # noqa: F811
    blob = writer.write(long_named_btf())
    reference, fast = both_ways(pure, outcome, blob)
    assert fast == reference
    compiled, out = dumped(reader.parse(blob))
    assert compiled
    assert max(map(len, out.parts)) <= CHUNK < len(out.text())


def test_the_reference_runs_where_the_compiled_part_does_not_apply():
    """Types made by hand (not the reader's words) and a base over a base."""
    btf = long_named_btf()
    assert not dumped(btf)[0]
    blob = writer.write(btf)
    btf = reader.parse(blob)
    assert btf.types and btf.packed is None  # decoded: the packed words are gone
    assert not dumped(btf)[0]
    bottom = reader.parse(writer.write(random_btf(random.Random(1), 20)))
    middle = reader.parse(writer.write(random_btf(random.Random(2), 20, bottom)), base=bottom)
    top = reader.parse(writer.write(random_btf(random.Random(3), 20, middle)), base=middle)
    assert not dumped(top)[0]


def test_a_failing_write_stops_the_dump():
    btf = reader.load_with_base(str(corpus_path(VMLINUX_BLOBS[0])), None)
    written = []

    def write(text: str) -> None:
        written.append(text)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        raw.dump_raw(btf, type("Sink", (), {"write": staticmethod(write)})())
    assert len(written) == 1


def test_a_full_disk_is_the_same_clean_error(tmp_path, capsys, pure):  # noqa: F811
    blob = tmp_path / "in.btf"
    blob.write_bytes(writer.write(fuzzing.handmade_btf()))

    def run() -> tuple[int, str]:
        status = main(["dump", str(blob), "--format", "raw", "-o", "/dev/full"])
        return status, capsys.readouterr().err

    reference, fast = both_ways(pure, run)
    assert fast == reference
    assert fast[0] == 2 and fast[1].count("\n") == 1 and "/dev/full" in fast[1]


def test_bad_arguments_are_value_errors():
    module = native.compiled("canonbtf._btf", "raw_dump")
    base = random_btf(random.Random(1), 5)
    base_view = module.c_view(writer.section_words(base), 1, base.string_sections())
    split = random_btf(random.Random(2), 5, base)
    words, sections = writer.section_words(split), split.string_sections()
    module.raw_dump(module.c_view(words, split.first_id, sections), base_view, Chunks().write)
    shifted = module.c_view(words, split.first_id + 1, sections)
    with pytest.raises(ValueError):
        module.raw_dump(shifted, base_view, print)  # the base does not end where it starts
    with pytest.raises(ValueError):
        module.raw_dump(words, None, print)  # not a view
