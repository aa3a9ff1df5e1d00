"""Several split BTFs over one base as one BTF: vmlinux and its modules in one header.

Each module's own types are appended after the base's, their references and names moved
to where they land, and the whole is deduplicated: a type two modules both define (each
got its own copy, since neither sees the other) becomes one. What any one output form
then makes of the result depends on the types alone, never on the inputs' ids or order.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..btf.model import Btf
from ..btf.strings import StringTable
from ..errors import InputError


class _Shift:
    """Old -> new for a module's ids or string offsets: its own ones (from `start` on)
    move by `delta`, the base's stay."""

    __slots__ = ("start", "delta")

    def __init__(self, start: int, delta: int):
        self.start, self.delta = start, delta

    def __getitem__(self, value: int) -> int:
        return value + self.delta if value >= self.start else value


def concatenated(base: Btf, modules: Sequence[Btf]) -> Btf:
    """One BTF without a base: `base`'s types, then each module's own, as they are."""
    types = list(base.types)
    strings = [base.strings.data()]
    string_end = base.strings.end
    for module in modules:
        if module.base is not base:
            raise ValueError("every module must be split BTF over the same base object")
        ids = _Shift(module.first_id, len(types) + 1 - module.first_id)
        names = _Shift(module.strings.start, string_end - module.strings.start)
        types.extend(t.remap(ids, names) for t in module.types)
        strings.append(module.strings.data())
        string_end += module.strings.size
    return Btf(types, StringTable(b"".join(strings), base.strings.start), None,
               base.byteorder)


def merged(base: Btf, modules: Sequence[Btf]) -> Btf:
    """`base` and `modules` as one deduplicated BTF in canonical order."""
    from . import canonicalize

    if not modules:
        return base
    try:
        return canonicalize(concatenated(base, modules), dedup=True)
    except InputError as e:
        raise InputError(None, f"cannot merge the modules into their base: {e.message}"
                         ) from None
