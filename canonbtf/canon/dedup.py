"""Dedup: the quotient of the type graph by structural equivalence, with forward
declarations resolved optimistically (docs/ORDER.md, "Dedup").

Every compile unit declares what it does not define: `struct file *` is a PTR to FWD
`file` in one unit and a PTR to the full `struct file` in the next, so one struct comes
out of a kernel's units in hundreds of variants that differ only in which pointees are
declarations. Resolving a declaration only once its name has a single distinct definition
is not enough: each variant keeps another name ambiguous (measured on 200 units of the
6.1 kernel: 99,720 records still 92,332 types). So a declaration stands for its name's
definitions while those all share one class, and for itself once they split; classes
only ever split, so refining reaches the greatest fixpoint, which depends only on the set
of types, never on their ids or on how units were batched.

The first partition groups types by a key that abstracts every reference to a named
struct, union or enum as that name. Every C reference cycle passes through such a name,
so the keys are computed bottom-up; types with different keys are never equivalent, so
this partition is coarser than the answer (and on a kernel, almost the answer).

For split BTF the base takes part: a module type equivalent to a base type becomes that
base type (the base itself never changes). VARs merge only as entries of DATASECs that
merge: two identical sections are one, two variables of one name and type are not.
"""

from __future__ import annotations

import itertools

from ..btf import format as f
from ..btf import model
from ..btf.model import Btf
from ..tuples import named_tuple
from . import accel
from .keyed import KeyedTypes
from .labels import label
from .refine import Partition
from .twins import declared_twins

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence


def token_of(kind: int, name: str, kflag: int) -> tuple | None:
    """What a reference to a type is abstracted to in the first partition: the name of a
    named struct, union or enum (or of its declaration); None for every other type. The
    keyed merge (dwarf/keys.py) abstracts records with this same function: its soundness
    rests on the two abstractions being one."""
    if not name:
        return None
    if kind == f.STRUCT or kind == f.UNION:
        return ("aggregate", name, kind == f.UNION)
    if kind == f.FWD:
        return ("aggregate", name, bool(kflag))
    if kind == f.ENUM or kind == f.ENUM64:
        return ("enum", name)
    return None


def is_declaration(kind: int, items: Sequence) -> bool:
    """Whether a type only declares its name: a FWD, or an enum without enumerators."""
    return kind == f.FWD or ((kind == f.ENUM or kind == f.ENUM64) and not items)


def _abstract_keys(labels: list, edges: list, tokens: list, intern: dict | None = None,
                   key: list[int] | None = None, spelled: bool = False,
                   token_key: list[int] | None = None) -> list[int]:
    """Key of every type: its label and its edges, where an edge to a named aggregate or
    enum is that name and any other edge is the target's key (interned to ints). With
    `intern` and `key` (a base's, `BaseIndex`) only the types without a key are done; the
    numbers differ from a run over everything, the equalities do not. `spelled`: `intern`
    is keyed by the repr of what it interns (one string per key loads faster than the
    tuples: BaseIndex). `token_key` (filled in place) holds the interned token of each
    type that has one, 0 for the others; given, the types it covers are taken as done."""
    count = len(labels)
    intern = {} if intern is None else intern
    key = [0] * count if key is None else key + [0] * (count - len(key))
    if token_key is None:
        token_key = []
    done = len(token_key)
    token_key.extend([0] * (count - done))
    for node in range(max(done, 1), count):
        if tokens[node] is not None:
            item = ("name", tokens[node])
            token_key[node] = intern.setdefault(repr(item) if spelled else item,
                                                len(intern) + 1)
    on_path = [False] * count
    for root in range(1, count):
        if key[root]:
            continue
        stack = [root]
        while stack:
            node = stack[-1]
            if key[node]:
                stack.pop()
                continue
            pending = [s for s in edges[node]
                       if s and not token_key[s] and not key[s] and not on_path[s]]
            if pending and not on_path[node]:
                on_path[node] = True
                stack.extend(pending)
                continue
            parts = []
            for s in edges[node]:
                if not s:
                    parts.append(0)
                elif token_key[s]:
                    parts.append(token_key[s])
                elif key[s]:
                    parts.append(key[s])
                else:
                    # A cycle through anonymous types only (not valid C): refinement will
                    # sort it out, starting from its members' labels.
                    parts.append(-1)
            item = (labels[node], tuple(parts))
            key[node] = intern.setdefault(repr(item) if spelled else item, len(intern) + 1)
            on_path[node] = False
            stack.pop()
    return key


