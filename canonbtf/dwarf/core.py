"""Which core encodes units: the compiled one (`canonbtf.dwarf._core`, C) or pure Python.

The compiled core reads a unit's DIEs, converts them to records and keys them in one
pass over the section bytes (docs/ENCODE.md "The compiled core"); dies.py, convert.py
and keys.py stay the reference and the fallback. It is used when the extension was built
(`pip install .` with a C compiler) and `CANONBTF_PURE` is unset or 0; PyPy and machines
without a compiler get the pure path.

A unit the core cannot read exactly as the reference does (damaged input, a form or
value it does not mirror, nesting over `_core.MAX_DEPTH`) raises `CoreFallback`; the
worker then reads that unit with the pure path, which encodes it or raises the
reference's error message. So both paths give the same bytes and the same errors.
"""

from __future__ import annotations

import sys

from ..native import PURE_ENV, compiled, pure_requested
from ..spec.dwarf_numbers import TAG_NAMES
from ..spec.features import FEATURE_BITS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (ms per run)
if TYPE_CHECKING:  # the CLI asks for `active_core` without loading the encoder
    from types import ModuleType

    from .convert import ConvertContext
    from .sections import DwarfFile, Unit

__all__ = ["PURE_ENV", "CoreFallback", "compiled_module", "new_encoder"]



class CoreFallback(Exception):
    """The compiled core gives a unit up; the pure path reads it."""


def compiled_module() -> ModuleType | None:
    """The compiled core if it is built and not turned off by CANONBTF_PURE."""
    return compiled("canonbtf.dwarf._core", "UnitEncoder")


def missing_core_note() -> str | None:
    """One line for `encode` on CPython when the compiled core was not built and nobody
    asked for the pure path: pip shows the build's warning only with -v."""
    if sys.implementation.name != "cpython" or compiled_module() is not None or pure_requested():
        return None
    return ("note: the compiled core is not built (no C compiler at install time?); "
            "encoding with the slower pure-Python core")


def new_encoder(dwarf: DwarfFile, context: ConvertContext):
    """A compiled UnitEncoder for `dwarf`, or None when the pure path is in use."""
    module = compiled_module()
    if module is None:
        return None
    symbols = context.symbols
    bits = 0
    for name in context.features:
        bits |= FEATURE_BITS.get(name, 0)
    sections = dwarf.sections
    return module.UnitEncoder(
        info=dwarf.info, abbrev=dwarf.abbrev, str=dwarf.str, line_str=dwarf.line_str,
        str_offsets=dwarf.str_offsets, addr=sections.get(".debug_addr", b""),
        loc=sections.get(".debug_loc", b""), loclists=sections.get(".debug_loclists", b""),
        registers=bytes(context.parameter_registers),
        little_endian=dwarf.little_endian, features=bits, has_symbols=symbols is not None,
        functions=symbols.functions if symbols is not None else None,
        kfuncs=symbols.kfuncs if symbols is not None else None,
        place_variable=symbols.place_variable if symbols is not None else None,
        tag_names={tag: name for tag, name in TAG_NAMES.items() if tag >= 0},
        fallback=CoreFallback)


def unit_fields(unit: Unit) -> tuple:
    """A unit as the compiled core takes it."""
    return (unit.offset, unit.end, unit.die_offset, unit.version, unit.offset_size,
            unit.address_size, unit.abbrev_offset)
