"""Every BTF kind, one row each: what the Python modules and the C (through the generated
canonbtf/native/csrc/kinds.def) know of a kind, and every named set of kinds, as columns.

A record is three words (name_off, info, size_or_type), then `fixed_words` words, then
vlen items of `item_words` words each. The model (a `Type`, or the encoder's record tuple)
holds the fixed part as `extra` and the items as tuples; the roles say what each field
holds: NAME (a string offset, or the string), TYPE (a type id) or VALUE (anything else).
`sot` is the role of size_or_type: SIZE (a byte size), TYPE, or VALUE (unused: 0).
`extra` is None where the fixed part is one plain value (or absent), else the role of
each of its words (ARRAY's).

The named sets (one column each, one meaning each):
- modifier: the kernel's btf_type_is_modifier: sized, aligned and resolved as the type
  it names (a TYPEDEF too);
- qualifier: the modifiers that are no C name of their own (all but TYPEDEF): a C
  declarator's qualifiers and type tags, which a walk to the named type passes through;
- tagged: spelled in C with a tag (struct, union, enum), in the tag's own namespace;
- c_named: a C name of its own at file scope (the tagged kinds, FWD, TYPEDEF);
- token: a named one stands for its name where the dedup abstracts references
  (canon/dedup.py token_of);
- needs_resolve, source_only, decl_tag_target: the kernel's resolve pass
  (btf_type_needs_resolve, the kinds no C type may refer to, what a DECL_TAG may tag).
"""

from __future__ import annotations

NAME = "name"
TYPE = "type"
VALUE = "value"
SIZE = "size"


# The kinds' numbers, as the kernel's BTF_KIND_*: a new kind's name goes last.
(UNKN, INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC,
 FUNC_PROTO, VAR, DATASEC, FLOAT, DECL_TAG, TYPE_TAG, ENUM64) = range(20)

# The columns that are named sets (each a frozenset of kind numbers below).
SET_COLUMNS = ("modifier", "qualifier", "tagged", "c_named", "token", "needs_resolve",
               "source_only", "decl_tag_target")


class Kind:
    """One row: number and name; `sot`, the wire words and the roles (the module
    docstring); then the set columns, false unless given. A plain class: every command
    reads this table, and typing's NamedTuple cost milliseconds of a module's start-up,
    collections' namedtuple compiles (tuples.py, which spec, importing nothing of
    canonbtf, does not use)."""

    __slots__ = ("number", "name", "sot", "fixed_words", "item_words", "extra", "item",
                 *SET_COLUMNS)

    def __init__(self, number: int, name: str, sot: str = VALUE, fixed_words: int = 0,
                 item_words: int = 0, extra: tuple[str, ...] | None = None,
                 item: tuple[str, ...] = (), **sets: bool):
        unknown = set(sets).difference(SET_COLUMNS)
        if unknown:
            raise TypeError(f"Kind {name}: no set columns {sorted(unknown)}")
        self.number, self.name, self.sot = number, name, sot
        self.fixed_words, self.item_words = fixed_words, item_words
        self.extra, self.item = extra, item
        for column in SET_COLUMNS:
            setattr(self, column, sets.get(column, False))


_MEMBERS = (NAME, TYPE, VALUE)   # (name, type, bit offset)
_ENUMERATORS = (NAME, VALUE)     # (name, value): ENUM64's value takes two words
_TAGGED = dict(tagged=True, c_named=True, token=True)

ROWS: tuple[Kind, ...] = (
    Kind(UNKN, "UNKN"),
    Kind(INT, "INT", SIZE, fixed_words=1),
    Kind(PTR, "PTR", TYPE, needs_resolve=True),
    Kind(ARRAY, "ARRAY", fixed_words=3, extra=(TYPE, TYPE, VALUE),  # (elem, index, nelems)
         needs_resolve=True),
    Kind(STRUCT, "STRUCT", SIZE, item_words=3, item=_MEMBERS, **_TAGGED, needs_resolve=True,
         decl_tag_target=True),
    Kind(UNION, "UNION", SIZE, item_words=3, item=_MEMBERS, **_TAGGED, needs_resolve=True,
         decl_tag_target=True),
    Kind(ENUM, "ENUM", SIZE, item_words=2, item=_ENUMERATORS, **_TAGGED),
    Kind(FWD, "FWD", c_named=True, token=True),
    Kind(TYPEDEF, "TYPEDEF", TYPE, modifier=True, c_named=True, needs_resolve=True,
         decl_tag_target=True),
    Kind(VOLATILE, "VOLATILE", TYPE, modifier=True, qualifier=True, needs_resolve=True),
    Kind(CONST, "CONST", TYPE, modifier=True, qualifier=True, needs_resolve=True),
    Kind(RESTRICT, "RESTRICT", TYPE, modifier=True, qualifier=True, needs_resolve=True),
    Kind(FUNC, "FUNC", TYPE, needs_resolve=True, decl_tag_target=True),  # vlen: linkage
    Kind(FUNC_PROTO, "FUNC_PROTO", TYPE, item_words=2, item=(NAME, TYPE)),
    Kind(VAR, "VAR", TYPE, fixed_words=1, needs_resolve=True, source_only=True,
         decl_tag_target=True),
    Kind(DATASEC, "DATASEC", SIZE, item_words=3, item=(TYPE, VALUE, VALUE),  # (var, offset, size)
         needs_resolve=True, source_only=True),
    Kind(FLOAT, "FLOAT", SIZE),
    Kind(DECL_TAG, "DECL_TAG", TYPE, fixed_words=1, needs_resolve=True, source_only=True),
    Kind(TYPE_TAG, "TYPE_TAG", TYPE, modifier=True, qualifier=True, needs_resolve=True),
    Kind(ENUM64, "ENUM64", SIZE, item_words=3, item=_ENUMERATORS, **_TAGGED),
)

MAX_KIND = len(ROWS) - 1
KIND_NAMES: tuple[str, ...] = tuple(row.name for row in ROWS)
KIND_BY_NAME = {row.name: row.number for row in ROWS}
# Words after the common three: fixed, then per vlen item (kinds with any).
FIXED_WORDS = {row.number: row.fixed_words for row in ROWS if row.fixed_words}
ITEM_WORDS = {row.number: row.item_words for row in ROWS if row.item_words}


def kinds_where(column: str) -> frozenset[int]:
    """The kinds whose `column` is true (a set column), or, for "sized" and "typed",
    whose size_or_type is a size or a type id."""
    if column in ("sized", "typed"):
        role = SIZE if column == "sized" else TYPE
        return frozenset(row.number for row in ROWS if row.sot == role)
    return frozenset(row.number for row in ROWS if getattr(row, column))


SIZED = kinds_where("sized")
TYPED = kinds_where("typed")
MODIFIER = kinds_where("modifier")
QUALIFIER = kinds_where("qualifier")
TAGGED = kinds_where("tagged")
C_NAMED = kinds_where("c_named")
TOKEN = kinds_where("token")
NEEDS_RESOLVE = kinds_where("needs_resolve")
SOURCE_ONLY = kinds_where("source_only")
DECL_TAG_TARGET = kinds_where("decl_tag_target")


def kind_name(kind: int) -> str:
    return KIND_NAMES[kind] if 0 <= kind <= MAX_KIND else f"kind {kind}"
