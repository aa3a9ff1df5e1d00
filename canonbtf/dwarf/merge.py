"""The parent's global dedup of encoded units: structural equivalence with declarations
resolved optimistically, as the greatest fixpoint.

Every unit declares what it does not define: `struct file *` is a PTR to FWD `file` in one
unit and a PTR to the full `struct file` in the next, so the same `struct task_struct`
comes out of the kernel's units in hundreds of variants that differ only in which of
their pointees are declarations. Plain bisimulation keeps them apart, and so does
resolving a declaration only once its name has a single distinct definition: each
variant keeps another name ambiguous (measured: 200 of the 6.1 kernel's units, 99,720
records, still 92,332 types after `canonicalize(dedup=True)`).

So declarations are resolved under the hypothesis that they can be, and the hypothesis is
withdrawn only where it fails: a FWD (or an enum declared without values) counts as the
block of its name's definitions while those all sit in one block, and as itself once they
split. Blocks only ever split, so refining from any partition coarser than the answer
reaches the same greatest fixpoint: the result depends only on the union of the units,
never on how they were split into batches or which worker finished first.

The first partition groups types by a key that abstracts every reference to a named
struct, union or enum as its name. In C every reference cycle passes through such a
name, so the keys are computed bottom-up without recursion into cycles; types with equal
keys differ at most in which definition of a name they reach, which refinement sorts out.
Types with different keys are never equivalent, so this partition is coarser than the
answer, and on a kernel it is already almost the answer.
"""

from __future__ import annotations

from ..btf import format as f
from ..btf.model import Btf, Type

NEVER_MERGED = frozenset({f.VAR, f.DATASEC})


def _token(t: Type, name: str) -> tuple | None:
    """What a reference to `t` is abstracted to in the first keys: its name, for a named
    struct, union, enum or their declarations; None for every other type."""
    if not name:
        return None
    kind = t.kind
    if kind == f.STRUCT or kind == f.UNION:
        return ("aggregate", name, kind == f.UNION)
    if kind == f.FWD:
        return ("aggregate", name, bool(t.kflag))
    if kind == f.ENUM or kind == f.ENUM64:
        return ("enum", name)
    return None


def _is_declaration(t: Type) -> bool:
    return t.kind == f.FWD or ((t.kind == f.ENUM or t.kind == f.ENUM64) and not t.items)


def _label(node: int, t: Type, name_of) -> tuple:
    """Everything about a type except the types it references."""
    kind = t.kind
    if kind in NEVER_MERGED:
        return (kind, node)
    items = t.items
    if kind == f.STRUCT or kind == f.UNION:
        scalars = tuple((name_of(n), o) for n, _, o in items)
    elif kind == f.ENUM or kind == f.ENUM64:
        scalars = tuple((name_of(n), v) for n, v in items)
    elif kind == f.FUNC_PROTO:
        scalars = tuple(name_of(n) for n, _ in items)
    else:
        scalars = ()
    if kind == f.ARRAY:
        extra = t.extra[2]
    else:
        extra = t.extra
    size = t.size_or_type if kind in f.SIZED_KINDS else 0
    return (kind, name_of(t.name_off), t.kflag, size, extra, scalars)


def resolve_and_merge(btf: Btf) -> Btf:
    """`btf` (not split) with equivalent types merged and declarations resolved."""
    types = btf.all_types()
    name_of = btf.name
    names = [""] + [name_of(t.name_off) for t in btf.types]
    succ: list[tuple[int, ...]] = [()] + [tuple(t.refs()) for t in btf.types]
    tokens: list[tuple | None] = [None] + [_token(t, names[i]) for i, t in btf.own()]
    block = _first_partition(types, succ, tokens, name_of)
    block = _refine(types, succ, tokens, block)
    return _quotient(btf, types, tokens, block)


