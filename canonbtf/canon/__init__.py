"""The canonical form: equivalence of types, dedup, the canonical order, renumbering.

Works on the btf/ model only; knows nothing of DWARF or of output formats.
"""

from __future__ import annotations

from ..btf.model import Btf
from ..errors import InputError
from ..gcpause import paused_gc
from . import accel
from .labels import ORDERS
from .order import canonical_order, ordered
from .renumber import renumber

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (ms per run)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .dedup import BaseIndex

__all__ = ["ORDERS", "canonicalize", "canonicalize_checked", "canonical_order", "order_hazard",
           "renumbered"]


def canonicalize(btf: Btf, *, dedup: bool = False, order: str = "kind",
                 strings: bool = True) -> Btf:
    """A new Btf with `btf`'s own types in canonical order (merged first when `dedup`);
    with `strings` false its string section is `btf`'s, not yet the canonical one.
    A pointer or modifier to a FUNC is an InputError: the kernel takes it only when the
    FUNC comes first, an order the canonical one cannot promise."""
    return canonicalize_checked(btf, dedup=dedup, order=order, strings=strings)[0]


def canonicalize_checked(btf: Btf, *, dedup: bool = False, order: str = "kind",
                         strings: bool = True,
                         index: BaseIndex | Callable[[], BaseIndex] | None = None,
                         premerged: bool = False) -> tuple[Btf, bool]:
    """`canonicalize`, and whether refinement by referenced types alone made the order (no
    tie broken): then dropping types nothing left refers to keeps the others' order, which
    lets encode skip a second full ordering after choosing functions (functions.py).
    `index`: what the dedup reads of `btf.base` (basecache.py), or what makes it; only
    the reference reads it: the compiled part keys the base itself (accel.keyed_types).
    `premerged`: as dedup.merge_map takes it (dedup.BaseSplitsNames)."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}")
    btf = accel.packed(btf)
    hazard = order_hazard(btf)
    if hazard:
        raise InputError(None, f"{hazard}: the kernel takes that only when the FUNC comes "
                         "first, which the canonical order cannot keep")
    # Hundreds of thousands of acyclic tuples and lists: the collector's rescans were
    # 19 % of the instructions of `sort --dedup` on the 6.1 vmlinux (valgrind).
    with paused_gc():
        if dedup:
            from .dedup import all_labels, merge_map

            inputs = accel.keyed_types(btf)
            if inputs is None and callable(index):
                index = index()
            labels = None if inputs is not None else all_labels(btf, index)
            into = merge_map(btf, labels, index, inputs, premerged)
            del inputs  # a list per type: 0.1 GB at 1.5 M types, not needed past here
            if into:
                # Ordered and renumbered with references redirected on the fly, rather
                # than through an intermediate Btf of the merged types.
                kept = _kept_ids(btf, into)
                new_order, alone = ordered(btf, order, kept, into, labels)
                return renumbered(btf, new_order, into, strings), alone
            new_order, alone = ordered(btf, order, labels=labels)
            return renumbered(btf, new_order, None, strings), alone
        new_order, alone = ordered(btf, order)
        return renumbered(btf, new_order, None, strings), alone


def order_hazard(btf: Btf) -> str | None:
    """validator.order_dependent_reference (a reference the kernel takes only when its
    FUNC comes first), the validator imported only when the compiled test found something
    or could not run: its import (its checks, `re`, `typing`) was a few ms of every
    module's run."""
    if accel.refers_to_func(btf) is False:
        return None
    from ..check.validator import order_dependent_reference

    return order_dependent_reference(btf)


def _kept_ids(btf: Btf, into: dict[int, int]) -> Sequence[int]:
    """`btf`'s own ids that merge into nothing, ascending: runs between the merged ones
    (a test per id was 0.19 s of `sort --dedup` at 1.5 M types, bench_all's 16 x)."""
    done = accel.kept_ids(btf, into)
    if done is not None:
        return done
    from array import array  # imported here: only the pure path needs it (u32.py says why)

    kept = array("I")
    first, last = btf.first_id, btf.last_id  # properties that walk the base chain
    start = first
    for merged in sorted(n for n in into if first <= n <= last):
        kept.extend(range(start, merged))
        start = merged + 1
    kept.extend(range(start, last + 1))
    return kept


def renumbered(btf: Btf, new_order: Sequence[int], into: dict[int, int] | None = None,
               strings: bool = True) -> Btf:
    """renumber.renumber (the reference), by the compiled part when it applies."""
    result = accel.renumbered(btf, new_order, into, strings)
    return result if result is not None else renumber(btf, new_order, into, strings)
