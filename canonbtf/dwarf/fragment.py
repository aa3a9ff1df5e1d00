"""A worker's output: its units' records, merged where they are provably the same type.

Records are tuples (kind, name, kflag, size_or_type, extra, items) as made by convert.py.
A `TypePool` takes units one by one and keeps one pool record per distinct type:
- a type outside any reference cycle is keyed by its record with references replaced by
  pool ids (hash-consing, children first);
- a strongly connected set of types (struct list_head <-> its PTR) is put in a canonical
  form by partition refinement over the set alone, and the whole set is keyed by it.
Both merge only structurally identical (bisimilar) types, so the merge is sound whatever
the batch; it is not complete (bisimilar cycles of different shapes stay apart) and FWDs
are never resolved here: the parent's global dedup does both on the full union, which
is what makes the result independent of how units were split across workers.

This is the records path: the units a keyed merge sends again (keys.py: a name
ambiguous in the units, or in a module's base) and the tests' reference for the keyed
merge. On a whole kernel it sends
the parent 890 k records, which is why keys are the default.
"""

from __future__ import annotations

from ..btf import kinds
from ..btf.model import Btf, Type
from ..btf.strings import StringTable
from ..canon.refine import Partition
from ..tuples import named_tuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

Record = tuple

# Per kind (index = kind), generated from kinds.KINDS: a record's references in record
# order; the record with every reference r replaced by new[r] (new[0] must be 0, so void
# stays void; a kind without references gives the record itself); the record with every
# name n replaced by names[n].
RECORD_REFS = kinds.specialise("refs", "record")
RECORD_REMAP = kinds.specialise("remap", "record")
RECORD_RENAME = kinds.specialise("rename", "record")
_RECORD_NAMES = kinds.specialise("names", "record")
_AS_TYPE = kinds.specialise("remap_names", "record", Type)


def records_btf(records: list[tuple[Record, Sequence[int] | Mapping]],
                base: Btf | None = None) -> Btf:
    """A Btf of `records` in that order, each with the map its references go through
    (0 maps to 0); their names make the string table, sorted (split BTF over `base`
    when given: the maps give ids after the base's)."""
    names: set[str] = set()
    update = names.update
    for record, _ in records:
        update(_RECORD_NAMES[record[0]](record))
    names.discard("")
    start = base.strings.end if base is not None else 0
    strings, offset_of = StringTable.build(sorted(names), start)
    make = _AS_TYPE
    types = [make[record[0]](record, ids, offset_of) for record, ids in records]
    if base is None:
        return Btf(types, strings)
    return Btf(types, strings, base, base.byteorder)


class _Interned(dict):
    """Each name as the first equal string met, so that records share them."""

    def __missing__(self, name: str) -> str:
        self[name] = name
        return name


class Fragment(named_tuple("Fragment", "records units dies skips")):
    """What a worker sends back: distinct records (pool id = index + 1, list[Record]) and
    counts (units, type DIEs, skips by reason); a plain record, pickled to the parent."""

    __slots__ = ()


