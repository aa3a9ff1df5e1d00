"""Keyed merge: the parent merges a kernel's units from their abstract keys, not records.

The global dedup (canon/dedup.py) starts from *abstract keys*: a type's label and
edges, where an edge to a named struct, union or enum (a *token*) is that name and any
other edge is the target's key. The 6.1 kernel's units make about 3.4 M records with
96,162 distinct keys, and dedup ends with 94,652 types: the keys are almost the answer,
and unlike the answer they are local (a unit's records give their keys). So workers
send keys instead of records: each worker interns the keys of its units' records (an
*entry*: the record with every reference replaced by the key or token it stands for)
and sends each distinct entry once, plus, per unit, the set of keys its records have.

The parent unifies the workers' entries and marks a key *unsafe* when some of its types
might not be equivalent: it reaches, through its entries, a token whose definitions
have two keys (a name two units define differently), a declaration-only token with two
declaration keys, or a cycle through anonymous types (`-1`, not valid C). Every other
(*safe*) key is one class of the dedup's equivalence, whatever the types behind it:
    Q = (dedup's equivalence) + (equal safe keys) is stable under the dedup's rule:
    types of one safe key have equal labels and, edge by edge, targets of one safe key,
    or declarations/definitions of one safe token, which all stand for the single
    definition key of that token (or its single declaration key); so Q is contained in
    the dedup's equivalence, which is the coarsest stable partition under the keys.
The units holding an unsafe key are encoded again with records (`TypePool`); the Btf
handed to the dedup has one type per safe key (references to a safe token go to its
definition) plus those records, and dedups to exactly what the records of every unit
would.

A module is merged alone, then made split BTF over its base (`build(..., base)`). The
argument holds over base and module while every name the module defines with one key
has no other definition in the base: a key's types then reach, through each name, one
definition or declarations only. The dedup checks it where it keys the base anyway
(dedup.merge_map's `premerged`); when the base defines such a name otherwise, encode.py
merges the keys again with that name taken as ambiguous (`split`), so the units reaching
it are sent as records (20 of 1,600 Debian 6.1 and 6.12 modules, tools/keyed_modules.py).

Measured on the 6.1 kernel (-j2): 47 unsafe keys, 17 of 2,172 units sent again; the
parent holds 96 k entries instead of 890 k records (peak 0.44 GB instead of 1.6 GB) and
its merge takes 5 s instead of 31 s; the output bytes are the same.
"""

from __future__ import annotations

from .. import u32
from ..btf import kinds
from ..btf.model import Btf
from ..canon.dedup import is_declaration, token_of
from ..spec import kinds as spec
from ..tuples import named_tuple
from .fragment import RECORD_REFS, RECORD_REMAP, Fragment, records_btf

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from array import array
    from collections.abc import Sequence

Record = tuple
CYCLE = -1  # the part of an edge that closes a cycle through anonymous types

# Per kind (index = kind), from kinds.KINDS: (record, part, waiting) -> the record's entry
# (every edge r replaced by part[r]) or, when edges r have waiting[r], the list of those.
_READY = kinds.specialise("ready", "record")


class KeyFragment(named_tuple("KeyFragment", "entries unit_keys units dies skips")):
    """What a worker in keyed mode sends: new entries (key id = index + first: a list of
    tuples, or PackedEntries) and, per unit, (unit offset, the key ids of its records:
    an array('I'), or the compiled encoder's bytes of u32s), then counts as Fragment's;
    a plain record, pickled to the parent."""

    __slots__ = ()

    def with_tuples(self) -> KeyFragment:
        entries = self.entries
        return self if isinstance(entries, list) else self._replace(entries=entries.unpacked())


# The tags of PackedEntries' cells (dwarf/csrc/merge.h's CELL_*).
CELL_INT, CELL_NAME, CELL_OBJECT, CELL_TOKEN = 1, 2, 3, 4


