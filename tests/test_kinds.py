"""The per-kind field table (canonbtf/btf/kinds.py) and what is generated from it.

Every specialised function, for every kind, gives what the generic function that reads
the table gives, on random records of that kind, as `Type`s and as encoder records; the
compiled core's entries (dwarf/csrc/keys.c, which reads the table through the generated
kinds.def: tests/test_spec.py) equal the pure ones; a new row alone makes every
specialisation of a new kind.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canonbtf.btf import format as f
from canonbtf.btf import kinds, model
from canonbtf.btf.kinds import KINDS, NAME, TYPE, VALUE, Shape
from canonbtf.btf.model import Type
from canonbtf.canon import dedup
from canonbtf.dwarf import core, fragment, keys
from canonbtf.spec import kinds as spec

from .conftest import REPO

IDS = 12  # type ids 0..11 in the random records
NAMES = ["", "a", "b", "next", "x"]
# every kind, and two this version does not know (the validator's tests make those)
ALL_KINDS = [*range(len(KINDS)), f.MAX_KIND + 1, 127]


def seeded(examples: int):
    """The same inputs every run, none kept between runs."""
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck))


def field(role: str, as_type: bool) -> st.SearchStrategy:
    if role == TYPE:
        return st.integers(0, IDS - 1)
    if role == NAME:
        return st.integers(0, 40) if as_type else st.sampled_from(NAMES)
    return st.integers(-(1 << 63), 1 << 64)


@st.composite
def records(draw, kind: int, as_type: bool):
    """A random record of `kind`: a Type (names as offsets) or a tuple (names as strings)."""
    shape = kinds.shape(kind)
    name = draw(field(NAME, as_type))
    sot = draw(field(shape.sot, as_type))
    if shape.extra is None:
        extra = draw(st.integers(0, 1 << 32))
    else:
        extra = tuple(draw(field(role, as_type)) for role in shape.extra)
    item = st.tuples(*[field(role, as_type) for role in shape.item])
    items = draw(st.lists(item, max_size=5)) if shape.item else []
    kflag = draw(st.integers(0, 1))
    if as_type:
        return Type(kind, name, kflag, sot, extra, items)
    return (kind, name, kflag, sot, extra, tuple(items))


def maps(draw) -> tuple[list[int], dict, list[bool]]:
    """(new_id with 0 -> 0, new_name over every name, waiting)."""
    new_id = [0] + draw(st.lists(st.integers(1, 10**6), min_size=IDS - 1, max_size=IDS - 1))
    new_name = {n: f"renamed {n}" for n in [*NAMES, *range(41)]}
    waiting = draw(st.lists(st.booleans(), min_size=IDS, max_size=IDS))
    return new_id, new_name, waiting


def refs_at(shape: Shape) -> tuple[bool, bool, bool]:
    """Whether size_or_type, the fixed part, the items hold references."""
    return (shape.sot == TYPE, TYPE in (shape.extra or ()), TYPE in shape.item)


def plain(x) -> tuple:
    """Fields with items and their tuples as tuples, for comparing."""
    kind, name, kflag, sot, extra, items = kinds.fields(x)
    return (kind, name, kflag, sot, extra, tuple(tuple(item) for item in items))


def check(made, family: str, make, x, new_id: list[int], new_name: dict,
          waiting: list[bool]) -> None:
    """`made`, the `family` function of x's kind, against the generic functions."""
    if family == "refs":
        assert made(x) == kinds.refs(x)
        return
    if family == "names":
        assert made(x) == kinds.names(x)
        return
    args = {"remap": (new_id,), "rename": (new_name,), "remap_names": (new_id, new_name),
            "ready": (new_id, waiting)}[family]
    out = made(x, *args)
    if family == "ready" and any(waiting[r] for r in kinds.refs(x)):
        assert out == [r for r in kinds.refs(x) if waiting[r]]
        return
    _, ids, names = kinds.FAMILIES[family]
    expected = kinds.remap(x, new_id if ids else None, new_name if names else None)
    assert plain(out) == expected
    if make is not None:
        assert isinstance(out, make)
    elif isinstance(x, tuple) and not names and refs_at(kinds.shape(x[0])) == (False,) * 3:
        assert out is x  # a kind without references: the record itself