class TypePool:
    """Distinct records of the units added so far; pool id 0 is void."""

    def __init__(self):
        self.records: list[Record | None] = [None]
        self._acyclic: dict[Record, int] = {}
        self._cyclic: dict[tuple, tuple[int, ...]] = {}
        self._names = _Interned()
        self._sent = 1  # records [1, _sent) were already taken by `fragment`

    def add_unit(self, records: list[Record | None], unit: object = None) -> list[int]:
        """Pool the records of one unit (index = local number); returns local -> pool id.
        (`unit` is for the keyed pool's interface; records need no unit.)"""
        count = len(records)
        refs = [()] + [tuple([r for r in RECORD_REFS[record[0]](record) if r])
                       for record in records[1:]]
        pool_id = [0] * count
        for component in _strongly_connected(refs, count):
            if len(component) == 1 and component[0] not in refs[component[0]]:
                node = component[0]
                record = records[node]
                pool_id[node] = self._pool_acyclic(RECORD_REMAP[record[0]](record, pool_id))
            else:
                self._pool_cycle(component, records, refs, pool_id)
        return pool_id

    def fragment(self, units: int, dies: int, skips: dict[str, int]) -> Fragment:
        """The records added since the last fragment (ids continue the earlier ones)."""
        records = self.records[self._sent:]
        self._sent = len(self.records)
        return Fragment(records, units, dies, skips)

    def _pool_acyclic(self, record: Record) -> int:
        found = self._acyclic.get(record)
        if found is not None:
            return found
        new_id = len(self.records)
        self.records.append(RECORD_RENAME[record[0]](record, self._names))
        self._acyclic[record] = new_id
        return new_id

    def _pool_cycle(self, component: list[int], records: list, refs: list,
                    pool_id: list[int]) -> None:
        """Pool a strongly connected set of types through its canonical form."""
        members = set(component)
        # The members' own entries of `pool_id` (not pooled yet) hold what a reference to
        # them becomes while the set is keyed, so that one list maps every reference: a
        # dict per record was 0.76 of xfs.ko's 6.0 s of pooling (cProfile).
        for node in component:
            pool_id[node] = -1
        # node -> its record with outside refs pooled, inside refs as -1
        remap = RECORD_REMAP
        inside = {node: remap[records[node][0]](records[node], pool_id) for node in component}
        classes = _refine(component, inside, refs, members)
        count = max(classes.values()) + 1
        representative: list[int] = [0] * count
        for node in component:
            representative[classes[node]] = node
            # Refs inside the set become -1 - class: distinct from pool ids (>= 0).
            pool_id[node] = -1 - classes[node]
        key = tuple([remap[records[node][0]](records[node], pool_id) for node in representative])
        ids = self._cyclic.get(key)
        if ids is None:
            first = len(self.records)
            ids = tuple(range(first, first + count))
            for record in key:
                kind = record[0]
                new = {r: ids[-1 - r] if r < 0 else r for r in RECORD_REFS[kind](record)}
                self.records.append(RECORD_RENAME[kind](remap[kind](record, new), self._names))
            self._cyclic[key] = ids
        for node in component:
            pool_id[node] = ids[classes[node]]


def _refine(component: list[int], inside: dict[int, Record], refs: list,
            members: set[int]) -> dict[int, int]:
    """Canonical classes of a strongly connected set: rank of the label, then refined by
    the ranks of the referenced members until stable (canon/refine.py's Partition),
    numbered in the partition's order."""
    labels = label_ranks([inside[node] for node in component])
    if max(labels) + 1 == len(component):
        return dict(zip(component, labels))
    rank: dict[int, int] = {}
    partition = Partition(component, labels, rank, 0)
    partition.refine(lambda node: tuple([rank[r] for r in refs[node] if r in members]), None)
    number = {value: i for i, value in enumerate(sorted(set(rank.values())))}
    return {node: number[value] for node, value in rank.items()}


def label_ranks(records: list[Record]) -> list[int]:
    """The rank of each record's label (the record, its inside references as -1) among
    the distinct labels sorted: the classes refinement starts from (also for the
    compiled pool, dwarf/csrc/pool.c)."""
    labels = sorted(set(records), key=_label_key)
    rank = {label: i for i, label in enumerate(labels)}
    return [rank[record] for record in records]


def _label_key(record: Record) -> tuple:
    """Sort key of a record: its fields in a comparable shape (extra as a tuple)."""
    kind, name, kflag, sot, extra, items = record
    return (kind, name, kflag, sot, extra if isinstance(extra, tuple) else (extra,), items)


def _strongly_connected(refs: list, count: int) -> list[list[int]]:
    """Tarjan's SCCs of nodes 1..count-1, each emitted after every SCC it reaches. Each
    node's edges are walked by one iterator that the DFS resumes, and a node without
    edges is emitted as it is met: xfs.ko's 104 units took 0.80 s (cProfile) with a
    (node, edge index) tuple pushed per edge."""
    index = [0] * count  # 0: unvisited; else visit order + 1
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 1
    # Node 0 (void: no record refers to it) stands above the roots: its edges are every
    # node, so a root is met as any other unvisited target is.
    path = [0]
    walks = [iter(range(1, count))]
    while path:
        node = path[-1]
        for target in walks[-1]:
            if not index[target]:
                index[target] = low[target] = counter
                counter += 1
                if not refs[target]:
                    out.append([target])
                    continue
                stack.append(target)
                on_stack[target] = True
                path.append(target)
                walks.append(iter(refs[target]))
                break
            if on_stack[target] and index[target] < low[node]:
                low[node] = index[target]
        else:
            path.pop()
            walks.pop()
            if path and low[node] < low[path[-1]]:
                low[path[-1]] = low[node]
            if node and low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component.append(member)
                    if member == node:
                        break
                out.append(component)
    return out