class PackedEntries(named_tuple("PackedEntries", "cells ends names objects")):
    """New entries as the compiled encoder sends them (encoder_bindings.c), which the
    compiled merge reads without a tuple made per entry: `cells`, (tag, value) pairs of
    signed 64-bit words in merge.h's order; `ends`, each entry's end in cells (unsigned
    32-bit); `names`, the strs of NAME cells and `objects`, the values of OBJECT and TOKEN
    cells (tokens, VAR places, ints past 64 bits), by index. An INT cell is the int
    itself, a reference's key id too."""

    __slots__ = ()

    def unpacked(self) -> list[Record]:
        """The entry tuples (keys.py's): for the reference merge, where the compiled one
        does not take a fragment."""
        from array import array  # the reference's only (u32.py says why not at the top)

        cells = array("q", self.cells)
        fields: list = []
        for tag, value in zip(cells[::2], cells[1::2]):
            if tag == CELL_INT:
                fields.append(value)
                continue
            listed = self.names if tag == CELL_NAME else self.objects
            if tag not in (CELL_NAME, CELL_OBJECT, CELL_TOKEN) or not 0 <= value < len(listed):
                raise ValueError(f"packed entries: a cell ({tag}, {value})")
            fields.append(listed[value])
        entries = []
        first = 0
        for end in array("I", self.ends):
            if not first < end <= len(fields) or end - first < 6:
                raise ValueError(f"packed entries: an entry in cells {first} to {end}")
            kind, name, kflag, sot = fields[first:first + 4]
            if type(kind) is not int or not 0 <= kind <= spec.MAX_KIND:
                raise ValueError(f"packed entries: kind {kind!r}")
            row = spec.ROWS[kind]
            at = first + 4
            if row.extra:
                extra = tuple(fields[at:at + len(row.extra)])
                at += len(row.extra)
            else:
                extra = fields[at]
                at += 1
            count, width = fields[at], len(row.item)
            if type(count) is not int or end - at - 1 != count * width or (count and not width):
                raise ValueError(f"packed entries: an entry of kind {kind} not of its shape")
            items = tuple(tuple(fields[i:i + width]) for i in range(at + 1, end, width or 1))
            entries.append((kind, name, kflag, sot, extra, items))
            first = end
        if first != len(fields):
            raise ValueError("packed entries: cells past the last entry")
        return entries


def _key_ids(ids: set[int]) -> array:
    """A unit's key ids as the pure encoder sends them (the array module imported here:
    the compiled encoder's runs do without it, u32.py says why)."""
    from array import array

    return array("I", ids)


class KeyPool:
    """A worker's interned keys; add units, take fragments of what is new."""

    def __init__(self):
        self.entries: list[Record | None] = [None]
        self._ids: dict[Record, int] = {}
        self._tokens: dict[tuple, tuple] = {}
        self._unit_keys: list[tuple[int, array]] = []
        self._sent = 1

    def add_unit(self, records: list[Record | None], unit=None) -> list[int]:
        """Key ids of a unit's records (index = local number; [0] is 0 for void)."""
        count = len(records)
        part: list = [CYCLE] * count  # what an edge to the node becomes in an entry
        part[0] = 0
        # waiting[n]: n is neither void nor a token, has no key yet and is not being
        # expanded (on the DFS path), so an entry with an edge to n must wait for it.
        waiting = [True] * count
        waiting[0] = False
        tokens = self._tokens
        for n in range(1, count):
            record = records[n]
            kind = record[0]
            if kind in spec.TOKEN and record[1]:
                t = token_of(kind, record[1], record[2])
                part[n] = tokens.setdefault(t, t)
                waiting[n] = False
        key = [0] * count
        ready = _READY
        intern = self._intern
        for root in range(1, count):
            if key[root]:
                continue
            # A record whose edges all have their parts already (a third of them) takes
            # its entry here, without the DFS's stack and edge lists.
            record = records[root]
            entry = ready[record[0]](record, part, waiting)
            if entry.__class__ is list:
                self._keys_from(root, entry, records, part, waiting, key)
            else:
                intern(root, entry, part, waiting, key)
        offset = getattr(unit, "offset", -1)
        self._unit_keys.append((offset, _key_ids(set(key[1:]))))
        return key

    def _keys_from(self, root: int, pending: list[int], records: list, part: list,
                   waiting: list, key: list) -> None:
        """Keys of `root`, which waits for the records `pending`, and of those, depth
        first."""
        ready = _READY
        remap = RECORD_REMAP
        intern = self._intern
        on_path = {root}
        waiting[root] = False
        stack = [root, *pending]
        while stack:
            node = stack[-1]
            if key[node]:
                stack.pop()
                continue
            record = records[node]
            if node in on_path:
                entry = remap[record[0]](record, part)  # back from what it waited for
            else:
                entry = ready[record[0]](record, part, waiting)
                if entry.__class__ is list:
                    on_path.add(node)
                    waiting[node] = False
                    stack.extend(entry)
                    continue
            intern(node, entry, part, waiting, key)
            on_path.discard(node)
            stack.pop()

    def _intern(self, node: int, entry: Record, part: list, waiting: list, key: list
                ) -> None:
        """Give `node` the key id of its `entry` (a new id for an entry not seen yet);
        an edge to it now stands for that key."""
        found = self._ids.get(entry)
        if found is None:
            found = len(self.entries)
            self.entries.append(entry)
            self._ids[entry] = found
        key[node] = found
        if part[node] == CYCLE:
            part[node] = found
        waiting[node] = False

    def fragment(self, units: int, dies: int, skips: dict[str, int]) -> KeyFragment:
        """The entries and unit key sets added since the last fragment."""
        entries = self.entries[self._sent:]
        self._sent = len(self.entries)
        unit_keys, self._unit_keys = self._unit_keys, []
        return KeyFragment(entries, unit_keys, units, dies, skips)


