"""What the dedup's refinement reads of the types (dedup.py): made by the reference from
the `Type`s, or by the compiled part (accel.py) from the packed words."""

from __future__ import annotations

from ..tuples import named_tuple


class KeyedTypes(named_tuple("KeyedTypes", "keys tokens declares kinds edges_of refined",
                              defaults=(None,))):
    """What the refinement reads of the types, by id ([0] for void): abstract keys,
    tokens (hashable and truthy; None or 0 for none), declaration flags and kinds, and
    the edges of any types asked for (edges_of: list of ids -> their edges). `refined`,
    the compiled part's only: the ids sharing a key -> dedup._refined's (rank,
    stands_for, classes) as arrays by id, or None where it declines.
    `_reference_inputs` makes it from the `Type`s; accel.keyed_types from the packed
    words, without decoding a `Type`. A named tuple, not a dataclass (see
    elf/read.Section): the module path does not import dataclasses."""

    __slots__ = ()
