"""Which root of the old BTF is which root of the new one, when names do not say.

A name used more than once (static functions of one name, two different `struct
irq_info`, or the equivalent copies pahole's dedup leaves behind) gives a group of roots
on each side. They are paired by what the types are, never by their ids:

1. the same type first: roots with equal facts, or, for a name whose copies on one side
   have equal facts (so facts cannot tell them apart), roots in the same equivalence
   class of a graph holding both sides (`canon.dedup.equivalence_classes`);
2. the rest by the best overall match, a maximum-weight matching on a similarity score;
3. what still shares nothing pairs in order.

Order, wherever one is needed (which of several copies pairs with which, and the `#N` a
duplicate is shown with), is the label (the canonical order's first key), the facts, and
for alike copies their position in their side's canonical order (docs/ORDER.md): all
depend only on the types. The canonical order keeps copies consistent with each other:
the copy of `struct a` that points to the first copy of `struct b` pairs with its
counterpart on the other side.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, Optional, Union

from ..btf.model import Type
from ..canon.dedup import equivalence_classes
from ..canon.labels import label
from ..canon.order import canonical_order
from . import accel

# Two anonymous roots are paired when they share at least this fraction of the smaller
# one's member or enumerator names.
_ANON_OVERLAP = 0.5
# Groups with at most this many scored pairs are matched without networkx (_best_match):
# 2^12 subsets to try at most.
_SMALL_MATCHING = 12
# Families whose types other types refer to (and so spell with a duplicate's tag).
_REFERABLE = frozenset({"struct", "union", "enum", "typedef", "fwd", "int", "float"})

Pairing = tuple[list[tuple["Root", "Root"]], list["Root"], list["Root"]]
# A BTF's types by id (Btf.all_types(), or diff's mapping of the ids it reads).
Types = Union[Sequence[Optional[Type]], Mapping[int, Optional[Type]]]


class Lookup(NamedTuple):
    """What pairing reads of one BTF: its types by id and names by offset (`all_types()`
    and `names` of a Btf, or diff's, which decode only what is read), and where diff has
    them, its type sections from id 1 and string sections (diff._chain_words), which
    the compiled part reads instead of the types."""

    types: Types
    names: Callable[[int], str]
    chain: tuple[bytes, list] | None = None


class Root:
    """A type reported on its own: named, or anonymous and held by no other type."""

    __slots__ = ("type_id", "family", "name", "facts", "sort_key", "same",
                 "spells_duplicate")

    def __init__(self, type_id: int, family: str, name: str, facts: tuple = ()):
        self.type_id = type_id
        self.family = family
        self.name = name
        self.facts = facts
        # Where it stands among roots of its name (see settle_duplicates).
        self.sort_key: tuple = ()
        # Equal for roots that are the same type on both sides: joint class or facts.
        self.same: object = None
        # Its facts spell a duplicated name, so they are computed again once tags are known.
        self.spells_duplicate = False


class _ShiftedNames:
    """String offsets of one part of a `_Graph`, moved into that part's range."""

    def __init__(self, shift: int):
        self.shift = shift

    def __getitem__(self, offset: int) -> int:
        return offset + self.shift


class _Graph:
    """Some types of one or two BTFs, renumbered 1..n (part by part, in id order) with
    each part's string offsets moved into a range of its own: the shape that
    `canonical_order` and `equivalence_classes` read. The types must reach only each
    other (and void)."""

    first_id = 1
    _SHIFT = 40

    def __init__(self, parts: list[tuple[Lookup, list[int]]]):
        self._types: list[Type | None] = [None]
        self._lookups = []
        for number, (lookup, ids) in enumerate(parts):
            all_types, names = lookup.types, lookup.names
            new_id = {0: 0}
            for position, old in enumerate(ids, len(self._types)):
                new_id[old] = position
            shifted = _ShiftedNames(number << self._SHIFT)
            self._types += [all_types[old].remap(new_id, shifted) for old in ids]
            self._lookups.append(names)
        self.last_id = len(self._types) - 1

    def all_types(self) -> list[Type | None]:
        return self._types

    def names(self, offset: int) -> str:
        return self._lookups[offset >> self._SHIFT](offset & ((1 << self._SHIFT) - 1))


def _reach(types: Types, roots: Iterable[int]) -> list[int]:
    """`roots` and every type they lead to (void left out), in id order."""
    seen = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node and node not in seen:
            seen.add(node)
            stack.extend(types[node].refs())
    return sorted(seen)


def settle_duplicates(old: Lookup, new: Lookup, old_groups: dict[tuple, list[Root]],
                      new_groups: dict[tuple, list[Root]]) -> None:
    """Give the roots of duplicated names what `pair_named` reads: the key that says two
    roots are the same type, and the sort key (their label, as the canonical order begins,
    then their facts, computed with duplicated names untagged).

    Where copies on one side have equal facts, facts cannot tell which is which. For such
    names, what their roots reach on both sides goes into one graph, whose equivalence
    classes (the dedup's refinement) decide sameness, and each side's canonical order
    which copy comes first (class numbers are no order: they depend on ids). Only what
    those roots reach is ordered and refined: on a generic kernel (two `struct dma_chan`)
    that is thousands of types (7,520 of 6.1's 100 k), so the compiled part does it where
    it applies."""
    for side, groups in ((old, old_groups), (new, new_groups)):
        for root in _roots(groups.values()):
            root.same = root.facts
            root.sort_key = (label(side.types[root.type_id], side.names), repr(root.facts), 0)
    alike = [key for key in {*old_groups, *new_groups}
             if _alike(old_groups.get(key, ())) or _alike(new_groups.get(key, ()))]
    if not alike:
        return
    old_alike = [old_groups[key] for key in alike if key in old_groups]
    new_alike = [new_groups[key] for key in alike if key in new_groups]
    if not _compiled_joint(old, new, old_alike, new_alike):
        _reference_joint(old, new, old_alike, new_alike)


def _compiled_joint(old: Lookup, new: Lookup, old_alike: list[list[Root]],
                    new_alike: list[list[Root]]) -> bool:
    """`_reference_joint` by the compiled part (diff/csrc/diffjoint.c), on the sections' words;
    False where it does not apply (then the reference runs)."""
    if not accel.wanted("diff_joint") or old.chain is None or new.chain is None:
        return False
    args: list = []
    for lookup, groups in ((old, old_alike), (new, new_alike)):
        args += [*lookup.chain, array("I", (r.type_id for r in _roots(groups)))]
    made = accel.joint(*args)
    if made is None:
        return False
    old_reach, old_places, new_reach, new_places, joint = made
    classes = memoryview(joint).cast("I")
    offset = 1
    for groups, reach, places in ((old_alike, old_reach, old_places),
                                  (new_alike, new_reach, new_places)):
        ids, position = memoryview(reach).cast("I"), memoryview(places).cast("I")
        for root in _roots(groups):
            at = bisect_left(ids, root.type_id)
            root.same = classes[offset + at]
            root.sort_key = (*root.sort_key[:2], position[at])
        offset += len(ids)
    return True


def _reference_joint(old: Lookup, new: Lookup, old_alike: list[list[Root]],
                     new_alike: list[list[Root]]) -> None:
    """The alike roots' `same` (their class in the graph of what they reach on both sides)
    and the last part of their sort key (their place in their side's canonical order of
    what they reach): the reference."""
    old_reach = _reach(old.types, (r.type_id for r in _roots(old_alike)))
    new_reach = _reach(new.types, (r.type_id for r in _roots(new_alike)))
    joint = _Graph([(old, old_reach), (new, new_reach)])
    classes, _ = equivalence_classes(joint)  # type: ignore[arg-type]
    offset = 1
    for side, groups, reach in ((old, old_alike, old_reach), (new, new_alike, new_reach)):
        class_of = dict(zip(reach, classes[offset:]))
        offset += len(reach)
        order = canonical_order(_Graph([(side, reach)]))  # type: ignore[arg-type]
        position = {reach[node - 1]: n for n, node in enumerate(order)}
        for root in _roots(groups):
            root.same = class_of[root.type_id]
            root.sort_key = (*root.sort_key[:2], position[root.type_id])


def _roots(groups: Iterable[Iterable[Root]]) -> Iterable[Root]:
    return (root for group in groups for root in group)


def _alike(group: Iterable[Root]) -> bool:
    """Whether a group holds two roots with equal facts that are not interchangeable: a
    type other roots refer to by its tag, or facts that spell a tag themselves."""
    group = list(group)
    seen: set[tuple] = set()
    for root in group:
        if root.facts in seen and (root.family in _REFERABLE or any(
                r.spells_duplicate for r in group if r.facts == root.facts)):
            return True
        seen.add(root.facts)
    return False


def pair_named(olds: list[Root], news: list[Root]) -> Pairing:
    """Same-named roots paired: the same type first, then by best overall match, then the
    rest in order. Pairs, removed and added each come in order of their sort keys."""
    pairs, rest_old, rest_new = _pair_same(olds, news, _same)
    if rest_old and rest_new:
        pairs += _best_match(rest_old, rest_new)
        paired = {id(r) for pair in pairs for r in pair}
        rest_old = [r for r in rest_old if id(r) not in paired]
        rest_new = [r for r in rest_new if id(r) not in paired]
    pairs += zip(rest_old, rest_new)
    shared = min(len(rest_old), len(rest_new))
    pairs.sort(key=lambda pair: pair[0].sort_key)
    return pairs, rest_old[shared:], rest_new[shared:]


def pair_anonymous(olds: list[Root], news: list[Root]) -> Pairing:
    """Anonymous roots: identical facts first, then pairs that are each other's only best
    match among those sharing enough member names; the others stay added and removed."""
    for root in (*olds, *news):
        root.sort_key = (repr(root.facts),)
    pairs, rest_old, rest_new = _pair_same(olds, news, _facts)
    if rest_old and rest_new:
        scored = _scores(rest_old, rest_new, anonymous=True)
        found = sorted(_unambiguous(scored))
        pairs += [(rest_old[i], rest_new[j]) for i, j in found]
        used_old = {i for i, _ in found}
        used_new = {j for _, j in found}
        rest_old = [r for i, r in enumerate(rest_old) if i not in used_old]
        rest_new = [r for j, r in enumerate(rest_new) if j not in used_new]
    return pairs, rest_old, rest_new


def _pair_same(olds: list[Root], news: list[Root], key: Callable[[Root], object]
               ) -> Pairing:
    """Roots with equal keys paired, each side in sort-key order; the rest in that order."""
    olds = sorted(olds, key=_sort_key)
    news = sorted(news, key=_sort_key)
    by_key: dict[object, list[Root]] = defaultdict(list)
    for root in news:
        by_key[key(root)].append(root)
    pairs: list[tuple[Root, Root]] = []
    rest_old = []
    for root in olds:
        same = by_key.get(key(root))
        if same:
            pairs.append((root, same.pop(0)))
        else:
            rest_old.append(root)
    taken = {id(n) for _, n in pairs}
    return pairs, rest_old, [r for r in news if id(r) not in taken]


def _same(root: Root) -> object:
    return root.same


def _facts(root: Root) -> object:
    return root.facts


def _sort_key(root: Root) -> tuple:
    return root.sort_key


def _similarity_keys(facts: tuple) -> set:
    return {key for key, _ in facts if len(key) > 1}


def _scores(olds: list[Root], news: list[Root], anonymous: bool
            ) -> list[tuple[int, int, int]]:
    """(-score, old index, new index) for every pair sharing a member, parameter or
    enumerator name; the score counts shared names and identical facts."""
    old_keys = [_similarity_keys(r.facts) for r in olds]
    new_keys = [_similarity_keys(r.facts) for r in news]
    old_items = [set(r.facts) for r in olds]
    new_items = [set(r.facts) for r in news]
    index: dict = defaultdict(list)
    for j, keys in enumerate(new_keys):
        for key in keys:
            index[key].append(j)
    scored = []
    for i, keys in enumerate(old_keys):
        shared: dict[int, int] = defaultdict(int)
        for key in keys:
            for j in index.get(key, ()):
                shared[j] += 1
        for j, count in shared.items():
            smaller = min(len(keys), len(new_keys[j])) or 1
            if anonymous and count / smaller < _ANON_OVERLAP:
                continue
            same_items = len(old_items[i] & new_items[j])
            scored.append((-(count + same_items), i, j))
    scored.sort()
    return scored


def _best_match(olds: list[Root], news: list[Root]) -> list[tuple[Root, Root]]:
    """The pairing with the highest total score (an assignment problem). Nodes and edges
    go in in sort-key and score order, so ties are settled by the types too.

    Most groups (a kernel upgrade's are 2 by 1 or 1 by 2) are settled without networkx,
    whose import is a tenth of diff's time: one root on a side pairs with its best-scored
    counterpart, on a tie the first old one or the last new one (as networkx's blossom
    algorithm, which grows its first tree from the last node put in); a small group of
    distinct sort keys takes its best pairing, and of several that tie the first in
    `_first_best`'s order, a rule of ours where networkx's choice follows its internals
    (tests/test_diff_duplicates.py holds both to networkx's best total). Only larger
    groups, or old roots of equal sort keys, go to networkx."""
    scored = _scores(olds, news, anonymous=False)
    if scored and (len(olds) == 1 or len(news) == 1):
        best = [(i, j) for score, i, j in scored if score == scored[0][0]]
        i, j = best[0] if len(news) == 1 else max(best, key=lambda pair: pair[1])
        return [(olds[i], news[j])]
    if len(scored) <= _SMALL_MATCHING and len({r.sort_key for r in olds}) == len(olds):
        return [(olds[i], news[j]) for i, j in sorted(_first_best(scored))]
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from((0, i) for i in range(len(olds)))
    graph.add_nodes_from((1, j) for j in range(len(news)))
    for score, i, j in scored:
        graph.add_edge((0, i), (1, j), weight=-score)
    found = []
    for a, b in nx.max_weight_matching(graph):
        (_, i), (_, j) = sorted((a, b))
        found.append((olds[i], news[j]))
    return found


def _first_best(scored: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """The pairs of a pairing of the highest total score: of several that tie, the one
    that takes the earliest pair of `scored` (best score first, then sort-key order of
    the old root and of the new one), then the earliest of the rest, and so on. Every
    score is positive, so a best pairing leaves no edge that could be added."""
    best: list = [-1, ()]  # score, the first pairing that reaches it

    def walk(at: int, total: int, used_old: frozenset, used_new: frozenset,
             chosen: tuple) -> None:
        if at == len(scored):
            if total > best[0]:
                best[:] = [total, chosen]
            return
        score, i, j = scored[at]
        if i not in used_old and j not in used_new:
            walk(at + 1, total - score, used_old | {i}, used_new | {j}, (*chosen, (i, j)))
        walk(at + 1, total, used_old, used_new, chosen)

    walk(0, 0, frozenset(), frozenset(), ())
    return list(best[1])


def _unambiguous(scored: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Pairs that are each other's only best match. Anonymous types with nothing but a
    shape in common (hundreds of `union { event; handler; }`) stay added and removed
    rather than being paired at random."""
    best_old: dict[int, list[int]] = {}
    best_new: dict[int, list[int]] = {}
    for score, i, j in scored:
        for best, me in ((best_old, i), (best_new, j)):
            entry = best.get(me)
            if entry is None:
                best[me] = [score, 1]
            elif entry[0] == score:
                entry[1] += 1
    return [(i, j) for score, i, j in scored
            if best_old[i] == [score, 1] and best_new[j] == [score, 1]]