def _first_partition(types: list, succ: list, tokens: list, name_of) -> list[int]:
    """Block of each type: its key with named references abstracted to their names."""
    count = len(types)
    intern: dict = {}
    key = [0] * count  # 0: not computed; keys and tokens are interned to ints >= 1
    token_id = [0] * count
    for node in range(1, count):
        if tokens[node] is not None:
            token_id[node] = intern.setdefault(("name", tokens[node]), len(intern) + 1)
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
            pending = [s for s in succ[node]
                       if s and not token_id[s] and not key[s] and not on_path[s]]
            if pending and not on_path[node]:
                on_path[node] = True
                stack.extend(pending)
                continue
            parts = []
            for s in succ[node]:
                if not s:
                    parts.append(0)
                elif token_id[s]:
                    parts.append(token_id[s])
                elif key[s]:
                    parts.append(key[s])
                else:
                    # An anonymous cycle (impossible in C): keep its members distinct.
                    parts.append(intern.setdefault(("cycle", s), len(intern) + 1))
            label = _label(node, types[node], name_of)
            key[node] = intern.setdefault((label, tuple(parts)), len(intern) + 1)
            on_path[node] = False
            stack.pop()
    return key


def _refine(types: list, succ: list, tokens: list, block: list[int]) -> list[int]:
    """Split blocks until every member of a block references the same blocks, where a
    declaration stands for its name's definitions while those share one block."""
    count = len(types)
    members: dict[int, list[int]] = {}
    for node in range(1, count):
        members.setdefault(block[node], []).append(node)
    definitions: dict[tuple, list[int]] = {}
    declarations: dict[tuple, list[int]] = {}
    for node in range(1, count):
        token = tokens[node]
        if token is not None:
            (declarations if _is_declaration(types[node]) else definitions).setdefault(
                token, []).append(node)
    preds: list[list[int]] = [[] for _ in range(count)]
    for node in range(1, count):
        for s in succ[node]:
            if s:
                preds[s].append(node)
    stands_for = [0] * count  # declaration -> a definition while the hypothesis holds

    def update_declarations(token: tuple) -> None:
        """Re-check one name's hypothesis: do its definitions still share one block?"""
        defs = definitions.get(token)
        target = 0
        if defs:
            first = block[defs[0]]
            if all(block[d] == first for d in defs):
                target = defs[0]
        for decl in declarations.get(token, ()):
            stands_for[decl] = target

    for token in declarations:
        update_declarations(token)

    def effective(s: int) -> int:
        target = stands_for[s]
        return block[target] if target else block[s]

    next_block = max(block) + 1
    dirty = {b for b, m in members.items() if len(m) > 1}
    while dirty:
        moved: list[int] = []
        for b in dirty:
            group = members.get(b)
            if group is None or len(group) < 2:
                continue
            signatures: dict[tuple, list[int]] = {}
            for node in group:
                sig = tuple(effective(s) if s else 0 for s in succ[node])
                signatures.setdefault(sig, []).append(node)
            if len(signatures) == 1:
                continue
            parts = sorted(signatures.values(), key=len, reverse=True)
            members[b] = parts[0]
            for part in parts[1:]:
                members[next_block] = part
                for node in part:
                    block[node] = next_block
                moved.extend(part)
                next_block += 1
        dirty = set()
        touched_names = set()
        for node in moved:
            for p in preds[node]:
                dirty.add(block[p])
            token = tokens[node]
            if token is not None and not _is_declaration(types[node]):
                touched_names.add(token)
        for token in touched_names:
            update_declarations(token)
            for decl in declarations.get(token, ()):
                for p in preds[decl]:
                    dirty.add(block[p])
    for token in declarations:
        update_declarations(token)
    for node in range(1, count):
        if stands_for[node]:
            block[node] = block[stands_for[node]]
    return block


def _quotient(btf: Btf, types: list, tokens: list, block: list[int]) -> Btf:
    """One type per block (its lowest id, a definition before a declaration)."""
    count = len(types)
    representative: dict[int, int] = {}
    for node in range(1, count):
        b = block[node]
        current = representative.get(b)
        if current is None or (_is_declaration(types[current])
                               and not _is_declaration(types[node])):
            representative[b] = node
    kept = sorted(representative.values())
    new_id = [0] * count
    for position, node in enumerate(kept, 1):
        new_id[node] = position
    for node in range(1, count):
        new_id[node] = new_id[representative[block[node]]]
    return Btf([types[node].remap(new_id) for node in kept], btf.strings, None,
               btf.byteorder)
