"""Named tuples made without compiling.

`collections.namedtuple` compiles each class's `__new__` from source (eval) when the class
is made: a kernel module's run makes 13 record classes, 3.7 M instructions of crc16.ko's
139 M. These are the same tuples (indexing, unpacking, equality, hashing, pickling,
`_fields`, `_replace`; tests/test_tuples.py holds them to namedtuple's), with the fields
read by `operator.itemgetter`.
"""

from __future__ import annotations

import sys
from operator import itemgetter


def named_tuple(typename: str, fields: str, defaults: tuple = ()) -> type:
    """A tuple class called `typename` whose items are named by `fields` (space-separated);
    `defaults` are the values of the last fields when not given, as namedtuple's."""
    names = tuple(fields.split())
    width = len(names)
    if len(defaults) > width or len(set(names)) != width:
        raise ValueError(f"{typename}: {fields!r} with {len(defaults)} defaults")
    given = dict(zip(names[width - len(defaults):], defaults))

    def __new__(cls, *args, **kwargs):  # noqa: N807 - the tuple's constructor
        if kwargs or len(args) != width:
            args = _completed(typename, names, given, args, kwargs)
        return tuple.__new__(cls, args)

    namespace = {
        # The caller's module, as namedtuple takes it: where pickle finds the class.
        "__module__": sys._getframe(1).f_globals.get("__name__", __name__),
        "__slots__": (),
        "__new__": __new__,
        "__repr__": _repr,
        "__getnewargs__": _items,
        "_fields": names,
        "_replace": _replace,
    }
    for index, name in enumerate(names):
        namespace[name] = property(itemgetter(index), doc=f"item {index}")
    return type(typename, (tuple,), namespace)


def _completed(typename: str, names: tuple, given: dict, args: tuple, kwargs: dict) -> tuple:
    """`args` followed by the fields after them, from `kwargs` or their defaults."""
    if len(args) > len(names):
        raise TypeError(f"{typename}() takes {len(names)} arguments, {len(args)} given")
    values = list(args)
    for name in names[len(args):]:
        if name in kwargs:
            values.append(kwargs.pop(name))
        elif name in given:
            values.append(given[name])
        else:
            raise TypeError(f"{typename}() missing argument {name!r}")
    if kwargs:
        raise TypeError(f"{typename}() got unexpected or repeated arguments {sorted(kwargs)}")
    return tuple(values)


def _items(self: tuple) -> tuple:
    """Pickling: the items are the constructor's arguments."""
    return tuple(self)


def _repr(self: tuple) -> str:
    items = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"{type(self).__name__}({items})"


def _replace(self: tuple, **changes: object) -> tuple:
    """A copy with the fields of `changes` replaced."""
    unknown = set(changes) - set(self._fields)
    if unknown:
        raise ValueError(f"{type(self).__name__} has no fields {sorted(unknown)}")
    return type(self)(*(changes.get(name, value) for name, value in zip(self._fields, self)))
