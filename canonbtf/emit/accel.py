"""emit/'s one door to C for the raw dump (canonbtf._btf, csrc/rawdump.c): whether it
applies (native/ says whether it is built and wanted) and the call. emit/c/accel.py is
the C header's."""

from __future__ import annotations

from typing import TextIO

from .. import native
from ..btf import writer
from ..btf.model import Btf


def raw_dump(btf: Btf, out: TextIO) -> bool:
    """The text by `_btf.raw_dump`, if it applies: built, not CANONBTF_PURE, and `btf`'s
    types still the reader's checked words (a Type made by hand may hold what no word
    does, e.g. a negative enumerator) over at most one base (whose types a DATASEC entry
    may name). False: nothing written, the reference is to run."""
    module = native.compiled("canonbtf._btf", "raw_dump")
    if module is None:
        return False
    base = btf.base
    if btf.packed is None or (base is not None and base.base is not None):
        native.fell_back("dump raw", "types not packed as read, or a base over a base")
        return False
    base_words = writer.section_words(base) if base is not None else None
    if base is not None and base_words is None:
        native.fell_back("dump raw", "base types not packed as read")
        return False
    try:
        view = module.c_view(btf.packed.words, btf.first_id, btf.string_sections())
        base_view = None if base_words is None else module.c_view(
            base_words, 1, base.string_sections())
    except ValueError as e:
        native.fell_back("dump raw", f"c_view: {e}")
        return False
    module.raw_dump(view, base_view, out.write)
    return True