def all_labels(btf: Btf, index: BaseIndex | None = None) -> list:
    """The label of every type id, base included ([0] is None), as dedup reads them; with
    `index` the base's are None (its keys are made: nothing reads them)."""
    if index is not None:
        return [None] * btf.first_id + _own_labels(btf)
    if not isinstance(btf, Btf):  # a Btf-like graph (diff/pairing.py): all its types are own
        names = btf.names
        return [None] + [label(t, names) for t in btf.all_types()[1:]]
    chain = []
    while btf is not None:
        chain.append(btf)
        btf = btf.base
    return [None] + [one for part in reversed(chain) for one in _own_labels(part)]


def _own_labels(btf: Btf) -> list:
    done = accel.labels(btf)
    if done is not None:
        return done
    names = btf.names
    return [label(t, names) for t in btf.types]


def _edges_and_tokens(btf: Btf, own: list) -> tuple[list, list]:
    """Edges and tokens of the types `own` (of `btf`, names from its string chain)."""
    names = btf.names
    model.per_kind()
    refs = model.REFS
    edges = [tuple(refs[t.kind](t)) for t in own]
    tokens = [token_of(t.kind, names(t.name_off), t.kflag) for t in own]
    return edges, tokens


class BaseIndex(named_tuple("BaseIndex", "edges tokens keys intern token_keys declares kinds")):
    """What the dedup reads of a base BTF, which the same base always gives: edges, tokens
    and abstract keys (lists, with their intern table, a dict keyed by repr), declaration
    flags and kinds (bytes), by base id ([0] for void). A module's dedup spent most of its
    time there (virtio_net: 0.58 of 0.88 s), so basecache.py keeps it on disk (the tuple,
    marshalled); the labels are in the intern table's keys only (a cache with labels as
    tuples took 0.18 s to load). With it a module's dedup never decodes the base's
    `Type`s."""

    __slots__ = ()

    @classmethod
    def of(cls, base: Btf) -> BaseIndex:
        labels = all_labels(base)
        types = base.all_types()[1:]
        edges, tokens = _edges_and_tokens(base, types)
        edges.insert(0, ())
        tokens.insert(0, None)
        intern: dict = {}
        token_keys: list[int] = []
        keys = _abstract_keys(labels, edges, tokens, intern, spelled=True,
                              token_key=token_keys)
        declares = bytes([0] + [is_declaration(t.kind, t.items) for t in types])
        kinds = bytes([0] + [t.kind for t in types])
        return cls(edges, tokens, keys, intern, token_keys, declares, kinds)

    def fits(self, base: Btf) -> bool:
        """Whether the index has the shape of `base`'s (a cache file may be damaged)."""
        count = base.last_id + 1
        return (len(self.edges) == len(self.tokens) == len(self.keys)
                == len(self.token_keys) == len(self.declares) == len(self.kinds) == count
                and isinstance(self.intern, dict) and isinstance(self.declares, bytes)
                and isinstance(self.kinds, bytes))


def _base_splits_names(inputs: KeyedTypes, first: int, last: int) -> list[int]:
    """An own definition (ids `first`..`last`) of each name the own types define with
    one key and the base with another. A name the own types only declare is no matter:
    types equal by key that reach only its declarations are equal records."""
    keys, tokens, declares = inputs.keys, inputs.tokens, inputs.declares
    defined: dict = {}  # token -> (its own definitions' key, or 0 for two keys; one of them)
    for node in range(first, last + 1):
        token = tokens[node]
        if token and not declares[node]:
            key, _ = defined.setdefault(token, (keys[node], node))
            if key != keys[node]:
                defined[token] = (0, node)
    single = {token: found for token, found in defined.items() if found[0]}
    holders = accel.members(tokens, single, last)
    if holders is None:
        holders = [node for node in range(1, first) if tokens[node] in single]
    split = {tokens[node] for node in holders
             if node < first and not declares[node] and keys[node] != single[tokens[node]][0]}
    return sorted(single[token][1] for token in split)


