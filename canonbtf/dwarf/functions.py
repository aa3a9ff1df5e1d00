"""The parent's decisions on functions and variables, made on the union of every unit so
that they cannot depend on how units were split across workers (docs/ENCODE.md).

Workers send FUNC *candidates* (one per definition, flags in the linkage field, see
convert.py) and VARs that still carry their place. Around the global dedup:
- `place_variables` (before): one DATASEC per section, entries sorted by offset, each VAR
  back to a plain linkage; pahole's size rule (last entry's offset + size).
- `choose_functions` (after, when equivalent types share one id): a name whose code
  sits at several addresses (symbols.ambiguous_functions) keeps no FUNC, nor does a name
  marked DW_CC_nocall, or whose parameters are not where the calling convention puts
  them, by any definition. With `consistent_func`, neither does a
  name whose prototypes are not equivalent the way pahole's consistent_func compares
  them: the same number of parameters, return and parameter types equal after dropping
  `const`, named types (typedef, struct, union, enum) compared by name; parameter names
  do not count. An out-of-line copy listing the parameters otherwise (FUNC_PIECE, as
  pahole 1.31 reads a `.part` piece) is one more prototype there, and never kept.
  Otherwise the name keeps one FUNC (linkage static, as pahole emits)
  whose FUNC_PROTO is a linked candidate's (code at the symbol's address: a __weak
  definition overridden elsewhere loses) if there is one, else the first in canonical
  order. Without `consistent_func` every prototype that differs in its types keeps one.
  Decl tags follow the FUNC they were made for; prototypes only dropped functions used go
  with them. In a module, a FUNC equal to one of the base (same name and prototype) is
  the base's, as libbpf's dedup makes it.
The result holds no two equivalent types, so putting it in canonical order needs no
second dedup.
"""

from __future__ import annotations

from ..btf import format as f
from ..btf.model import Btf, Type
from ..btf.strings import StringTable
from ..canon import accel, renumbered
from ..canon.renumber import new_ids
from ..spec import kinds as spec
from ..spec.features import FUNC_CANDIDATE, FUNC_LINKED, FUNC_MOVED, FUNC_NOCALL, FUNC_PIECE
from ..tuples import named_tuple


class FunctionReport:
    """What `choose_functions` decided, for the summary line and the comparison tools.
    A plain class, not a dataclass (see elf/read.Section)."""

    def __init__(self) -> None:
        self.candidates = 0  # distinct candidate FUNCs after the dedup
        self.kept = 0
        self.inconsistent: list[str] = []  # names dropped
        self.nocall: list[str] = []  # names dropped
        self.ambiguous: list[str] = []  # names dropped
        self.moved: list[str] = []  # names dropped: FUNC_MOVED
        self.overlapping_variables = 0  # VARs dropped for sharing bytes with another
        # name dropped -> why, in pahole 1.31's words (`--verbose`)
        self.reasons: dict[str, str] = {}

    def skip_lines(self) -> list[str]:
        """One line per dropped name, as pahole 1.31 `--verbose` prints them."""
        return [f"{name} : skipping BTF encoding of function due to {why}"
                for name, why in sorted(self.reasons.items())]


def place_variables(btf: Btf) -> Btf:
    """`btf` with its placed VARs gathered into DATASECs (no-op without VARs; a packed
    `btf` has none: no word holds a placement)."""
    if btf.packed is not None:
        return btf
    sections: dict[str, list[tuple[int, int, int]]] = {}
    types = list(btf.types)
    first = btf.first_id
    for type_id, t in btf.own():
        if t.kind == f.VAR and isinstance(t.extra, tuple):
            linkage, section, offset, size = t.extra
            types[type_id - first] = Type(f.VAR, t.name_off, t.kflag, t.size_or_type,
                                          linkage, t.items)
            sections.setdefault(section, []).append((offset, size, type_id))
    if not sections:
        return btf
    return Btf(types + datasecs(sections, btf.strings), btf.strings, btf.base, btf.byteorder)


