"""Which BTF a C header can spell at all, checked before `dump --format c` starts.

C spells every type as a finite expression in which only a struct or union tag may refer
back to a type being defined. BTF can say more: a struct holding itself by value, a
typedef or a pointer chain that leads back to itself, an anonymous struct pointing to
itself, forward declarations and typedefs without a name. The kernel rejects most of
these (not the anonymous self-pointer), but the reader takes them, and the C emitter,
which follows references recursively, would loop or recurse without end on them. So they
are refused here, with the type ids of the loop, and so are nesting deeper than the
emitter's recursion can follow and gaps between members that would take millions of
lines of padding.
"""

from __future__ import annotations

from ..btf import format as f
from ..btf.model import Btf, Type

# The emitter recurses a few Python frames per level of nesting; real kernels nest about
# 20 deep (the kernel itself stops resolving chains at 32).
MAX_NESTING = 150
# Padding is written as unnamed bit-fields, a line per 8 bytes.
MAX_PADDING = 1 << 20

_BY_VALUE_TARGET = frozenset({f.TYPEDEF, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG})


def pointer_size(btf: Btf) -> int:
    """The target's pointer size: that of `long`, as on every Linux ABI (8 when the BTF
    has no long). Split BTF takes its base's."""
    if btf.base is not None:
        return pointer_size(btf.base)
    name = btf.name
    for t in btf.types:
        if t.kind == f.INT and t.size_or_type in (4, 8) \
                and name(t.name_off) in ("long int", "long unsigned int"):
            return t.size_or_type
    return 8


def _by_value_edges(types: list, cut: bytearray) -> list[tuple[int, ...]]:
    """Per type id, what must be complete for it to be: members, array elements, the
    targets of typedefs and modifiers (void and ids in `cut` left out)."""
    edges: list[tuple[int, ...]] = [()] * len(types)
    by_value_target = _BY_VALUE_TARGET
    for type_id in range(1, len(types)):
        t = types[type_id]
        kind = t.kind
        if kind == f.STRUCT or kind == f.UNION:
            out = tuple([m[1] for m in t.items if not cut[m[1]]])
        elif kind == f.ARRAY:
            out = (t.extra[0],) if not cut[t.extra[0]] else ()
        elif kind in by_value_target:
            out = (t.size_or_type,) if not cut[t.size_or_type] else ()
        else:
            continue
        edges[type_id] = out
    return edges


def _spelling_edges(types: list, cut: bytearray) -> list[tuple[int, ...]]:
    """Per type id, the types whose spelling is part of its spelling (ids in `cut` and
    void left out)."""
    edges = _by_value_edges(types, cut)
    for type_id in range(1, len(types)):
        t = types[type_id]
        kind = t.kind
        if kind == f.PTR:
            if not cut[t.size_or_type]:
                edges[type_id] = (t.size_or_type,)
        elif kind == f.FUNC_PROTO:
            refs = [t.size_or_type, *[p[1] for p in t.items]]
            edges[type_id] = tuple([r for r in refs if not cut[r]])
    return edges


def _describe(btf: Btf, type_id: int, t: Type) -> str:
    name = btf.name(t.name_off)
    kind = f.kind_name(t.kind)
    return f"type {type_id} ({kind} '{name}')" if name else f"type {type_id} ({kind})"


def c_shape_problem(btf: Btf) -> str | None:
    """Why `btf`'s own types (with what they reach in the base) cannot be spelled as C,
    or None when they can."""
    types = btf.all_types()
    name = btf.name
    for type_id, t in btf.own():
        if t.kind in (f.FWD, f.TYPEDEF) and not name(t.name_off):
            return f"{_describe(btf, type_id, t)} has no name"
    void_only = bytearray(len(types))
    void_only[0] = 1
    problem = _walk(btf, types, _by_value_edges(types, void_only), "contains itself by value")
    if problem is None:
        problem = _padding_problem(btf, types)
    if problem is not None:
        return problem
    # C spells a named struct or union by its tag, which ends the path.
    tags = bytearray(len(types))
    tags[0] = 1
    for type_id in range(1, len(types)):
        t = types[type_id]
        if (t.kind == f.STRUCT or t.kind == f.UNION) and t.name_off and name(t.name_off):
            tags[type_id] = 1
    return _walk(btf, types, _spelling_edges(types, tags),
                 "refers to itself without a named struct or union in between")


def _padding_problem(btf: Btf, types: list) -> str | None:
    """A struct whose members leave a gap the emitter would fill with more than
    MAX_PADDING bytes of unnamed bit-fields (one line per 8 bytes); real kernels need
    at most a page. Only called once the by-value graph is known to be acyclic and
    shallow, so the recursion below is bounded."""
    sizes: dict[int, int] = {}
    ptr_size = pointer_size(btf)

    def size_of(type_id: int) -> int:
        size = sizes.get(type_id)
        if size is None:
            t = types[type_id]
            kind = t.kind if t is not None else f.UNKN
            if kind in f.SIZED_KINDS:
                size = t.size_or_type
            elif kind == f.PTR:
                size = ptr_size
            elif kind == f.ARRAY:
                size = t.extra[2] * size_of(t.extra[0])
            elif kind in _BY_VALUE_TARGET:
                size = size_of(t.size_or_type)
            else:
                size = 0
            sizes[type_id] = size
        return size

    limit = 8 * MAX_PADDING
    for type_id, t in btf.own():
        if t.kind != f.STRUCT:
            continue
        cur = 0
        gap = 0
        for _, mtype, offset in t.items:
            bits = offset >> 24 if t.kflag else 0
            if t.kflag:
                offset &= 0xFFFFFF
            gap = max(gap, offset - cur)
            cur = offset + (bits or 8 * size_of(mtype))
        gap = max(gap, 8 * t.size_or_type - cur)
        if gap > limit:
            return (f"{_describe(btf, type_id, t)} would need {gap // 8} bytes of padding "
                    f"between its members; the C dump writes at most {MAX_PADDING}")
    return None


def _walk(btf: Btf, types: list, edges: list[tuple[int, ...]], loop_text: str) -> str | None:
    """Depth-first from every own type: the first loop found, or nesting too deep."""
    depth = [0] * len(types)  # 0 unvisited, -1 on the current path, else nesting depth
    for root in range(btf.first_id, len(types)):
        if depth[root]:
            continue
        if not edges[root]:
            depth[root] = 1
            continue
        depth[root] = -1
        path = [root]
        next_edge = [0]
        while path:
            node = path[-1]
            out = edges[node]
            i = next_edge[-1]
            if i < len(out):
                next_edge[-1] = i + 1
                target = out[i]
                seen = depth[target]
                if seen == -1:
                    loop = " -> ".join(map(str, path[path.index(target):] + [target]))
                    return f"{_describe(btf, target, types[target])} {loop_text} ({loop})"
                if seen == 0:
                    if not edges[target]:
                        depth[target] = 1
                        continue
                    if len(path) >= MAX_NESTING:
                        break
                    depth[target] = -1
                    path.append(target)
                    next_edge.append(0)
                elif seen + len(path) > MAX_NESTING:
                    break
                continue
            path.pop()
            next_edge.pop()
            depth[node] = 1 + max([depth[target] for target in out], default=0)
        else:
            continue
        return f"{_describe(btf, root, types[root])}: types nested more than {MAX_NESTING} deep"
    return None