def _token_of_type(t: model.Type, btf: Btf) -> tuple:
    return token_of(t.kind, btf.strings.get(t.name_off), t.kflag)


def equivalence_classes(btf: Btf, labels: list | None = None,
                        index: BaseIndex | None = None) -> tuple[list[int], list[int]]:
    """(class of every type id, declaration -> the definition it stands for or 0), for
    every type including the base's; equal classes mean equivalent types. `index` holds
    what the base (`btf.base`) gives, computed once."""
    refined = _refined(btf, _reference_inputs(btf, labels, index))
    return refined.classes, refined.stands_for


class _Refinement(named_tuple("_Refinement", "classes stands_for candidates keys rank edges "
                                              "tokens declares")):
    """The refined partition and what it was computed from (for `declared_twins`, which
    groups the `candidates`: the ids sharing a key; from the compiled part only those
    whose key's ids ended in two or more classes, the only groups it reads). A
    named tuple, not a dataclass (see elf/read.Section)."""

    __slots__ = ()


def _reference_inputs(btf: Btf, labels: list | None, index: BaseIndex | None) -> KeyedTypes:
    """The refinement's inputs computed in Python (every type's edges at once)."""
    if labels is None:
        labels = all_labels(btf, index)
    if index is None:
        types = btf.all_types()
        edges, tokens = _edges_and_tokens(btf, types[1:])
        edges.insert(0, ())
        tokens.insert(0, None)
        keys = _abstract_keys(labels, edges, tokens)
        declares = [False] + [is_declaration(t.kind, t.items) for t in types[1:]]
        return KeyedTypes(keys, tokens, declares, _KindOf(types), lambda nodes: edges)
    own = btf.types  # the base's part is the index's: its Types are never decoded
    edges, tokens = _edges_and_tokens(btf, own)
    edges = index.edges + edges
    tokens = index.tokens + tokens
    keys = _abstract_keys(labels, edges, tokens, dict(index.intern), index.keys,
                          spelled=True, token_key=list(index.token_keys))
    declares = index.declares + bytes([is_declaration(t.kind, t.items) for t in own])
    kinds = index.kinds + bytes([t.kind for t in own])
    return KeyedTypes(keys, tokens, declares, kinds, lambda nodes: edges)


class _KindOf:
    """The kind of a type id, read from the `Type` when asked (merge_map reads a few)."""

    __slots__ = ("types",)

    def __init__(self, types: list):
        self.types = types

    def __getitem__(self, node: int) -> int:
        return self.types[node].kind if node else 0