class _Parts(dict):
    """Maps the parts of a worker's entry to the parent's: key ids as stored, tokens and
    CYCLE to themselves (a dict, so that RECORD_REMAP looks key ids up in C)."""

    def __missing__(self, part):
        return part


class KeyedMerge:
    """The parent's side: every worker's entries unified, safe keys found."""

    def __init__(self, groups: list[list[KeyFragment]], split: frozenset[tuple] = frozenset()):
        """`split`: tokens (dedup.token_of) taken as ambiguous whatever the units say:
        names a module's base defines otherwise (dedup.BaseSplitsNames)."""
        groups = [[fragment.with_tuples() for fragment in group] for group in groups]
        self.entries: list[Record | None] = [None]
        self.ids: dict[Record, int] = {}
        self.unit_keys: list[tuple[int, array | bytes]] = []
        self.unit_key_maps: list[list[int]] = []  # per unit key set: worker id -> parent id
        self.received = 0
        ids = self.ids
        entries = self.entries
        for group in groups:
            if len(entries) == 1:
                self._first_group(group)
                continue
            parent_id = [0]
            parts = _Parts()
            for fragment in group:
                self.received += len(fragment.entries)
                for entry in fragment.entries:
                    entry = RECORD_REMAP[entry[0]](entry, parts)
                    found = ids.get(entry)
                    if found is None:
                        found = len(entries)
                        entries.append(entry)
                        ids[entry] = found
                    parts[len(parent_id)] = found
                    parent_id.append(found)
                for unit_keys in fragment.unit_keys:
                    self.unit_keys.append(unit_keys)
                    self.unit_key_maps.append(parent_id)
        self._find_unsafe(split)

    def _first_group(self, group: list[KeyFragment]) -> None:
        """The first group's entries as they are: into an empty merge each is new and
        keeps its id (a worker sends each entry once), so remapping them would give equal
        tuples. About half the 107 k entries of the 6.1 kernel at -j2: 0.26 -> 0.20 s."""
        entries = self.entries
        parent_id = list(range(1 + sum(len(fragment.entries) for fragment in group)))
        for fragment in group:
            self.received += len(fragment.entries)
            first = len(entries)
            entries.extend(fragment.entries)
            self.ids.update(zip(fragment.entries, range(first, len(entries))))
            for unit_keys in fragment.unit_keys:
                self.unit_keys.append(unit_keys)
                self.unit_key_maps.append(parent_id)

    def _find_unsafe(self, split: frozenset[tuple]) -> None:
        entries = self.entries
        count = len(entries)
        definitions: dict[tuple, set[int]] = {}
        declarations: dict[tuple, set[int]] = {}
        key_readers: dict = {}  # key id or token -> the keys whose entries have it as a part
        unsafe = [False] * count
        seeds: list = []
        for k in range(1, count):
            entry = entries[k]
            t = token_of(entry[0], entry[1], entry[2])
            if t is not None:
                group = declarations if is_declaration(entry[0], entry[5]) else definitions
                group.setdefault(t, set()).add(k)
            for p in RECORD_REFS[entry[0]](entry):
                if p == CYCLE:
                    seeds.append(k)
                elif p:
                    key_readers.setdefault(p, []).append(k)
        seeds.extend(split)
        target: dict[tuple, int] = {}  # safe token -> the key its references become
        for t in set(definitions) | set(declarations):
            keys = definitions.get(t) or declarations[t]
            if len(keys) > 1:
                seeds.append(t)
            else:
                target[t] = next(iter(keys))
        # Least fixpoint: a key is unsafe when a part is; a token when it is ambiguous or
        # its key is unsafe.
        unsafe_tokens: set[tuple] = set()
        work = seeds
        while work:
            item = work.pop()
            if item.__class__ is int:
                if unsafe[item]:
                    continue
                unsafe[item] = True
                entry = entries[item]
                t = token_of(entry[0], entry[1], entry[2])
                if t is not None and target.get(t) == item:
                    work.append(t)
            else:
                if item in unsafe_tokens:
                    continue
                unsafe_tokens.add(item)
                target.pop(item, None)
            work.extend(key_readers.get(item, ()))
        self.unsafe = unsafe
        self.target = target

    def redo_units(self) -> list[int]:
        """Offsets of the units with a record of an unsafe key (they are sent again as
        records)."""
        unsafe = self.unsafe
        out = []
        cache: dict[int, set[int]] = {}
        for (offset, keys), parent_id in zip(self.unit_keys, self.unit_key_maps):
            bad = cache.get(id(parent_id))
            if bad is None:
                bad = {w for w in range(1, len(parent_id)) if unsafe[parent_id[w]]}
                cache[id(parent_id)] = bad
            if bad and not bad.isdisjoint(u32.view(keys)):
                out.append(offset)
        return out

    def build(self, record_groups: list[list[Fragment]], base: Btf | None = None) -> Btf:
        """One type per safe key, plus the records of the units sent again; split BTF
        over `base` when given (encode.py makes sure the base leaves its names safe)."""
        last_id = base.last_id if base is not None else 0
        entries = self.entries
        unsafe = self.unsafe
        target = self.target
        type_of = [0] * len(entries)
        emitted: list[int] = []
        for k in range(1, len(entries)):
            if unsafe[k]:
                continue
            entry = entries[k]
            t = token_of(entry[0], entry[1], entry[2])
            if (t is not None and is_declaration(entry[0], entry[5]) and t in target
                    and target[t] != k):
                continue  # a declaration of a name with a definition: references go there
            emitted.append(k)
            type_of[k] = last_id + len(emitted)
        for k in range(1, len(entries)):
            if not unsafe[k] and not type_of[k]:
                entry = entries[k]
                type_of[k] = type_of[target[token_of(entry[0], entry[1], entry[2])]]
        # Parts of safe entries -> type ids: key ids by `type_of`, tokens by their key.
        parts = dict(enumerate(type_of))
        for t, k in target.items():
            parts[t] = type_of[k]
        records: list[tuple[Record, dict | list]] = [(entries[k], parts) for k in emitted]
        records.extend(self.redo_records(record_groups, last_id + len(records), type_of))
        return records_btf(records, base)

    def redo_records(self, record_groups: list[list[Fragment]], last_id: int,
                     type_of: Sequence[int]) -> list[tuple[Record, list[int]]]:
        """The records of the units sent again, each with the type ids its references
        become: one of a safe key becomes that key's type, the others are appended after
        `last_id`, the safe keys' last type (their references mapped the same way)."""
        records: list[tuple[Record, list[int]]] = []
        for group in record_groups:
            pool: list[Record | None] = [None]
            for fragment in group:
                pool.extend(fragment.records)
            local = KeyPool()
            local_key = local.add_unit(pool)
            to_parent = self.parent_ids(local.entries[1:])
            unsafe = self.unsafe
            new_id = [0] * len(pool)
            kept = []
            for n in range(1, len(pool)):
                key = to_parent[local_key[n]]
                if key != _UNKNOWN and not unsafe[key]:
                    new_id[n] = type_of[key]
                else:
                    kept.append(n)
                    new_id[n] = last_id + len(records) + len(kept)
            records.extend([(pool[n], new_id) for n in kept])
        return records

    def parent_ids(self, entries: list[Record]) -> list[int]:
        """[0] + the key id of each of a pool's entries (numbered from 1, referring to
        each other), _UNKNOWN for one no worker sent."""
        to_parent = [0]
        parts = _Parts()
        for entry in entries:
            entry = RECORD_REMAP[entry[0]](entry, parts)
            parts[len(to_parent)] = found = self.ids.get(entry, _UNKNOWN)
            to_parent.append(found)
        return to_parent


_UNKNOWN = -2  # a records-mode key the workers never sent (only after a CYCLE part)