def datasecs(sections: dict[str, list[tuple[int, int, int]]], strings: StringTable
             ) -> list[Type]:
    """The DATASECs of placed VARs (section -> [(offset, size, VAR id)]), by section
    name; the names join `strings`. (The keyed merge in C places VARs as it writes words.)"""
    out = []
    for section in sorted(sections):
        entries = sorted(sections[section])
        last_offset, last_size, _ = entries[-1]
        items = [(type_id, offset, size) for offset, size, type_id in entries]
        out.append(Type(f.DATASEC, strings.add(section), 0, last_offset + last_size, 0,
                        items))
    return out


class FunctionChoice(named_tuple("FunctionChoice", "kept redirect dropped orphaned closed",
                                   defaults=(True,))):
    """What `decide_functions` chose, by the ids of the Btf it looked at. kept: chosen
    candidate -> its FUNC (linkage static); redirect: candidate -> the FUNC it becomes
    (own or base), 0 dropped; dropped: ids that go (FUNCs, their decl tags and
    prototypes, VARs); orphaned: VARs that overlap an earlier entry of their DATASEC;
    closed: no type other than a DECL_TAG refers to a FUNC or a DECL_TAG, so the types
    around them are closed under references (`reorder` relies on it). A named tuple, not
    a dataclass (see elf/read.Section)."""

    __slots__ = ()


def choose_functions(btf: Btf, consistent: bool = True,
                     ambiguous: frozenset[str] = frozenset()) -> tuple[Btf, FunctionReport]:
    """`btf` (deduplicated) with one FUNC per kept name and no candidate flags left; the
    result is not in canonical order yet."""
    choice, report = decide_functions(btf, consistent, ambiguous)
    return rebuild(btf, choice), report


class _TypesById:
    """`btf`'s types by id, a packed base decoded only when one of its types is read: a
    module's candidates are its own, and its base's kinds come from the packed words
    (decoding a vmlinux base was 0.1 s of a module's encode)."""

    def __init__(self, btf: Btf):
        self.btf = btf
        self.own = btf.types
        self.first = btf.first_id
        self._base_kinds: bytes | None = None

    def __getitem__(self, type_id: int) -> Type | None:
        if type_id >= self.first:
            return self.own[type_id - self.first]
        return _type_by_id(self.btf, type_id)

    def kind(self, type_id: int) -> int:
        if type_id >= self.first:
            return self.own[type_id - self.first].kind
        if self._base_kinds is None:
            self._base_kinds = accel.kinds_by_id(self.btf.base) or b""
        if self._base_kinds:
            return self._base_kinds[type_id]
        return self.btf.type_by_id(type_id).kind


def decide_functions(btf: Btf, consistent: bool = True,
                     ambiguous: frozenset[str] = frozenset()
                     ) -> tuple[FunctionChoice, FunctionReport]:
    """Which FUNC each candidate of `btf` (deduplicated) becomes, and what goes with the
    dropped ones (a name of `ambiguous` keeps none); `btf` itself is left as it is."""
    report = FunctionReport()
    types = _TypesById(btf)
    kept, redirect = _choose(btf, types, consistent, ambiguous, report)
    report.kept = len(kept)
    dropped = {c for c, into in redirect.items() if into != c}
    orphaned = _overlapping_variables(btf)
    report.overlapping_variables = len(orphaned)
    dropped |= orphaned
    tag_refs = _drop_decl_tags(btf, redirect, orphaned, dropped)
    # Prototypes nothing else uses go with their dropped functions.
    maybe_unused = {types[c].size_or_type for c in dropped if types[c].kind == f.FUNC}
    used = _referenced(btf, dropped)
    closed = not any(types.kind(r) in _NOT_REFERRED for r in used if r)
    used |= tag_refs
    first = btf.first_id
    dropped |= {p for p in maybe_unused if p >= first and p not in used}
    return FunctionChoice(kept, redirect, dropped, orphaned, closed), report


