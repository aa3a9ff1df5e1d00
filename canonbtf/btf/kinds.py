"""Where each BTF kind keeps its type ids and its names: one row per kind, read by every
walk over references or names.

A record has the same six fields whether it is a `Type` (model.py) or a record tuple of
the encoder (dwarf/fragment.py): kind, name, kind_flag, size_or_type, extra, items.
`KINDS[kind]` says what size_or_type holds, what the fixed part `extra` holds (one plain
value, or a tuple of fields as ARRAY's) and what each vlen item holds, field by field:
NAME (a string offset in a `Type`, the string itself in a record), TYPE (a type id; in the
encoder a record number, pool id, key or token) or VALUE (anything else).

`refs`, `names` and `remap` read the table on every call: they are the definition.
The hot paths (sorting a kernel's 95 k types reads every reference and name several
times) call what `specialise` generates from the same rows instead: per kind, a
function with the table's choices made, as dies.py generates a DIE reader per shape.
Against the hand-written copies they replace (valgrind, the 6.1 kernel): pure-Python
sort 5,908 M -> 5,860 M instructions, sort --dedup (compiled order) 4,143 M -> 4,069 M,
a pure worker's keys of 1/20 of the units 2,133 M -> 1,925 M, the records' pooling of
40 units 2,250 M -> 2,031 M.
tests/test_kinds.py holds every specialisation to the generic functions, kind by kind.

Adding a kind (what cilium/ebpf's types.go lists for a new type):
- canonbtf/spec/kinds.py: its number and its row (wire words, field roles, the named sets
  it is in), then `python -m canonbtf.spec.gen_c` (the build runs it too) and
  `python -m canonbtf.btf.kinds` (the specialisations compiled ahead): this table,
  refs, names, remapping and their specialisations, format.kind_name, the writer's words,
  check's kind tables, and in C (native/csrc/kinds.h) K_<NAME>, kind_name, the words and
  roles by kind and the KINDS_* sets follow (tests/test_spec.py adds one made-up row and
  sees both sides pick it up);
- the code that truly differs for it: reader.py's specialised parse, canon/labels.py (its
  label), canon/dedup.py `token_of` (if references to it stand for a name), check's
  per-kind rules (records.py, resolve.py, check/csrc/check.c), emit/ (c, raw, json),
  diff/, the compiled type edges and renumbering (btf/csrc/types.c, canon/csrc/
  renumber.c), and dwarf/convert.py with dwarf/csrc/ when DWARF makes it.
"""

from __future__ import annotations

from ..spec import kinds as spec
from ..spec.kinds import NAME, TYPE, VALUE
from ..tuples import named_tuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import ModuleType

FIELDS = ("kind", "name_off", "kflag", "size_or_type", "extra", "items")


class Shape(named_tuple("Shape", "sot extra item", defaults=(VALUE, None, ()))):
    """What one kind's fields hold: `sot` the role of size_or_type; `extra` the roles of
    a tuple-valued fixed part (None: a plain value); `item` the roles of each vlen item.
    (A named tuple: `specialise` groups kinds by their shape.)"""

    __slots__ = ()


_PLAIN = Shape()


def shape_of(row: spec.Kind) -> Shape:
    """The roles of a row of the one table of kinds (a size in size_or_type is a VALUE)."""
    return Shape(sot=TYPE if row.sot == TYPE else VALUE, extra=row.extra, item=row.item)


KINDS: tuple[Shape, ...] = tuple(shape_of(row) for row in spec.ROWS)
# Kinds past the table (unknown to this version, as the validator's tests make them in
# memory) hold no references and no item names, up to the 7 bits of info's kind field.
_ANY_KIND = 0x80


def shape(kind: int) -> Shape:
    """The row of `kind`; an unknown kind's is UNKN's."""
    return KINDS[kind] if kind < len(KINDS) else _PLAIN


def item_name_index(kind: int) -> int | None:
    """Where the name sits in an item of `kind` (None: its items have no name)."""
    item = shape(kind).item
    return item.index(NAME) if NAME in item else None


def fields(x: object) -> tuple:
    """The six fields of a `Type` or of a record tuple."""
    if isinstance(x, tuple):
        return x
    return tuple([getattr(x, name) for name in FIELDS])


def refs(x: object) -> list:
    """Referenced type ids in record order: size_or_type, the fixed part, the items."""
    kind, _, _, sot, extra, items = fields(x)
    row = shape(kind)
    out = [sot] if row.sot == TYPE else []
    if row.extra is not None:
        out.extend([v for role, v in zip(row.extra, extra) if role == TYPE])
    for item in items:
        out.extend([v for role, v in zip(row.item, item) if role == TYPE])
    return out


def names(x: object) -> list:
    """The record's own name, then every name its items hold, in order."""
    kind, name, _, _, _, items = fields(x)
    out = [name]
    for item in items:
        out.extend([v for role, v in zip(shape(kind).item, item) if role == NAME])
    return out


