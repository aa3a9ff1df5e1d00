"""Partition refinement: the coarsest ordered partition stable under a signature.

The one implementation every caller uses: the canonical order (order.py), the dedup
(dedup.py) and the DWARF pool's canonical form of a cycle (dwarf/fragment.py); its C
twin, native/csrc/refine.c, serves the compiled order, pool and dedup the same way.

The partition is an ordered array of blocks; positions count from a fixed offset. A
node's *rank* is a value inside its block's position range, so ranks of different
blocks compare as the blocks' positions do: signatures made of ranks then compare
exactly as they would with block starts (the ranks of docs/ORDER.md), which gives the
same splits and the same final order. Refinement runs in synchronous rounds (Moore's
algorithm): each round computes the signatures of the dirty blocks' members from the
ranks of the previous round, then applies every split at once.

Two things keep a round proportional to what changed rather than to the size of the
blocks it touches:
- when a block splits, the sub-block whose range still holds the block's rank value
  keeps it, and only the other sub-blocks' nodes change rank (making the blocks of the
  nodes that read them dirty). A new value is the middle of its range, so a chain that
  loses one node per round at one end (nested anonymous structs) relabels its rest only
  when the value falls out of it: about n relabelings in all instead of n².
- in a block made dirty by the previous round, only the *touched* members (those that
  read a node whose rank changed) can have a new signature; the others still share
  one, computed once from a representative. Putting the touched members in place swaps
  O(touched) entries of the array.
"""

from __future__ import annotations

from itertools import count, groupby
from operator import itemgetter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence


def _value(start: int, end: int) -> int:
    """The rank value a new block [start, end) gets."""
    return start + (end - start) // 2