def _choose(btf: Btf, types: _TypesById, consistent: bool, ambiguous: frozenset[str],
            report: FunctionReport) -> tuple[dict[int, Type], dict[int, int]]:
    """Name by name: the candidates kept (as their FUNC) and where every candidate goes."""
    by_name: dict[str, list[int]] = {}
    names = btf.names
    pieces = 0
    for type_id, t in btf.own():
        if t.kind == f.FUNC and t.extra & FUNC_CANDIDATE:
            by_name.setdefault(names(t.name_off), []).append(type_id)
            pieces += bool(t.extra & FUNC_PIECE)
    report.candidates = sum(map(len, by_name.values())) - pieces
    redirect: dict[int, int] = {}  # candidate -> the FUNC it becomes, 0 when dropped
    kept: dict[int, Type] = {}
    base_funcs = _base_functions(btf, set(by_name))
    loose = _LooseTypes(btf)
    for name in sorted(by_name):
        group = by_name[name]
        if name in ambiguous:
            # pahole 1.31 names the prototypes' mismatch first, when there is one.
            signatures = {loose.signature(types[c].size_or_type): c for c in group}
            report.ambiguous.append(name)
            report.reasons[name] = (_mismatch(btf, loose, _definitions_first(types, signatures))
                                    if len(signatures) > 1 else AMBIGUOUS_ADDRESS)
            redirect.update(dict.fromkeys(group, 0))
            continue
        if len(group) == 1:
            # Most names have one candidate (40,752 of the 6.1 kernel's 41,605): decided
            # here without the general case's generators and lambdas (0.20 -> 0.14 s).
            chosen = group[0]
            t = types[chosen]
            if not t.extra & (FUNC_NOCALL | FUNC_MOVED):
                in_base = base_funcs.get((name, t.size_or_type)) if base_funcs else None
                if in_base is not None:
                    redirect[chosen] = in_base
                else:
                    kept[chosen] = Type(f.FUNC, t.name_off, 0, t.size_or_type,
                                        f.LINKAGE_STATIC)
                    redirect[chosen] = chosen
                continue
        if any(types[c].extra & FUNC_NOCALL for c in group):
            report.nocall.append(name)
            report.reasons[name] = NOCALL
            redirect.update(dict.fromkeys(group, 0))
            continue
        if any(types[c].extra & FUNC_MOVED and not _misfit_parameter(btf, types[c])
               for c in group):
            report.moved.append(name)
            report.reasons[name] = MOVED
            redirect.update(dict.fromkeys(group, 0))
            continue
        pieces = [c for c in group if types[c].extra & FUNC_PIECE]
        if consistent:
            # A piece of the function listing its parameters otherwise is one more
            # prototype to pahole 1.31 (convert.py, FUNC_PIECE).
            signatures = {loose.signature(types[c].size_or_type): c for c in group}
            if len(signatures) > 1:
                report.inconsistent.append(name)
                report.reasons[name] = _mismatch(btf, loose,
                                                 _definitions_first(types, signatures))
                redirect.update(dict.fromkeys(group, 0))
                continue
        if pieces:
            redirect.update(dict.fromkeys(pieces, 0))
            group = [c for c in group if not types[c].extra & FUNC_PIECE]
        if consistent:
            groups = [group]
        else:
            by_signature: dict[tuple, list[int]] = {}
            for candidate in group:
                by_signature.setdefault(_signature(types[types[candidate].size_or_type]),
                                        []).append(candidate)
            groups = list(by_signature.values())
        for same in groups:
            chosen = min(same, key=lambda c: (not types[c].extra & FUNC_LINKED, c))
            t = types[chosen]
            in_base = base_funcs.get((name, t.size_or_type))
            if in_base is not None:
                redirect.update(dict.fromkeys(same, in_base))
                continue
            kept[chosen] = Type(f.FUNC, t.name_off, 0, t.size_or_type, f.LINKAGE_STATIC)
            redirect.update(dict.fromkeys(same, chosen))
    return kept, redirect


AMBIGUOUS_ADDRESS = "ambiguous address"
NOCALL = "calling convention DW_CC_nocall"
MOVED = "unexpected register usage for parameter"
_SEE_THROUGH = frozenset({f.TYPEDEF, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG})
_SIZED = frozenset({f.INT, f.STRUCT, f.UNION, f.ENUM, f.ENUM64, f.FLOAT})