def _refined(btf: Btf, inputs: KeyedTypes) -> _Refinement:
    """The refined partition of `btf`'s types, from what `inputs` says of them (the
    compiled part's or `_reference_inputs`)."""
    last = btf.last_id
    keys, tokens, declares = inputs.keys, inputs.tokens, inputs.declares
    # A type alone with its key is a class of its own from the start to the end: it keeps
    # its id as a fixed rank, and only the others are refined (positions after every
    # id). On the 6.1 kernel's keyed merge 18 of 95,690 types share a key; in a
    # module's dedup, nearly all of the base's types are alone.
    shared = _sharing(keys, last)
    made = inputs.refined(shared) if inputs.refined is not None else None
    if made is not None:
        rank, stands_for, classes, candidates = made
        return _Refinement(classes, stands_for, candidates, keys, rank,
                           _EdgesRead(inputs.edges_of), tokens, declares)
    rank = list(range(last + 1))
    partition = Partition(shared, [keys[node] for node in shared], rank, last + 1)
    # Only the types sharing a key read their edges (signatures, twins).
    edges = inputs.edges_of(shared)

    declarations, definitions = _named_groups(tokens, declares, last)
    # Only refined types read ranks that change.
    preds: dict[int, list[int]] = {}
    for node in shared:
        for s in edges[node]:
            if s:
                preds.setdefault(s, []).append(node)
    stands_for = [0] * (last + 1)

    def settle(token: tuple) -> None:
        """A name's declarations stand for its definitions while those share a class."""
        defs = definitions.get(token)
        target = 0
        if defs:
            first_rank = rank[defs[0]]
            if all(rank[d] == first_rank for d in defs):
                target = defs[0]
        for decl in declarations.get(token, ()):
            stands_for[decl] = target

    for token in declarations:
        settle(token)

    def signature(node: int) -> tuple:
        return tuple([rank[stands_for[s] or s] for s in edges[node]])

    def after_round(changed: list[int]) -> list[int]:
        touched = {tokens[n] for n in changed if tokens[n] and not declares[n]}
        readers: list[int] = []
        for token in touched:
            settle(token)
            for decl in declarations.get(token, ()):
                readers.extend(preds.get(decl, ()))
        return readers

    partition.refine(signature, preds, after_round=after_round)
    classes = list(rank)  # only declarations stand for another type
    for decls in declarations.values():
        for decl in decls:
            if stands_for[decl]:
                classes[decl] = rank[stands_for[decl]]
    return _Refinement(classes, stands_for, shared, keys, rank, edges, tokens, declares)


class _EdgesRead(dict):
    """Edges by id, read when first asked for: after the compiled refinement only
    `declared_twins` reads a few."""

    def __init__(self, edges_of: Callable[[list[int]], dict[int, tuple]]):
        super().__init__()
        self.edges_of = edges_of

    def __missing__(self, node: int) -> tuple:
        edges = self[node] = self.edges_of([node])[node]
        return edges


def _named_groups(tokens: Sequence, declares: Sequence, last: int) -> tuple[dict, dict]:
    """(token -> its declarations, token -> its definitions), ids 1..`last` in id order;
    definitions only of the tokens some declaration has, the only ones `settle` reads.
    Nearly every base type is a definition no module declaration names: they are
    skipped by C-level loops (compress, map) instead of a Python step each."""
    ids = range(1, last + 1)
    declarations: dict = {}
    # Tokens are truthy (tuples, or the compiled part's numbers from 1); none is None or 0.
    for node in _declaring(declares, last):
        if tokens[node]:
            declarations.setdefault(tokens[node], []).append(node)
    definitions: dict = {}
    holders = accel.members(tokens, declarations, last)
    if holders is None:
        wanted = map(declarations.__contains__, itertools.islice(tokens, 1, last + 1))
        holders = itertools.compress(ids, wanted)
    for node in holders:
        if not declares[node]:
            definitions.setdefault(tokens[node], []).append(node)
    return declarations, definitions


def _declaring(declares: Sequence, last: int) -> Iterable[int]:
    """The ids 1..`last` that declare, ascending: found by `bytes.find` where the flags
    are bytes (keyed_types': a few thousand of a base's 95 k)."""
    if isinstance(declares, bytes):
        found = []
        at = declares.find(1, 1, last + 1)
        while at >= 0:
            found.append(at)
            at = declares.find(1, at + 1, last + 1)
        return found
    return itertools.compress(range(1, last + 1), itertools.islice(declares, 1, last + 1))


def _sharing(values: Sequence[int], last: int) -> list[int]:
    """The ids 1..`last` whose value (a key or class: a small non-negative int) another
    id of them has too, in id order. Counted in an array: a dict or a list per value
    was 0.4 GB of `sort --dedup`'s 0.6 GB peak on 1.5 M types (bench_all's 16 x)."""
    done = accel.sharing(values, last)
    if done is not None:
        return done
    from array import array  # imported here: only the pure path needs it (u32.py says why)

    counts = array("I", bytes(4 * (max(itertools.islice(values, 1, last + 1), default=0) + 1)))
    for node in range(1, last + 1):
        counts[values[node]] += 1
    return [node for node in range(1, last + 1) if counts[values[node]] > 1]


