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

from ...btf import format as f
from ...btf.model import Btf, Type
from ...btf.sizes import TypeSizes, by_value_edges, pointer_size

# The emitter recurses a few Python frames per level of nesting; real kernels nest about
# 20 deep (the kernel itself stops resolving chains at 32).
MAX_NESTING = 150
# Padding is written as unnamed bit-fields, a line per 8 bytes.
MAX_PADDING = 1 << 20


def _spelling_edges(types: list, by_value: list[tuple[int, ...]], cut: bytearray
                    ) -> list[tuple[int, ...]]:
    """Per type id, the types whose spelling is part of its spelling: what it holds by
    value, a pointer's target, a prototype's return and parameter types (ids in `cut` and
    void left out)."""
    edges = [tuple([r for r in out if not cut[r]]) if out else out for out in by_value]
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


def c_shape_problem(btf: Btf, by_value: list[tuple[int, ...]] | None = None,
                    sizes: TypeSizes | None = None) -> str | None:
    """Why `btf`'s own types (with what they reach in the base) cannot be spelled as C,
    or None when they can. `by_value` (`sizes.by_value_edges` of its types) and `sizes`
    are the caller's, when it has them already."""
    types = btf.all_types()
    name = btf.name
    for type_id, t in btf.own():
        if t.kind in (f.FWD, f.TYPEDEF) and not name(t.name_off):
            return f"{_describe(btf, type_id, t)} has no name"
    if by_value is None:
        by_value = by_value_edges(types)
    problem = _walk(btf, types, by_value, "contains itself by value")
    if problem is None:
        problem = _padding_problem(btf, sizes or TypeSizes(types, pointer_size(btf)))
    if problem is not None:
        return problem
    # C spells a named struct or union by its tag, which ends the path.
    tags = bytearray(len(types))
    tags[0] = 1
    for type_id in range(1, len(types)):
        t = types[type_id]
        if (t.kind == f.STRUCT or t.kind == f.UNION) and t.name_off and name(t.name_off):
            tags[type_id] = 1
    return _walk(btf, types, _spelling_edges(types, by_value, tags),
                 "refers to itself without a named struct or union in between")


def _padding_problem(btf: Btf, sizes: TypeSizes) -> str | None:
    """A struct whose members leave a gap the emitter would fill with more than
    MAX_PADDING bytes of unnamed bit-fields (one line per 8 bytes); real kernels need
    at most a page. Only called once the by-value graph is known to be acyclic and
    shallow, so the recursion below is bounded."""
    size_of = sizes.size_of
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
