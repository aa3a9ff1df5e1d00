"""What the dedup's refinement reads of the types (dedup.py): made by the reference from
the `Type`s, or by the compiled part (accel.py) from the packed words."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass
class KeyedTypes:
    """What the refinement reads of the types, by id ([0] for void): abstract keys,
    tokens (hashable, or None), declaration flags and kinds, and the edges of any types
    asked for. `_reference_inputs` makes it from the `Type`s; accel.keyed_types from
    the packed words, without decoding a `Type`."""

    keys: Sequence[int]
    tokens: Sequence
    declares: Sequence
    kinds: Sequence[int]
    edges_of: Callable[[list[int]], Sequence[Sequence[int]]]