class Partition:
    """Nodes (type ids) in canonical order, grouped into blocks of equal rank."""

    def __init__(self, nodes: Sequence[int], keys: Sequence, rank: list[int] | dict[int, int],
                 offset: int):
        """Initial blocks: `nodes` sorted by `keys` (parallel to nodes), equal keys together.

        `rank` is indexed by node id and is written in place: a list over every id, or a
        dict that gets the nodes' (for a few nodes of many ids, dwarf/fragment.py's
        cycles); `offset` is the position of the first node (nodes outside the partition
        keep the fixed ranks they have, which must not fall in the positions' range).
        """
        decorated = sorted(zip(keys, nodes))
        self.offset = offset
        self.rank = rank
        self.order: list[int] = [node for _, node in decorated]
        # node -> its position
        self.where: list[int] | dict[int, int] = [0] * len(rank) if isinstance(rank, list) else {}
        self.blocks: dict[int, tuple[int, int]] = {}  # rank value -> (start, end), 2+ nodes
        # Run lengths of equal keys in C (groupby on the keys alone), then one pass that
        # writes each node's rank and position.
        values: list[int] = []
        pos = offset
        for _, run in groupby(map(itemgetter(0), decorated)):
            size = len(list(run))
            end = pos + size
            value = _value(pos, end)
            values += [value] * size
            if size > 1:
                self.blocks[value] = (pos, end)
            pos = end
        where = self.where
        for position, node, value in zip(count(offset), self.order, values):
            rank[node] = value
            where[node] = position

    def members(self, value: int) -> list[int]:
        """The nodes of the block whose rank is `value`."""
        start, end = self.blocks.get(value, (value, value + 1))
        return self.order[start - self.offset : end - self.offset]

    def value_at(self, position: int) -> int:
        """The rank of the node at `position`."""
        return self.rank[self.order[position - self.offset]]

    def is_discrete(self) -> bool:
        return not self.blocks

    def refine(
        self,
        signature: Callable[[int], tuple],
        neighbours: Mapping[int, Sequence[int]] | None,
        dirty: Iterable[int] | None = None,
        after_round: Callable[[list[int]], Iterable[int]] | None = None,
        touched: Iterable[int] = (),
    ) -> None:
        """Split blocks until every block's members have equal signatures.

        `neighbours[n]` lists the nodes whose signature reads n's rank (nodes without
        entry have none); None when that is not known: then every block is dirty in every
        round (for a few nodes, cheaper than listing the readers; the same splits).
        `dirty` names blocks (by rank) whose signatures are all computed; `touched` names
        nodes whose signature may have changed since their block was last stable. With
        neither, every block is dirty. `after_round(changed)`, called after each round with
        the nodes whose rank changed, may name more nodes whose signatures now read
        differently. Blocks not named are taken to be stable.
        """
        blocks = self.blocks
        touched = list(touched)
        if dirty is None and not touched:
            full = set(blocks)
        else:
            full = {value for value in dirty or () if value in blocks}
        touch = self._by_block(touched)
        no_neighbours: Sequence[int] = ()
        while full or touch:
            plans = []
            for value in full:
                members = self.members(value)
                sigs = [signature(node) for node in members]
                if sigs.count(sigs[0]) == len(sigs):
                    continue
                groups: dict = {}
                for sig, node in zip(sigs, members):
                    groups.setdefault(sig, []).append(node)
                plans.append((value, sorted(groups.items()), None))
            for value, nodes in touch.items():
                if value in full:
                    continue
                start, end = blocks[value]
                if len(nodes) == end - start:
                    rest_sig = None
                else:
                    rest_sig = signature(self._untouched(start, nodes))
                groups = {}
                for node in nodes:
                    groups.setdefault(signature(node), []).append(node)
                if len(groups) == 1 and (rest_sig is None or rest_sig in groups):
                    continue
                if rest_sig is not None:
                    groups.setdefault(rest_sig, [])
                plans.append((value, sorted(groups.items()), rest_sig))
            changed: list[int] = []
            for value, groups, rest_sig in plans:
                self._split(value, groups, rest_sig, changed)
            if neighbours is None:
                full = set(blocks) if changed else set()
                touch = {}
                continue
            readers: list[int] = []
            for node in changed:
                readers.extend(neighbours.get(node, no_neighbours))
            if after_round is not None and changed:
                readers.extend(after_round(changed))
            full = set()
            touch = self._by_block(readers)

    def _by_block(self, nodes: Iterable[int]) -> dict[int, set[int]]:
        """`nodes` that are in blocks of two or more, grouped by block rank."""
        rank = self.rank
        blocks = self.blocks
        out: dict[int, set[int]] = {}
        for node in nodes:
            value = rank[node]
            if value in blocks:
                group = out.get(value)
                if group is None:
                    out[value] = {node}
                else:
                    group.add(node)
        return out

    def _untouched(self, start: int, touched: set[int]) -> int:
        """A member of the block starting at `start` that is not in `touched`."""
        order = self.order
        pos = start - self.offset
        while order[pos] in touched:
            pos += 1
        return order[pos]

    def _split(self, value: int, groups: list, rest_sig, changed: list[int]) -> None:
        """Replace block `value` by `groups` ((signature, nodes) in signature order); with
        `rest_sig`, the block's other (untouched) members belong to that group."""
        blocks = self.blocks
        rank = self.rank
        where = self.where
        order = self.order
        offset = self.offset
        start, end = blocks.pop(value)
        rest = end - start - sum(map(len, map(itemgetter(1), groups)))
        ranges = []
        pos = start
        for sig, nodes in groups:
            size = len(nodes) + (rest if sig == rest_sig else 0)
            ranges.append((pos, pos + size))
            pos += size
        if rest_sig is None:
            pos = start - offset
            for _, nodes in groups:
                for node in nodes:
                    order[pos] = node
                    where[node] = pos + offset
                    pos += 1
        else:
            self._place(groups, ranges, rest_sig)
        for (sig, nodes), (low, high) in zip(groups, ranges):
            if low <= value < high:
                new = value
            else:
                new = _value(low, high)
                moved = order[low - offset : high - offset] if sig == rest_sig else nodes
                for node in moved:
                    rank[node] = new
                changed.extend(moved)
            if high - low > 1:
                blocks[new] = (low, high)

    def _place(self, groups: list, ranges: list, rest_sig) -> None:
        """Move the listed nodes of the groups other than the rest's into the positions
        outside the rest group's range, in group order (swapping out untouched ones)."""
        order = self.order
        where = self.where
        offset = self.offset
        movers = []
        for (sig, nodes), _ in zip(groups, ranges):
            if sig != rest_sig:
                movers.extend(nodes)
        if not movers:
            return
        rest_low, rest_high = next(r for (sig, _), r in zip(groups, ranges) if sig == rest_sig)
        start, end = ranges[0][0], ranges[-1][1]
        outside = [*range(start, rest_low), *range(rest_high, end)]
        mover_set = set(movers)
        inside_movers = [where[n] for n in movers if rest_low <= where[n] < rest_high]
        free = [p for p in outside if order[p - offset] not in mover_set]
        for a, b in zip(inside_movers, free):
            x, y = order[a - offset], order[b - offset]
            order[a - offset], order[b - offset] = y, x
            where[x], where[y] = b, a
        for p, node in zip(outside, movers):
            order[p - offset] = node
            where[node] = p

    def discretize(self, value: int) -> None:
        """Make every member of the block a block of its own, in ascending id order."""
        start, end = self.blocks.pop(value)
        offset = self.offset
        members = sorted(self.order[start - offset : end - offset])
        self.order[start - offset : end - offset] = members
        for pos, node in enumerate(members, start):
            self.rank[node] = pos
            self.where[node] = pos

    def individualize(self, value: int, node: int) -> list[int]:
        """Split `node` off the front of its block; returns the nodes whose rank changed."""
        start, end = self.blocks.pop(value)
        order = self.order
        where = self.where
        rank = self.rank
        offset = self.offset
        first = order[start - offset]
        here = where[node]
        order[start - offset], order[here - offset] = node, first
        where[first], where[node] = here, start
        if value != start:
            rank[node] = start
            changed = [node]
            rest_value = value
        else:
            rest_value = _value(start + 1, end)
            changed = order[start + 1 - offset : end - offset]
            for other in changed:
                rank[other] = rest_value
        if end - start > 2:
            self.blocks[rest_value] = (start + 1, end)
        return changed