def _definitions_first(types: _TypesById, signatures: dict[tuple, int]) -> list[int]:
    """One candidate per prototype, the definitions' before the pieces' (pahole meets
    the function before the piece split off it), each in canonical order."""
    return sorted(signatures.values(), key=lambda c: (bool(types[c].extra & FUNC_PIECE), c))


def _type_by_id(btf: Btf, type_id: int) -> Type | None:
    """`btf.type_by_id`, one type of a packed base decoded alone (accel.base_type): the
    first base id read through `type_by_id` decodes all of vmlinux's types (ext4.ko's
    parameter checks: about 0.06 s)."""
    if 0 < type_id < btf.first_id:
        found = accel.base_type(btf, type_id)
        if found is not None:
            return found
    return btf.type_by_id(type_id)


def _misfit_parameter(btf: Btf, func: Type) -> bool:
    """Whether a parameter of `func`'s prototype fits no register (0 or over 8 bytes: a
    struct passed in two registers or on the stack). Its registers then do not follow
    the parameters one for one, and pahole 1.31 holds no unexpected register against
    the function."""
    for _, type_id in _type_by_id(btf, func.size_or_type).items:
        t = _type_by_id(btf, type_id)
        for _ in range(32):
            if t is None or t.kind not in _SEE_THROUGH:
                break
            t = _type_by_id(btf, t.size_or_type)
        if t is None:
            continue  # void: the "..." entry
        size = 8 if t.kind == f.PTR else t.size_or_type if t.kind in _SIZED else 0
        if size == 0 or size > 8:
            return True
    return False


def _mismatch(btf: Btf, loose: _LooseTypes, candidates: list[int]) -> str:
    """Why the prototypes of two `candidates` disagree, in pahole's words (its tests
    parse "return type mismatch" and "due to param ")."""
    first, second = (_type_by_id(btf, _type_by_id(btf, c).size_or_type)
                     for c in candidates[:2])
    if loose.key(first.size_or_type) != loose.key(second.size_or_type):
        return "return type mismatch"
    if len(first.items) != len(second.items):
        return (f"param count mismatch; {len(first.items)} params != "
                f"{len(second.items)} params")
    for number, (mine, theirs) in enumerate(zip(first.items, second.items), 1):
        if loose.key(mine[1]) != loose.key(theirs[1]):
            return (f"param type mismatch for param#{number} {btf.name(mine[0])} != "
                    f"{btf.name(theirs[0])}")
    return "inconsistent prototype"


def _drop_decl_tags(btf: Btf, redirect: dict[int, int], orphaned: set[int],
                    dropped: set[int]) -> set[int]:
    """Adds to `dropped` the DECL_TAGs on a dropped FUNC or VAR and the repeats of one
    tag; returns what the kept ones refer to."""
    names = btf.names
    seen_tags = set()
    tag_refs: set[int] = set()
    for type_id, t in btf.own():
        if t.kind != f.DECL_TAG:
            continue
        target = t.size_or_type
        target = redirect.get(target, target)
        key = (names(t.name_off), target, t.extra)
        if target == 0 or target in orphaned or key in seen_tags:
            dropped.add(type_id)  # on a dropped FUNC or VAR, or the same as another
        else:
            tag_refs.add(t.size_or_type)
        seen_tags.add(key)
    return tag_refs


_NOT_REFERRED = frozenset({f.FUNC, f.DECL_TAG})  # kinds only a DECL_TAG may refer to


def _referenced(btf: Btf, dropped: set[int]) -> set[int]:
    """Every id a type of `btf` other than a DECL_TAG or a dropped one refers to (only
    FUNCs, FUNC_PROTOs and VARs are ever dropped: others need no test). The kinds
    read inline: `refs()` per type was 0.23 of 0.67 s of choose_functions on the 6.1
    kernel (cProfile)."""
    out: set[int] = set()
    add = out.add
    update = out.update
    typed = spec.TYPED - {f.DECL_TAG}
    for type_id, t in btf.own():
        kind = t.kind
        if kind in typed:
            if type_id not in dropped:
                add(t.size_or_type)
                if kind == f.FUNC_PROTO:
                    update([item[1] for item in t.items])
        elif kind == f.STRUCT or kind == f.UNION:
            update([item[1] for item in t.items])
        elif kind == f.ARRAY:
            add(t.extra[0])
            add(t.extra[1])
        elif kind == f.DATASEC:
            update([item[0] for item in t.items])
    return out


