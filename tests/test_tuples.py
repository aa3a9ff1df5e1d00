"""tuples.named_tuple against its judge, collections.namedtuple: the same items, repr,
fields, defaults and refusals, and the tuples pickle (workers send Fragments back)."""

from __future__ import annotations

import pickle
from collections import namedtuple

import pytest

from canonbtf.dwarf.fragment import Fragment
from canonbtf.tuples import named_tuple

FIELDS = "kind name extra items"
DEFAULTS = (0, ())
Ours = named_tuple("Ours", FIELDS, defaults=DEFAULTS)  # named as bound: pickle finds them
Judge = namedtuple("Judge", FIELDS, defaults=DEFAULTS)

CALLS = [
    ((1, "a", 2, (3,)), {}),
    ((1, "a"), {}),
    ((1,), {"name": "b", "items": (4, 5)}),
    ((), {"kind": 7, "name": "c", "extra": 8}),
]
BAD_CALLS = [
    ((), {}),                                  # a field without a default is missing
    ((1, "a", 2, (), 9), {}),                  # too many
    ((1, "a"), {"kind": 2}),                   # given twice
    ((1, "a"), {"other": 2}),                  # no such field
]


@pytest.mark.parametrize("args, kwargs", CALLS)
def test_the_same_tuple_as_namedtuple(args, kwargs):
    ours, judge = Ours(*args, **kwargs), Judge(*args, **kwargs)
    assert tuple(ours) == tuple(judge) and ours == judge and hash(ours) == hash(judge)
    assert repr(ours) == repr(judge).replace("Judge(", "Ours(", 1)
    assert [getattr(ours, name) for name in Ours._fields] == list(judge)
    assert Ours._fields == Judge._fields
    assert ours._replace(name="z") == judge._replace(name="z")
    assert pickle.loads(pickle.dumps(ours)) == ours == pickle.loads(pickle.dumps(judge))


@pytest.mark.parametrize("args, kwargs", BAD_CALLS)
def test_refuses_what_namedtuple_refuses(args, kwargs):
    with pytest.raises(TypeError):
        Judge(*args, **kwargs)
    with pytest.raises(TypeError):
        Ours(*args, **kwargs)


def test_replace_refuses_an_unknown_field():
    with pytest.raises(ValueError):
        Judge(1, "a")._replace(other=1)
    with pytest.raises(ValueError):
        Ours(1, "a")._replace(other=1)


def test_a_subclass_pickles_as_itself():
    fragment = Fragment([("record",)], 1, 2, {"why": 3})
    again = pickle.loads(pickle.dumps(fragment))
    assert type(again) is Fragment and again == fragment and again.skips == {"why": 3}