def remap(x: object, new_id: Mapping | Sequence | None = None,
          new_name: Mapping | Sequence | None = None) -> tuple:
    """The six fields with every type id r as new_id[r] and every name n as new_name[n]
    (either map may be None: kept); items and a tuple extra come as tuples."""
    kind, name, kflag, sot, extra, items = fields(x)
    row = shape(kind)

    def mapped(role: str, value):
        if role == TYPE and new_id is not None:
            return new_id[value]
        if role == NAME and new_name is not None:
            return new_name[value]
        return value

    if row.extra is not None:
        extra = tuple([mapped(role, v) for role, v in zip(row.extra, extra)])
    items = tuple([tuple([mapped(role, v) for role, v in zip(row.item, item)])
                   for item in items])
    return (kind, mapped(NAME, name), kflag, mapped(row.sot, sot), extra, items)


# -- specialisations -----------------------------------------------------------------------

# family -> (parameters after the record, maps type ids, maps names)
FAMILIES = {
    "refs": ((), False, False),
    "names": ((), False, False),
    "remap": (("new_id",), True, False),
    "rename": (("new_name",), False, True),
    "remap_names": (("new_id", "new_name"), True, True),
    # remap, or else the list of the references r with waiting[r] (keys.py's entries)
    "ready": (("new_id", "waiting"), True, False),
}
SOURCES = {
    "type": ("t", tuple(f"t.{name}" for name in FIELDS)),
    "record": ("r", tuple(f"r[{i}]" for i in range(6))),
}


_MADE: dict[tuple, tuple[Callable, ...]] = {}
GENERATED = "kind_functions.py"  # beside this file: `python -m canonbtf.btf.kinds` writes it
# (family, source, with `make`) of the specialisations model.py, dwarf/fragment.py and
# dwarf/keys.py make at import: the ones compiled ahead (the tests' others are generated
# when asked).
AHEAD = (("refs", "type", False), ("names", "type", False), ("remap", "type", True),
         ("remap_names", "type", True), ("refs", "record", False),
         ("remap", "record", False), ("rename", "record", False),
         ("names", "record", False), ("remap_names", "record", True),
         ("ready", "record", False))


def specialise(family: str, source: str, make: Callable | None = None) -> tuple[Callable, ...]:
    """`generate(family, source, make)`, made once for the process: taken from the
    module generated ahead (kind_functions.py) while it matches the table, where
    compiling them was about 8 ms of every run's start (a kernel module's: pahole's whole
    run is 40 ms); generated here otherwise (a row the file does not know yet)."""
    key = (family, source, make)
    made = _MADE.get(key)
    if made is None:
        made = _MADE[key] = _ahead(family, source, make) or generate(family, source, make)
    return made


def _ahead(family: str, source: str, make: Callable | None) -> tuple[Callable, ...] | None:
    ahead = _ahead_module()
    if ahead is None:
        return None
    if make is not None:  # the remapping families' `make`: one per process (model.Type)
        if ahead.make is None:
            ahead.make = make
        elif ahead.make is not make:
            return None
    functions = ahead.TABLES.get((family, source, make is not None))
    return None if functions is None else tuple(functions[i] for i in ahead.SHAPE_OF_KIND)


def _ahead_module() -> ModuleType | None:
    """kind_functions.py, if it matches the table (the check is a repr of 128 rows, made
    once: _AHEAD)."""
    if not _AHEAD:
        try:
            from . import kind_functions as ahead
        except ImportError:
            ahead = None
        _AHEAD.append(ahead if ahead is not None and ahead.SHAPES == repr(_shapes()) else None)
    return _AHEAD[0]


_AHEAD: list[ModuleType | None] = []  # _ahead_module's answer, once it is known


def _shapes() -> tuple[list[Shape], list[Shape]]:
    """The row of every kind to 127, and the distinct rows (one function each)."""
    rows = [shape(kind) for kind in range(_ANY_KIND)]
    return rows, list(dict.fromkeys(rows))


def _functions(family: str, source: str, make: bool, prefix: str) -> list[str]:
    """The source of the `family` function of each distinct row, named prefix_N."""
    params, _, _ = FAMILIES[family]
    var = SOURCES[source][0]
    lines = []
    for n, row in enumerate(_shapes()[1]):
        lines.append(f"def {prefix}_{n}({', '.join((var, *params))}):")
        lines.extend(f"    {line}" for line in _body(family, row, source, make))
    return lines


def generate(family: str, source: str, make: Callable | None = None) -> tuple[Callable, ...]:
    """Per kind (index = kind, to 127), the `family` function for records read as `source`
    ("type": a Type's attributes; "record": a tuple's items). The remapping families
    return `make(*fields)` (say `Type`), or a record tuple when `make` is None (then a
    kind with nothing to map returns its record itself)."""
    rows, shapes = _shapes()
    lines = _functions(family, source, make is not None, family)
    namespace = {"make": make}
    exec(compile("\n".join(lines), f"<kinds: {family}>", "exec"), namespace)  # noqa: S102
    return tuple(namespace[f"{family}_{shapes.index(row)}"] for row in rows)