def reorder(btf: Btf, choice: FunctionChoice, alone: bool) -> Btf | None:
    """`btf` (in canonical "kind" order, from a dedup whose order needed no tie broken:
    `alone`) with `choice` applied, in canonical order and with canonical strings; None
    when that shortcut does not apply.

    Only FUNCs and DECL_TAGs change label or edges, and nothing else refers to them, so
    every other type keeps its place relative to the others (refinement restricted to a
    set closed under references orders it the same); a FUNC or a DECL_TAG has one edge,
    so it sorts by its label, then by its target's place. This replaces a second full
    canonicalization: 0.97 s -> 0.35 s on the 6.1 kernel."""
    if not alone or choice.orphaned or not choice.closed:
        return None
    first = btf.first_id
    own = list(btf.types)
    for node, t in choice.kept.items():
        own[node - first] = t
    dropped = choice.dropped
    names = btf.names
    head: list[int] = []  # kinds before FUNC
    funcs: list[int] = []
    middle: list[int] = []  # between FUNC and DECL_TAG
    tags: list[int] = []
    tail: list[int] = []
    for node, t in enumerate(own, first):
        if node in dropped:
            continue
        kind = t.kind
        if kind < f.FUNC:
            head.append(node)
        elif kind == f.FUNC:
            funcs.append(node)
        elif kind < f.DECL_TAG:
            middle.append(node)
        elif kind == f.DECL_TAG:
            tags.append(node)
        else:
            tail.append(node)
    # Own prototypes and targets rank by their old id: old ids of the others are in
    # canonical order, base ids below them all.
    func_keys = [(t.extra, names(t.name_off), t.kflag, t.size_or_type)
                 for t in (own[n - first] for n in funcs)]
    funcs = [n for _, n in sorted(zip(func_keys, funcs))]
    placed = head + funcs + middle + tail  # everything a DECL_TAG may refer to
    rank = dict(zip(placed, range(first, first + len(placed))))
    redirect = choice.redirect
    tag_keys = []
    for n in tags:
        t = own[n - first]
        target = redirect.get(t.size_or_type, t.size_or_type)
        if target >= first and target not in rank:
            return None  # a tag on a tag, or on a type that goes: not a case to guess
        tag_keys.append((names(t.name_off), t.kflag, t.extra, rank.get(target, target)))
    if len(set(func_keys)) < len(func_keys) or len(set(tag_keys)) < len(tag_keys):
        return None  # a tie: leave it to the full canonicalization
    tags = [n for _, n in sorted(zip(tag_keys, tags))]
    order = head + funcs + middle + tags + tail
    merged = {c: into for c, into in redirect.items() if into and into != c}
    return renumbered(Btf(own, btf.strings, btf.base, btf.byteorder, btf.header_tail,
                        btf.layout), order, merged)


def _base_functions(btf: Btf, names: set[str]) -> dict[tuple[str, int], int]:
    """(name, FUNC_PROTO id) -> id of the base's static FUNC (empty without a base), for
    the FUNCs named one of `names` at least."""
    base = btf.base
    if base is None:
        return {}
    # A vmlinux base stays packed: no 95 k Types, and only its FUNCs of these names.
    funcs = accel.heads(base, f.FUNC, names)
    if funcs is not None:
        name = base.strings.peek if base.base is None else btf.name
        return {(name(name_off), proto): type_id
                for type_id, name_off, linkage, proto in funcs if linkage == f.LINKAGE_STATIC}
    return {(btf.name(t.name_off), t.size_or_type): type_id
            for type_id, t in base.own() if t.kind == f.FUNC and t.extra == f.LINKAGE_STATIC}


