"""Distilled base BTF: split BTF that survives a rebuild of its base (out-of-tree modules).

A module's split BTF refers to vmlinux types by id, so it only fits the exact vmlinux it
was encoded against. pahole's `--btf_features=distilled_base` (libbpf's
`btf__distill_base`) keeps next to `.BTF` a small `.BTF.base` section describing just
the base types the module refers to, by name; the kernel (`btf_relocate.c`, when it
loads the module) maps those onto whatever vmlinux it runs and rewrites the ids.

`distill_base` makes the pair the way libbpf does, with canonbtf's order on both parts:

* the distilled base holds named INT and FLOAT as they are, FWD as they are, named
  STRUCT/UNION as members-less ones of the same size, named ENUM/ENUM64 as a member-less
  ENUM of the same size (ENUM64 too, as libbpf writes it);
* every other base type the module reaches (PTR, TYPEDEF, ARRAY, qualifiers, FUNC_PROTO,
  anonymous STRUCT/UNION/ENUM) moves into the split part, references followed through
  them but not through named STRUCT/UNION (their members stay behind).

`relocate` does what the kernel does on load: each distilled type is matched by name
and kind (and size where the kernel requires it) to a type of the full base; the result
is split BTF over the full base. After a dedup (`canonicalize(dedup=True)`) it is the
split BTF encoded directly against that base: the round trip the tests prove.
"""

from __future__ import annotations

from collections import defaultdict

from ..btf import format as f
from ..btf.model import Btf, Type
from ..btf.strings import StringTable
from ..errors import InputError
from ..spec import kinds as spec

# Kinds a split BTF may reference in its base (libbpf refuses to distil others).
_REFERENCEABLE = frozenset({f.INT, f.FLOAT, f.FWD, f.ARRAY, f.STRUCT, f.UNION, f.TYPEDEF,
                            f.ENUM, f.ENUM64, f.PTR, f.CONST, f.RESTRICT, f.VOLATILE,
                            f.FUNC_PROTO, f.TYPE_TAG})
_COMPOSITE = (f.STRUCT, f.UNION)


def _stays_in_base(t: Type) -> bool:
    """Named int/float/fwd/struct/union/enum go to the distilled base; the rest move."""
    if t.kind in (f.INT, f.FLOAT, f.FWD):
        return True
    return t.kind in (*_COMPOSITE, f.ENUM, f.ENUM64) and t.name_off != 0


def _referenced_base_ids(split: Btf) -> set[int]:
    """Base ids the split types reach, following references inside the base except
    through named structs and unions (whose members a distilled base does not keep)."""
    base_last = split.base.last_id
    seen: set[int] = set()
    stack = [r for _, t in split.own() for r in t.refs() if 0 < r <= base_last]
    while stack:
        type_id = stack.pop()
        if type_id in seen:
            continue
        seen.add(type_id)
        t = split.type_by_id(type_id)
        if t.kind not in _REFERENCEABLE:
            raise InputError(None, f"split BTF refers to base type {type_id} of kind "
                                   f"{f.kind_name(t.kind)}, which a distilled base cannot "
                                   f"describe")
        if t.kind in _COMPOSITE and t.name_off:
            continue
        stack.extend(r for r in t.refs() if r)
    return seen


def _distilled_record(t: Type, name_off: int) -> Type:
    """The distilled base's stand-in for base type `t` (named as `name_off`)."""
    if t.kind in _COMPOSITE:
        return Type(t.kind, name_off, 0, t.size_or_type)
    if t.kind in (f.ENUM, f.ENUM64):
        return Type(f.ENUM, name_off, 0, t.size_or_type)
    return Type(t.kind, name_off, t.kflag, t.size_or_type, t.extra, t.items)


def distill_base(split: Btf) -> tuple[Btf, Btf]:
    """(distilled base, split BTF over it) for split BTF `split`, both in canonical
    order; the same split BTF always gives the same pair."""
    from . import canonical_order, canonicalize, renumbered
    from .renumber import new_ids

    if split.base is None:
        raise InputError(None, "distilled base: the BTF is not split BTF (no base)")
    if split.base.base is not None:
        raise InputError(None, "distilled base: the base is itself split BTF")
    used = sorted(_referenced_base_ids(split))
    kept = [i for i in used if _stays_in_base(split.type_by_id(i))]
    moved = [i for i in used if not _stays_in_base(split.type_by_id(i))]
    names = [split.name(split.type_by_id(i).name_off) for i in kept]
    strings, offset_of = StringTable.build(names)
    dist = Btf([_distilled_record(split.type_by_id(i), offset_of[n])
                for i, n in zip(kept, names)], strings, None, split.byteorder)
    order = canonical_order(dist)
    position = new_ids(dist, order)
    dist = renumbered(dist, order)
    # Split part: own types then the moved ones, ids continuing after the distilled base.
    own = [t for _, t in split.own()]
    sources = own + [split.type_by_id(i) for i in moved]
    new_id = list(range(split.last_id + 1))
    for old, base_position in zip(kept, range(1, len(kept) + 1)):
        new_id[old] = position[base_position]
    first = dist.last_id + 1
    for n, old in enumerate(list(range(split.first_id, split.last_id + 1)) + moved):
        new_id[old] = first + n
    # Own names are rebuilt as one table over the distilled base's, for renumber to redo.
    text = [split.name(off) for t in sources for off in t.name_offsets()]
    own_strings, own_offset = StringTable.build([s for s in text if s], dist.strings.end)
    remapped = [t.remap(new_id, _NameMap(split, own_offset)) for t in sources]
    out = Btf(remapped, own_strings, dist, split.byteorder)
    return dist, canonicalize(out)


