#!/usr/bin/env python3
"""Coverage-guided fuzzing of the compiled encode core (atheris, i.e. libFuzzer).

Each input damages one golden object's .debug_info or .debug_abbrev (bytes overwritten
at a chosen place, or the section cut short); every unit then goes through the compiled
core. A unit it gives up (CoreFallback) is fine; a unit it encodes must encode the same
under the pure path, record for record, or the run stops with the input saved. Built
with -fsanitize=fuzzer-no-link,address,undefined, libFuzzer steers by the core's
coverage and the sanitizers stop it at the first bad read:

    CC=clang LDSHARED="clang -shared" CANONBTF_SANITIZE=fuzzer \\
        python3 setup.py build_ext --inplace --force
    LD_PRELOAD="$(python3 -c 'import atheris; print(atheris.path())')/asan_with_fuzzer.so" \\
        ASAN_OPTIONS=detect_leaks=0 python3 tools/fuzz_core.py -max_total_time=600
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import atheris

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from canonbtf.dwarf import core  # noqa: E402
from canonbtf.dwarf.convert import Skips, convert_unit  # noqa: E402
from canonbtf.dwarf.dies import DieReader  # noqa: E402
from canonbtf.dwarf.encode import context_for  # noqa: E402
from canonbtf.dwarf.features import DEFAULT  # noqa: E402
from canonbtf.dwarf.sections import open_dwarf  # noqa: E402
from canonbtf.dwarf.unit_types import DwarfFormatError  # noqa: E402

SEEDS = ["multi.gcc-dwarf5.o", "arrays.clang-dwarf4.o", "bitfields.gcc-dwarf4.o",
         "funcptr.clang-dwarf5.o", "kfuncs.clang-dwarf5.o", "enums.gcc-dwarf4.o"]
DWARFS = [open_dwarf(str(REPO / "golden" / "obj" / name)) for name in SEEDS]


def damaged(data: bytes, fdp: atheris.FuzzedDataProvider) -> bytes:
    if fdp.ConsumeBool():
        return data[:fdp.ConsumeIntInRange(0, len(data))]
    at = fdp.ConsumeIntInRange(0, len(data))
    patch = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 16))
    return data[:at] + patch + data[at + len(patch):]


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    dwarf = copy.copy(DWARFS[fdp.ConsumeIntInRange(0, len(DWARFS) - 1)])
    if fdp.ConsumeBool():
        dwarf.info = damaged(dwarf.info, fdp)
    else:
        dwarf.abbrev = damaged(dwarf.abbrev, fdp)
    context = context_for(dwarf, DEFAULT)
    encoder = core.new_encoder(dwarf, context)
    reader = DieReader(dwarf)
    for unit in dwarf.units:
        try:
            records = encoder.records(core.unit_fields(unit))
        except core.CoreFallback:
            continue
        try:
            reference = convert_unit(reader.read_unit(unit), dwarf.little_endian, Skips(),
                                     context)
        except (DwarfFormatError, RecursionError) as e:
            raise AssertionError(f"the core encoded a unit the reference rejects: {e}") from e
        assert records == reference, "the core's records differ from the reference's"


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