def _signature(proto: Type) -> tuple:
    """A function's prototype without its parameter names."""
    return (proto.size_or_type, tuple(t for _, t in proto.items))


class _LooseTypes:
    """Types as pahole's consistent_func compares them (btf_encoder.c, types__match): const
    dropped, pointers and other modifiers followed, named types by kind and name (a FWD as
    the struct or union it declares), ints by name, size and encoding, arrays by length
    and element, function prototypes by parameter count and return type."""

    _FOLLOWED = frozenset({f.PTR, f.VOLATILE, f.RESTRICT, f.TYPE_TAG})
    _BY_NAME = frozenset({f.TYPEDEF, f.STRUCT, f.UNION, f.ENUM, f.ENUM64})

    def __init__(self, btf: Btf):
        self.btf = btf
        self.memo: dict[int, tuple] = {}

    def _type(self, type_id: int) -> Type | None:
        return _type_by_id(self.btf, type_id)

    def _name(self, offset: int) -> str:
        """`btf.name`, a base's names read without indexing its whole string section."""
        holder = self.btf
        while offset < holder.strings.start and holder.base is not None:
            holder = holder.base
        return holder.strings.peek(offset) if holder is not self.btf else holder.name(offset)

    def signature(self, proto_id: int) -> tuple:
        proto = self._type(proto_id)
        return (self.key(proto.size_or_type), *(self.key(t) for _, t in proto.items))

    def key(self, type_id: int, depth: int = 0) -> tuple:
        found = self.memo.get(type_id)
        if found is not None:
            return found
        t = self._type(type_id)
        if t is None:
            out: tuple = ("void",)
        elif depth > 64:
            out = ("id", type_id)
        elif t.kind == f.CONST:
            out = self.key(t.size_or_type, depth + 1)
        elif t.kind in self._FOLLOWED:
            out = (t.kind, self.key(t.size_or_type, depth + 1))
        elif t.kind in self._BY_NAME or t.kind == f.FWD:
            kind = (f.UNION if t.kflag else f.STRUCT) if t.kind == f.FWD else t.kind
            out = (kind, self._name(t.name_off))
        elif t.kind == f.INT:
            out = (f.INT, self._name(t.name_off), t.size_or_type, t.extra)
        elif t.kind == f.FLOAT:
            out = (f.FLOAT, self._name(t.name_off), t.size_or_type)
        elif t.kind == f.ARRAY:
            out = (f.ARRAY, t.extra[2], self.key(t.extra[0], depth + 1))
        elif t.kind == f.FUNC_PROTO:
            out = (f.FUNC_PROTO, len(t.items), self.key(t.size_or_type, depth + 1))
        else:
            out = ("id", type_id)
        self.memo[type_id] = out
        return out


def _overlapping_variables(btf: Btf) -> set[int]:
    """VARs whose bytes an earlier entry of their DATASEC already covers (the same variable
    described by two units, or a symbol table at odds with the DWARF): the first in
    (offset, canonical id) order stays."""
    out = set()
    for _, t in btf.own():
        if t.kind != f.DATASEC:
            continue
        end = -1
        for var, offset, size in sorted(t.items, key=lambda item: (item[1], item[0])):
            if offset < end:
                out.add(var)
            else:
                end = offset + size
    return out


def rebuild(btf: Btf, choice: FunctionChoice) -> Btf:
    """`btf` with `choice` applied, in no particular order (ids follow `btf`'s)."""
    first = btf.first_id
    kept = choice.kept
    orphaned = choice.orphaned
    dropped = choice.dropped
    order = [n for n in range(first, btf.last_id + 1) if n not in dropped]
    new_id = new_ids(btf, order, {c: into for c, into in choice.redirect.items() if into})
    types = []
    for node in order:
        t = kept.get(node) or btf.types[node - first]
        if t.kind == f.DATASEC and orphaned:
            t = Type(t.kind, t.name_off, t.kflag, t.size_or_type, t.extra,
                     [item for item in t.items if item[0] not in orphaned])
        types.append(t.remap(new_id))
    return Btf(types, btf.strings, btf.base, btf.byteorder)