def _dedup_classes(btf: Btf, inputs: KeyedTypes) -> tuple[list[int], list[bool], Sequence]:
    """Classes of the dedup: equivalence, then declarations resolved in context
    (twins.py); which types joined a more defined class that way; which declare only."""
    r = _refined(btf, inputs)
    into = declared_twins(r.candidates, r.keys, r.rank, r.edges, r.tokens, r.declares,
                          r.stands_for)
    moved = [False] * len(r.classes)
    if into and btf.first_id > 1:  # the base never changes
        base_classes = set(itertools.islice(r.classes, 1, btf.first_id))
        for c in [c for c in into if c in base_classes]:
            del into[c]
    if not into:
        return r.classes, moved, r.declares
    classes = list(r.classes)
    for node in [n for n, c in enumerate(classes) if c in into]:
        c = classes[node]
        final, steps = c, 0
        while final in into and steps <= len(into):
            final = into[final]
            steps += 1
        if final != c:
            classes[node] = final
            moved[node] = True
    return classes, moved, r.declares


def _merge_groups(classes: Sequence[int], moved: Sequence[bool], declares: Sequence,
                  kinds: Sequence[int], last: int) -> dict[int, int]:
    """Of the ids sharing a class, each but its group's representative -> it.

    A class becomes its lowest-id definition (a base type, if it has one), or its
    lowest-id declaration when it has no definition; of a class that less defined twins
    joined (twins.py), one of its own types. Variables merge only with their DATASEC."""
    members: dict[int, list[int]] = {}
    for node in _sharing(classes, last):
        members.setdefault(classes[node], []).append(node)
    into: dict[int, int] = {}
    for group in members.values():
        if kinds[group[0]] == f.VAR:
            continue
        rep = min(group, key=lambda n: (moved[n], bool(declares[n]), n))
        for node in group:
            if node != rep:
                into[node] = rep
    return into


class BaseSplitsNames(Exception):
    """Split BTF merged by its names before its base was known (`premerged`) holds
    names that the base defines otherwise (`tokens`, as token_of makes them): that merge
    may have joined types the dedup keeps apart."""

    def __init__(self, tokens: frozenset[tuple]):
        super().__init__(sorted(tokens))
        self.tokens = tokens


def merge_map(btf: Btf, labels: list | None = None, index: BaseIndex | None = None,
              inputs: KeyedTypes | None = None, premerged: bool = False) -> dict[int, int]:
    """Every type id (own or base) that merges into another -> the id it merges into,
    which itself merges into nothing. `inputs`: as `_refined` takes them. `premerged`:
    the own types come from dwarf/keys.py's keyed merge of a module alone, which relied
    on each name it saw one definition of having no other; BaseSplitsNames when the base
    has one."""
    if inputs is None:
        inputs = _reference_inputs(btf, labels, index)
    if premerged and btf.first_id > 1:
        split = _base_splits_names(inputs, btf.first_id, btf.last_id)
        if split:
            raise BaseSplitsNames(frozenset(_token_of_type(btf.type_by_id(node), btf)
                                            for node in split))
    classes, moved, declares = _dedup_classes(btf, inputs)
    kinds = inputs.kinds
    first = btf.first_id
    into = None
    if inputs.refined is not None:  # the compiled part's arrays
        into = accel.merge_groups(classes, moved, declares, kinds)
    if into is None:
        into = _merge_groups(classes, moved, declares, kinds, btf.last_id)
    # A DATASEC merging away takes its own variables along, in id order.
    for node in sorted(n for n in into if n >= first and kinds[n] == f.DATASEC):
        for (var, _, _), (rep_var, _, _) in zip(btf.type_by_id(node).items,
                                                btf.type_by_id(into[node]).items):
            if var != rep_var and var >= first:
                into[var] = rep_var
    for node, target in into.items():
        seen = 0
        while target in into and seen <= len(into):
            target = into[target]
            seen += 1
        into[node] = target
    return into

