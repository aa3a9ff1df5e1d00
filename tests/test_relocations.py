"""Relocations of debug sections in relocatable objects (sections.py `_relocated`): the
compiled core's `relocate` and the pure `apply_relocations`.

Judges: pyelftools' RelocationHandler (its own reading of the ELF relocation types) on
every golden object and on a fetched module, and, for damaged or unknown entries, the
pure function (the same bytes, or the same refusal).
"""

from __future__ import annotations

import io
import random
import struct

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationHandler

from canonbtf.dwarf.core import compiled_module
from canonbtf.dwarf.sections import _ABSOLUTE_RELOCATIONS, SECTION_NAMES, apply_relocations

from .conftest import FETCHED_DEBUG, REPO

GOLDEN = sorted((REPO / "golden" / "obj").glob("*.o"))
VIRTIO = (FETCHED_DEBUG / "lib" / "modules" / "6.1.0-56-cloud-amd64" / "kernel" / "drivers"
          / "net" / "virtio_net.ko")
SIZES = _ABSOLUTE_RELOCATIONS["EM_X86_64"]


def core():
    module = compiled_module()
    if module is None:
        pytest.skip("the compiled core is not built or CANONBTF_PURE is set")
    return module


def _debug_relocations(path):
    """(section bytes, RELA bytes, symbol table bytes, what pyelftools makes) per debug
    section of `path` that has relocations."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        handler = RelocationHandler(elf)
        for name in SECTION_NAMES:
            section = elf.get_section_by_name(name)
            reloc = section and handler.find_relocations_for_section(section)
            if not reloc:
                continue
            stream = io.BytesIO(section.data())
            handler.apply_section_relocations(stream, reloc)
            symtab = elf.get_section(reloc["sh_link"]).data()
            yield name, section.data(), reloc.data(), symtab, stream.getvalue()


@pytest.mark.parametrize("path", GOLDEN + [VIRTIO], ids=lambda p: p.name)
def test_both_apply_what_pyelftools_applies(path):
    if not path.exists():
        pytest.skip(f"{path} not fetched (../shared/tools/fetch-kernel-dbg)")
    module = compiled_module()
    seen = 0
    for name, data, entries, symtab, judged in _debug_relocations(path):
        assert apply_relocations(data, entries, symtab, True, SIZES) == judged, name
        if module is not None:
            assert module.relocate(data, entries, symtab, True, SIZES) == judged, name
        seen += 1
    assert seen, "no relocated debug section: the judge compared nothing"


def _entry(order: str, offset: int, kind: int, symbol: int, addend: int) -> bytes:
    return struct.pack(order + "QQq", offset, symbol << 32 | kind, addend)


def _random_entry(rng: random.Random, order: str, size: int, symbols: int) -> bytes:
    """Mostly an entry that applies; one in ten each with an unknown type, a symbol past
    the table or a place that ends past the section."""
    damage = rng.randrange(10)
    kind = 0x7fffffff if damage == 0 else rng.choice([1, 10, 11])
    symbol = symbols + rng.randrange(3) if damage == 1 or not symbols else rng.randrange(symbols)
    width = SIZES[kind] if kind in SIZES else 4
    offset = (rng.randrange(max(1, size - width + 1), size + 9) if damage == 2
              else rng.randrange(max(1, size - width + 1)))
    return _entry(order, offset, kind, symbol, rng.randrange(-(1 << 63), 1 << 63))


@pytest.mark.parametrize("little_endian", [True, False])
def test_damaged_and_unknown_entries_are_refused_alike(little_endian):
    """Random entries, some with an unknown type, a symbol past the table, a place at or
    past the section's end, huge addends: the same bytes or the same None."""
    module = core()
    order = "<" if little_endian else ">"
    rng = random.Random(7)
    refused = applied = 0
    for _ in range(1000):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
        symbols = rng.randrange(0, 5)
        symtab = b"".join(struct.pack(order + "IBBHQQ", 0, 0, 0, 0,
                                      rng.randrange(1 << 64), 0) for _ in range(symbols))
        symtab += bytes(rng.randrange(24))  # a torn last symbol is not a symbol
        entries = b"".join(_random_entry(rng, order, len(data), symbols)
                           for _ in range(rng.randrange(0, 6)))
        entries += bytes(rng.randrange(24))  # so is a torn last entry
        ours = module.relocate(data, entries, symtab, little_endian, SIZES)
        assert ours == apply_relocations(data, entries, symtab, little_endian, SIZES)
        refused += ours is None
        applied += ours is not None and ours != data
    assert refused > 100 and applied > 100, (refused, applied)


def test_a_bad_size_table_is_an_error_not_a_crash():
    module = core()
    with pytest.raises(ValueError):
        module.relocate(b"", b"", b"", True, {1: 3})
    with pytest.raises(ValueError):
        module.relocate(b"", b"", b"", True, {n: 4 for n in range(9)})
    with pytest.raises(TypeError):
        module.relocate(b"", b"", b"", True, [1])