@pytest.mark.parametrize("kind", ALL_KINDS, ids=f.kind_name)
@pytest.mark.parametrize("source", ["type", "record"])
@seeded(60)
@given(data=st.data())
def test_every_specialisation_is_the_generic_function(kind, source, data):
    x = data.draw(records(kind, source == "type"))
    new_id, new_name, waiting = maps(data.draw)
    for family in kinds.FAMILIES:
        for make in (None, Type):
            if make is not None and family in ("refs", "names"):
                continue
            made = kinds.specialise(family, source, make)[kind]
            check(made, family, make, x, new_id, new_name, waiting)


@pytest.mark.parametrize("kind", ALL_KINDS, ids=f.kind_name)
@seeded(40)
@given(data=st.data())
def test_type_methods_follow_the_table(kind, data):
    t = data.draw(records(kind, True))
    new_id, new_name, _ = maps(data.draw)
    assert t.refs() == kinds.refs(t)
    assert t.name_offsets() == kinds.names(t)
    assert plain(t.remap(new_id)) == kinds.remap(t, new_id)
    assert plain(t.remap(new_id, new_name)) == kinds.remap(t, new_id, new_name)


def test_the_modules_use_the_generated_functions():
    """What the hot paths call is what the property test above checks."""
    model.per_kind()
    assert model.REFS is kinds.specialise("refs", "type")
    assert model.NAME_OFFSETS is kinds.specialise("names", "type")
    assert model.REMAP is kinds.specialise("remap", "type", Type)
    assert model.REMAP_NAMES is kinds.specialise("remap_names", "type", Type)
    assert fragment.RECORD_REFS is kinds.specialise("refs", "record")
    assert fragment.RECORD_REMAP is kinds.specialise("remap", "record")
    assert fragment.RECORD_RENAME is kinds.specialise("rename", "record")
    assert keys._READY is kinds.specialise("ready", "record")


def test_the_table_agrees_with_the_wire_format():
    """format.py's sets say the same as the rows, for every kind."""
    assert len(KINDS) == len(spec.KIND_NAMES) == f.MAX_KIND + 1
    for kind in range(1, len(KINDS)):
        shape = KINDS[kind]
        assert (shape.sot == TYPE) == (kind in spec.TYPED), f.kind_name(kind)
        assert bool(shape.item) == (kind in spec.ITEM_WORDS), f.kind_name(kind)
        if shape.extra is not None:
            assert len(shape.extra) == spec.FIXED_WORDS[kind]
    assert kinds.item_name_index(f.DATASEC) is None
    assert kinds.item_name_index(f.STRUCT) == 0


def test_a_new_kind_is_one_row(monkeypatch):
    """A kind added to the table gets every specialisation, equal to the generic one."""
    new = len(KINDS)
    shape = Shape(sot=TYPE, extra=(VALUE, TYPE), item=(TYPE, NAME, TYPE))
    monkeypatch.setattr(kinds, "KINDS", (*KINDS, shape))
    x = (new, "n", 0, 3, (7, 4), ((2, "m", 5), (6, "", 0)))
    assert kinds.refs(x) == [3, 4, 2, 5, 6, 0]
    assert kinds.names(x) == ["n", "m", ""]
    new_id = list(range(0, 100, 10))
    new_name = {"n": "N", "m": "M", "": ""}
    for waiting in ([False] * 10, [i == 5 for i in range(10)]):
        for family in kinds.FAMILIES:
            made = kinds.generate(family, "record")
            check(made[new], family, None, x, new_id, new_name, waiting)


# -- the compiled core ---------------------------------------------------------------------

def test_one_token_for_the_dedup_and_the_keyed_merge():
    """The keyed merge abstracts records with the dedup's own function."""
    assert keys.token_of is dedup.token_of and keys.is_declaration is dedup.is_declaration
    for kind in range(1, len(KINDS)):
        token = dedup.token_of(kind, "n", 1)
        assert (token is not None) == (kind in spec.TOKEN)
        assert dedup.token_of(kind, "", 1) is None


@pytest.mark.skipif(core.compiled_module() is None, reason="the compiled core is not built")
def test_the_cores_entries_are_the_tables_for_every_kind():
    """The compiled core's entries equal the pure keys' (made from the table) on objects
    whose records hold every kind a unit can make (DATASECs are made by the parent)."""
    from canonbtf.dwarf.sections import open_dwarf

    from .test_core import compare_units

    seen: set[int] = set()
    for name in ("all.gcc-dwarf5.o", "kfuncs.clang-dwarf4.o", "tags.clang-dwarf4.o"):
        dwarf = open_dwarf(str(REPO / "golden" / "obj" / name))
        seen |= compare_units(dwarf, dwarf.units)
    assert seen == set(range(1, len(KINDS))) - {f.DATASEC}