def generated_module() -> str:
    """kind_functions.py: the AHEAD specialisations (their `make` is what the first
    `specialise` asking for one gives), as `generate` makes them (tests/test_spec.py
    holds the file current)."""
    rows, shapes = _shapes()
    out = ['"""Generated by `python -m canonbtf.btf.kinds` from the table of kinds: do not',
           'edit. What btf/kinds.py `specialise` returns, compiled ahead."""',
           "# ruff: noqa", "", "make = None  # what the _made functions return: set by specialise",
           "",
           f"SHAPES = {repr((rows, shapes))!r}",
           f"SHAPE_OF_KIND = {tuple(shapes.index(row) for row in rows)!r}", ""]
    tables = []
    for family, source, made in AHEAD:
        prefix = f"{family}_{source}{'_made' if made else ''}"
        out += [*_functions(family, source, made, prefix), ""]
        names = ", ".join(f"{prefix}_{n}" for n in range(len(shapes)))
        tables.append(f"    ({family!r}, {source!r}, {made}): ({names},),")
    return "\n".join([*out, "TABLES = {", *tables, "}", ""])


def _select(roles: Sequence[str], role: str) -> list[int]:
    return [i for i, r in enumerate(roles) if r == role]


def _single(row: Shape, read: tuple[str, ...]) -> list[str]:
    """Expressions of the references outside the items, in record order."""
    out = [read[3]] if row.sot == TYPE else []
    if row.extra is not None:
        out += [f"{read[4]}[{i}]" for i in _select(row.extra, TYPE)]
    return out


def _each(row: Shape, role: str, items: str, where: str = "") -> str | None:
    """A list comprehension of the items' fields of `role` (None when they hold none),
    keeping those v for which `where` (with `{v}`) holds, if given."""
    at = _select(row.item, role)
    if not at:
        return None
    if len(at) == 1:
        value, loop = f"i[{at[0]}]", f"for i in {items}"
    else:
        value, loop = "v", f"for i in {items} for v in ({', '.join(f'i[{k}]' for k in at)},)"
    test = f" if {where.format(v=value)}" if where else ""
    return f"[{value} {loop}{test}]"


def _body(family: str, row: Shape, source: str, make: bool) -> list[str]:
    read = SOURCES[source][1]
    if family == "refs":
        single = _single(row, read)
        each = _each(row, TYPE, read[5])
        if each and single:
            return [f"return [{', '.join(single)}, *{each}]"]
        return [f"return {each or '[' + ', '.join(single) + ']'}"]
    if family == "names":
        each = _each(row, NAME, read[5])
        return [f"return [{read[1]}, *{each}]" if each else f"return [{read[1]}]"]
    _, ids, names_ = FAMILIES[family]
    out = list(read)
    lines = _pending(row, read) if family == "ready" else []
    if _map_fields(out, row, ids, names_, make, lines) or make or source != "record":
        made = f"make({', '.join(out)})" if make else f"({', '.join(out)})"
    else:
        made = "r"  # nothing to map: the record itself
    return [*lines, f"return {made}"]


def _pending(row: Shape, read: tuple[str, ...]) -> list[str]:
    """Lines that return the list of the references r with waiting[r], if any."""
    single = _single(row, read)
    each = _each(row, TYPE, read[5], "waiting[{v}]")
    if not each:
        if len(single) == 1:
            return [f"if waiting[{single[0]}]:", f"    return [{single[0]}]"]
        if not single:
            return []
    if single:
        lines = [f"pending = [{single[0]}] if waiting[{single[0]}] else []"]
        for ref in single[1:]:
            lines += [f"if waiting[{ref}]:", f"    pending.append({ref})"]
        if each:
            lines.append(f"pending += {each}")
    else:
        lines = [f"pending = {each}"]
    return [*lines, "if pending:", "    return pending"]


def _map_fields(out: list[str], row: Shape, ids: bool, names_: bool, make: bool,
                lines: list[str]) -> bool:
    """Rewrite the field expressions `out` to map type ids (`ids`) and names (`names_`),
    adding to `lines` what they need first; whether anything is mapped."""
    def mapped(role: str, expr: str) -> str:
        if role == TYPE and ids:
            return f"new_id[{expr}]"
        if role == NAME and names_:
            return f"new_name[{expr}]"
        return expr

    before = list(out)
    out[1] = mapped(NAME, out[1])
    out[3] = mapped(row.sot, out[3])
    if row.extra is not None:
        parts = [f"extra[{i}]" for i in range(len(row.extra))]
        new = [mapped(role, part) for role, part in zip(row.extra, parts)]
        if new != parts:
            lines.append(f"extra = {out[4]}")
            out[4] = f"({', '.join(new)},)"
    at = [f"a{i}" for i in range(len(row.item))]
    new = ", ".join(mapped(role, a) for role, a in zip(row.item, at))
    if new != ", ".join(at):
        comprehension = f"[({new},) for {', '.join(at)} in {out[5]}]"
        out[5] = comprehension if make else f"tuple({comprehension})"
    return out != before


if __name__ == "__main__":
    import pathlib

    pathlib.Path(__file__).with_name(GENERATED).write_text(generated_module())
