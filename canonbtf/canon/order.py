"""The canonical order (docs/ORDER.md): labels, refinement by referenced types, tie-breaks.

Ranks live in one array indexed by type id. Void (0) and, for split BTF, every base type
keep their id as a fixed rank; the types being ordered get ranks from `first_id` on.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..btf.model import Btf
from .labels import label
from .refine import Partition


class TypeGraph:
    """Edges (referenced ids, in record order) and their reverse for a set of nodes."""

    def __init__(self, edges: dict[int, tuple[int, ...]], size: int):
        self.edges = edges
        preds: list[list[int]] = [[] for _ in range(size)]
        pred_edges: list[list[tuple[int, int]]] = [[] for _ in range(size)]
        for node, targets in edges.items():
            for i, target in enumerate(targets):
                if target in edges:
                    preds[target].append(node)
                    pred_edges[target].append((node, i))
        self.preds = preds
        self.pred_edges = pred_edges

    @classmethod
    def of(cls, btf: Btf, nodes: Sequence[int]) -> TypeGraph:
        all_types = btf.all_types()
        return cls({n: tuple(all_types[n].refs()) for n in nodes}, btf.last_id + 1)


def forward_partition(
    btf: Btf, graph: TypeGraph, nodes: Sequence[int], order: str, offset: int
) -> Partition:
    """Nodes ordered by label, then by the ranks of the types they reference (bisimulation)."""
    all_types = btf.all_types()
    name = btf.name
    rank = list(range(btf.last_id + 1))
    keys = [label(all_types[n], name, order) for n in nodes]
    partition = Partition(nodes, keys, rank, offset)
    edges = graph.edges
    rank_of = rank.__getitem__

    def forward(node: int) -> tuple:
        return tuple(map(rank_of, edges[node]))

    partition.refine(forward, graph.preds)
    return partition


def break_ties(partition: Partition, graph: TypeGraph) -> None:
    """Make the partition discrete: refine by referrers' ranks, then individualize.

    Types still tied after refining by both directions are treated as interchangeable;
    the one split off first is the lowest input id, which for truly automorphic types
    cannot change the output bytes.
    """
    rank = partition.rank
    edges = graph.edges
    pred_edges = graph.pred_edges
    rank_of = rank.__getitem__
    neighbours = [list(p) for p in graph.preds]
    for node, targets in edges.items():
        for target in targets:
            if target in edges:
                neighbours[node].append(target)

    def both(node: int) -> tuple:
        referrers = sorted([(rank[p], i) for p, i in pred_edges[node]])
        return tuple(map(rank_of, edges[node])), tuple(referrers)

    partition.refine(both, neighbours)
    while not partition.is_discrete():
        start = min(partition.block_end)
        members = partition.members(start)
        chosen = min(members)
        changed = partition.individualize(start, chosen)
        dirty = {rank[o] for n in [chosen, *changed] for o in neighbours[n]}
        dirty = {s for s in dirty if s in partition.block_end}
        if start + 1 in partition.block_end:
            dirty.add(start + 1)
        partition.refine(both, neighbours, dirty)


def canonical_order(btf: Btf, order: str = "kind") -> list[int]:
    """`btf`'s own type ids in canonical order (a permutation: nothing merged)."""
    nodes = [n for n, _ in btf.own()]
    graph = TypeGraph.of(btf, nodes)
    partition = forward_partition(btf, graph, nodes, order, btf.first_id)
    if not partition.is_discrete():
        break_ties(partition, graph)
    return partition.order
