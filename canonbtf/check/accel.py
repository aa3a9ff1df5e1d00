"""check/'s one door to C (canonbtf._btf, csrc/check.c): whether the compiled pass
applies (native/ says whether it is built and wanted; the BTF must be the reader's packed
words) and its findings, worded by words.py as the reference's are."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .. import native
from ..btf.model import Btf
from ..btf.strings import StringTable


def compiled_findings(btf: Btf) -> Iterator[tuple] | None:
    """The compiled pass's type-section violations, (type id, kind, name, check/words key,
    values) in id order, as the reference passes find them; None where it does not apply
    (not built or not wanted, a level of the BTF no longer packed as the reader left it:
    its words are what the C reads, or a BTF the reference might treat otherwise)."""
    module = native.compiled("canonbtf._btf", "rules_check")
    if module is None:
        return None
    levels = []
    chain: Btf | None = btf
    while chain is not None:
        if not isinstance(chain, Btf) or chain.packed is None \
                or not isinstance(chain.strings, StringTable):
            native.fell_back("check", "a level not packed as read")
            return None
        levels.append(chain.packed.words)
        chain = chain.base
    try:
        found = module.rules_check(levels[0], btf.first_id, btf.string_sections(),
                                   levels[:0:-1])
    except ValueError as e:
        native.fell_back("check", f"rules_check: {e}")
        return None
    if found is None:
        native.fell_back("check", "rules_check declined")
        return None
    return _in_chunks(module.rules_findings, found)


def _in_chunks(take: Callable[[object, int, int], list[tuple]], found: object
               ) -> Iterator[tuple]:
    """The compiled findings made a few thousand at a time: half a million tuples at once
    were most of `check`'s memory."""
    start = 0
    while True:
        chunk = take(found, start, 4096)
        if not chunk:
            return
        yield from chunk
        start += len(chunk)