class _NameMap(dict):
    """Old string offset -> offset of the same name in a rebuilt table (0 stays 0)."""

    def __init__(self, btf: Btf, offset_of: dict[str, int]):
        super().__init__()
        self.btf = btf
        self.offset_of = offset_of

    def __missing__(self, offset: int) -> int:
        name = self.btf.name(offset)
        value = self.offset_of[name] if name else 0
        self[offset] = value
        return value


def _embedded_ids(split: Btf) -> set[int]:
    """Distilled base structs/unions a split struct/union holds by value (through
    typedefs, qualifiers and arrays): their size must match on relocation."""
    out: set[int] = set()
    last = split.base.last_id
    for _, t in split.own():
        if t.kind not in _COMPOSITE:
            continue
        for ref in t.refs():
            while ref:
                target = split.type_by_id(ref)
                if target.kind in spec.MODIFIER:
                    ref = target.size_or_type
                elif target.kind == f.ARRAY:
                    ref = target.extra[0]
                else:
                    if target.kind in _COMPOSITE and ref <= last:
                        out.add(ref)
                    ref = 0
    return out


def _matches(dist_t: Type, base_t: Type, embedded: bool) -> bool:
    """Whether base type `base_t` can stand for distilled type `dist_t` (as the kernel
    decides: kinds compatible, sizes where they matter)."""
    dk, bk = dist_t.kind, base_t.kind
    if dk == f.FWD:
        if bk == f.FWD:
            return dist_t.kflag == base_t.kflag
        return (bk == f.STRUCT and not dist_t.kflag) or (bk == f.UNION and dist_t.kflag)
    if dk == f.INT:
        return bk == f.INT and (dist_t.extra >> 24) == (base_t.extra >> 24) \
            and dist_t.size_or_type == base_t.size_or_type
    if dk == f.FLOAT or dk in _COMPOSITE:
        same_size = dist_t.size_or_type == base_t.size_or_type
        return bk == dk and (same_size or (dk in _COMPOSITE and not embedded))
    if dk == f.ENUM:
        return bk in (f.ENUM, f.ENUM64) and dist_t.size_or_type == base_t.size_or_type
    return False


def _map_distilled(dist: Btf, base: Btf, embedded: set[int]) -> list[int]:
    """distilled base id -> full base id, as btf_relocate.c maps them; a type with no
    candidate, or with several equally good ones, is an error."""
    by_name: dict[str, list[int]] = defaultdict(list)
    for type_id, t in base.own():
        if t.name_off:
            by_name[base.name(t.name_off)].append(type_id)
    mapping = [0] * (dist.last_id + 1)
    for type_id, t in dist.own():
        name = dist.name(t.name_off)
        if not name:
            raise InputError(None, f"distilled base type {type_id} is anonymous")
        candidates = [b for b in by_name.get(name, ())
                      if _matches(t, base.type_by_id(b), type_id in embedded)]
        if len(candidates) > 1 and t.kind in _COMPOSITE:
            # Several of that name: the kernel then matches on size too.
            candidates = [b for b in candidates
                          if base.type_by_id(b).size_or_type == t.size_or_type]
        if not candidates:
            raise InputError(None, f"distilled base type '{name}' ({f.kind_name(t.kind)}) "
                                   f"has no match in the base BTF")
        if len(candidates) > 1:
            raise InputError(None, f"distilled base type '{name}' ({f.kind_name(t.kind)}) "
                                   f"matches several base types: ids {candidates}")
        mapping[type_id] = candidates[0]
    return mapping


def relocate(split: Btf, base: Btf) -> Btf:
    """`split` (split BTF over a distilled base) moved onto the full base BTF `base`:
    distilled ids mapped to base ids, own ids shifted, names rebased."""
    dist = split.base
    if dist is None or dist.base is not None:
        raise InputError(None, "relocate: the BTF is not split BTF over a distilled base")
    for type_id, t in dist.own():
        if t.kind not in (f.INT, f.FLOAT, f.ENUM, f.STRUCT, f.UNION, f.FWD) or \
                (t.kind in (*_COMPOSITE, f.ENUM) and t.vlen):
            raise InputError(None, f"relocate: base type {type_id} ({f.kind_name(t.kind)}) "
                                   f"is not what a distilled base holds")
    mapping = _map_distilled(dist, base, _embedded_ids(split))
    shift = base.last_id - dist.last_id
    new_id = mapping + [n + shift for n in range(split.first_id, split.last_id + 1)]
    text = [split.name(off) for _, t in split.own() for off in t.name_offsets()]
    strings, offset_of = StringTable.build([s for s in text if s], base.strings.end)
    types = [t.remap(new_id, _NameMap(split, offset_of)) for _, t in split.own()]
    return Btf(types, strings, base, split.byteorder)
