"""The canonical form: equivalence of types, dedup, the canonical order, renumbering.

Works on the btf/ model only; knows nothing of DWARF or of output formats.
"""

from __future__ import annotations

from ..btf.model import Btf
from ..btf.validator import order_dependent_reference
from ..errors import InputError
from ..gcpause import paused_gc
from .labels import ORDERS
from .order import canonical_order
from .renumber import renumber

__all__ = ["ORDERS", "canonicalize", "canonical_order"]


def canonicalize(btf: Btf, *, dedup: bool = False, order: str = "kind",
                 strings: bool = True) -> Btf:
    """A new Btf with `btf`'s own types in canonical order (merged first when `dedup`);
    with `strings` false its string section is `btf`'s, not yet the canonical one.
    A pointer or modifier to a FUNC is an InputError: the kernel takes it only when the
    FUNC comes first, an order the canonical one cannot promise."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}")
    hazard = order_dependent_reference(btf)
    if hazard:
        raise InputError(None, f"{hazard}: the kernel takes that only when the FUNC comes "
                         "first, which the canonical order cannot keep")
    # Hundreds of thousands of acyclic tuples and lists: the collector's rescans were
    # 19 % of the instructions of `sort --dedup` on the 6.1 vmlinux (valgrind).
    with paused_gc():
        if dedup:
            from .dedup import all_labels, merge_map

            labels = all_labels(btf)
            into = merge_map(btf, labels)
            if into:
                # Ordered and renumbered with references redirected on the fly, rather
                # than through an intermediate Btf of the merged types.
                kept = [n for n in range(btf.first_id, btf.last_id + 1) if n not in into]
                types = btf.all_types()
                target = into.get

                def edges_of(node: int) -> tuple:
                    return tuple([target(r, r) for r in types[node].refs()])

                return renumber(btf, canonical_order(btf, order, kept, edges_of, labels),
                                into, strings)
            return renumber(btf, canonical_order(btf, order, labels=labels), strings=strings)
        return renumber(btf, canonical_order(btf, order), strings=strings)
