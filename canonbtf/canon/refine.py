"""Partition refinement: the coarsest ordered partition stable under a signature.

The partition is an ordered array of blocks; a node's rank is its block's start position
(plus a fixed offset), so splitting a block never moves any other block and ranks stay
comparable across rounds. Refinement runs in synchronous rounds (Moore's algorithm): each
round computes the signatures of the dirty blocks' members from the ranks of the previous
round, then applies every split at once. Only blocks with a member whose successors (or,
in the tie-breaking phase, predecessors) changed rank in the previous round are dirty, so
a 100k-type graph pays for the types that move, not for full rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import groupby


class Partition:
    """Nodes (type ids) in canonical order, grouped into blocks of equal rank."""

    def __init__(self, nodes: Sequence[int], keys: Sequence, rank: list[int], offset: int):
        """Initial blocks: `nodes` sorted by `keys` (parallel to nodes), equal keys together.

        `rank` is indexed by node id and is written in place; `offset` is the rank of the
        first position (nodes outside the partition keep the fixed ranks they have).
        """
        decorated = sorted(zip(keys, nodes))
        self.offset = offset
        self.rank = rank
        self.order: list[int] = [node for _, node in decorated]
        self.block_end: dict[int, int] = {}  # start -> end, for blocks of two or more
        pos = offset
        for _, group in groupby(decorated, key=lambda kn: kn[0]):
            members = [node for _, node in group]
            for node in members:
                rank[node] = pos
            if len(members) > 1:
                self.block_end[pos] = pos + len(members)
            pos += len(members)

    def members(self, start: int) -> list[int]:
        end = self.block_end.get(start, start + 1)
        return self.order[start - self.offset : end - self.offset]

    def is_discrete(self) -> bool:
        return not self.block_end

    def refine(
        self,
        signature: Callable[[int], tuple],
        neighbours: Mapping[int, Sequence[int]],
        dirty: set[int] | None = None,
        after_round: Callable[[list[int]], Iterable[int]] | None = None,
    ) -> None:
        """Split blocks until every block's members have equal signatures.

        `neighbours[n]` lists the nodes whose signature reads n's rank (nodes without
        entry have none); when n's rank changes their blocks become dirty. `dirty`
        defaults to every block. `after_round(changed)`, called after each round with the
        nodes whose rank changed, may name more nodes whose signatures now read differently.
        """
        rank = self.rank
        block_end = self.block_end
        if dirty is None:
            dirty = set(block_end)
        while dirty:
            splits = []
            for start in dirty:
                members = self.members(start)
                sigs = [signature(node) for node in members]
                first = sigs[0]
                for sig in sigs:
                    if sig != first:
                        break
                else:
                    continue
                splits.append((start, sorted(zip(sigs, members))))
            changed: list[int] = []
            for start, decorated in splits:
                del block_end[start]
                pos = start
                for _, group in groupby(decorated, key=lambda sm: sm[0]):
                    members = [node for _, node in group]
                    if pos != start:
                        changed.extend(members)
                    for i, node in enumerate(members, pos - self.offset):
                        self.order[i] = node
                        rank[node] = pos
                    if len(members) > 1:
                        block_end[pos] = pos + len(members)
                    pos += len(members)
            dirty = set()
            no_neighbours = ()
            for node in changed:
                for other in neighbours.get(node, no_neighbours):
                    start = rank[other]
                    if start in block_end:
                        dirty.add(start)
            if after_round is not None and changed:
                for other in after_round(changed):
                    start = rank[other]
                    if start in block_end:
                        dirty.add(start)

    def discretize(self, start: int) -> None:
        """Make every member of the block a block of its own, in ascending id order."""
        end = self.block_end.pop(start)
        members = sorted(self.order[start - self.offset : end - self.offset])
        self.order[start - self.offset : end - self.offset] = members
        for pos, node in enumerate(members, start):
            self.rank[node] = pos

    def individualize(self, start: int, node: int) -> list[int]:
        """Split `node` off the front of its block; returns the nodes whose rank changed."""
        members = self.members(start)
        rest = [m for m in members if m != node]
        del self.block_end[start]
        base = start - self.offset
        self.order[base] = node
        self.order[base + 1 : base + len(members)] = rest
        for m in rest:
            self.rank[m] = start + 1
        if len(rest) > 1:
            self.block_end[start + 1] = start + len(members)
        return rest
