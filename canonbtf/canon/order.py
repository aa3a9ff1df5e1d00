"""The canonical order (docs/ORDER.md): labels, refinement by referenced types, tie-breaks.

Ranks live in one array indexed by type id. Void (0) and, for split BTF, every base type
keep their id as a fixed rank; the types being ordered get ranks from `first_id` on.
Only types that share a rank after labelling ever need their edges: most named types are
alone with their label, so the graph is built for the others only.
"""

from __future__ import annotations

from ..btf.model import Btf
from . import accel
from .labels import label_head, scalars
from .refine import Partition

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    EdgesOf = Callable[[int], tuple]


def plain_edges(btf: Btf) -> EdgesOf:
    all_types = btf.all_types()
    return lambda node: tuple(all_types[node].refs())


def redirected_edges(btf: Btf, into: Mapping[int, int]) -> EdgesOf:
    """Edges with every reference to a merged type redirected to its target."""
    all_types = btf.all_types()
    target = into.get
    return lambda node: tuple([target(r, r) for r in all_types[node].refs()])


def _referrers(edges: dict[int, tuple[int, ...]]) -> dict[int, list[int]]:
    preds: dict[int, list[int]] = {}
    for node, targets in edges.items():
        for target in targets:
            if target in edges:
                preds.setdefault(target, []).append(node)
    return preds


def forward_partition(
    btf: Btf, nodes: Sequence[int], edges_of: EdgesOf, order: str, offset: int,
    labels: list | None = None,
) -> Partition:
    """Nodes ordered by label, then by the ranks of the types they reference (bisimulation).

    `labels` (by type id, "kind" order, as `labels.label` makes them) saves computing
    them again when the dedup already did."""
    all_types = btf.all_types()
    name = btf.names
    rank = list(range(btf.last_id + 1))
    if labels is None:
        heads = [label_head(all_types[n], name, order) for n in nodes]
        partition = Partition(nodes, heads, rank, offset)
        # The label's scalars only matter between types whose heads are equal.
        partition.refine(lambda node: scalars(all_types[node], name), {})
    else:
        if order == "name":
            heads = [(x[2], x[0], x[1], x[3], x[4]) for x in map(labels.__getitem__, nodes)]
        else:
            heads = [x[:5] for x in map(labels.__getitem__, nodes)]
        partition = Partition(nodes, heads, rank, offset)
        partition.refine(lambda node: labels[node][5], {})
    edges = {n: edges_of(n) for value in partition.blocks for n in partition.members(value)}
    rank_of = rank.__getitem__

    def forward(node: int) -> tuple:
        return tuple(map(rank_of, edges[node]))

    partition.refine(forward, _referrers(edges))
    return partition


def break_ties(partition: Partition, nodes: Sequence[int], edges_of: EdgesOf) -> None:
    """Make the partition discrete: refine by referrers' ranks, then individualize.

    Types still tied after refining by both directions are treated as interchangeable;
    the one split off first is the lowest input id, which for truly automorphic types
    cannot change the output bytes.
    """
    rank = partition.rank
    edges = {n: edges_of(n) for n in nodes}
    pred_edges: dict[int, list[tuple[int, int]]] = {}
    neighbours = _referrers(edges)
    for node, targets in edges.items():
        for i, target in enumerate(targets):
            if target in edges:
                pred_edges.setdefault(target, []).append((node, i))
                neighbours.setdefault(node, []).append(target)
    rank_of = rank.__getitem__
    no_referrers: list[tuple[int, int]] = []

    def both(node: int) -> tuple:
        referrers = sorted([(rank[p], i) for p, i in pred_edges.get(node, no_referrers)])
        return tuple(map(rank_of, edges[node])), tuple(referrers)

    partition.refine(both, neighbours)
    blocks = partition.blocks
    position = partition.offset
    while not partition.is_discrete():
        # The first tied block: splitting never makes a block before the first one.
        value = partition.value_at(position)
        while value not in blocks:
            position += 1
            value = partition.value_at(position)
        members = partition.members(value)
        if all(rank[o] not in blocks for m in members for o in neighbours.get(m, ())):
            # Only singletons read these types' ranks (duplicates nothing else tells
            # apart): individualizing them one by one, lowest id first, would change
            # nothing else, so do it at once.
            partition.discretize(value)
            continue
        chosen = min(members)
        changed = partition.individualize(value, chosen)
        partition.refine(both, neighbours, dirty=(),
                         touched=[o for n in changed for o in neighbours.get(n, ())])


def canonical_order(btf: Btf, order: str = "kind") -> list[int]:
    """`btf`'s own type ids in canonical order (a permutation: nothing merged)."""
    return ordered(btf, order)[0]


def ordered(btf: Btf, order: str = "kind", nodes: Sequence[int] | None = None,
            into: Mapping[int, int] | None = None, labels: list | None = None
            ) -> tuple[list[int], bool]:
    """`canonical_order`, and whether refinement by referenced types alone made the order
    (no tie broken by referrers): then the order of any subset closed under references
    is this order restricted to it, whatever the types outside refer to. `into` redirects
    references (to merged types) to the types they merge into. The compiled part
    computes the same when it applies (accel.py); this is the reference."""
    done = accel.order(btf, order == "name", nodes, into)
    if done is not None:
        return done
    if nodes is None:
        nodes = list(range(btf.first_id, btf.last_id + 1))
    edges_of = plain_edges(btf) if not into else redirected_edges(btf, into)
    partition = forward_partition(btf, nodes, edges_of, order, btf.first_id, labels)
    if partition.is_discrete():
        return partition.order, True
    break_ties(partition, nodes, edges_of)
    return partition.order, False
