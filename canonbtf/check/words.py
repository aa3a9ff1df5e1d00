"""A violation in words: the message table (canonbtf/spec/messages.py, one template per
key, read by both validators) applied to a finding's raw values, and where it is."""

from __future__ import annotations

from collections.abc import Callable

from ..btf import format as f
from ..spec.messages import MESSAGES


def quote(name: str) -> str:
    """A name in quotes, bytes outside printable ASCII as \\xNN (names are latin-1)."""
    if name.isascii() and name.isprintable():
        return f"'{name}'"
    shown = "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in name)
    return f"'{shown}'"


def _type(type_id: int, kind: int, name: str) -> str:
    kind_name = f.kind_name(kind)
    return f"type {type_id} ({kind_name} {quote(name)})" if name else \
        f"type {type_id} ({kind_name})"


def located(type_id: int | None, kind: int | None, name: str, message: str) -> str:
    """A violation as `check` prints it: where (the type, or the blob), then why."""
    if type_id is None:
        return f"BTF: {message}"
    return f"{_type(type_id, kind, name)}: {message}"


def describe(ref: tuple[int, int | None, str]) -> str:
    type_id, kind, name = ref
    if type_id == 0:
        return "void"
    if kind is None:
        return f"type {type_id}, which does not exist"
    return _type(type_id, kind, name)


def _member(ref: tuple[str | None, int]) -> str:
    name, index = ref
    return f"#{index}" if name is None else quote(name)


def _linkage(linkage: int) -> str:
    return f.LINKAGE_NAMES[linkage] if linkage < len(f.LINKAGE_NAMES) else str(linkage)


_SHOW = {
    "n": quote,
    "t": describe,
    "m": _member,
    "k": f.kind_name,
    "l": lambda kind: f.kind_name(kind).lower(),
    "c": lambda chain: " -> ".join(map(str, chain)),
    "L": _linkage,
}


def _formatter(spec: str, template: str) -> Callable[[tuple], str]:
    """The message of a template from its raw values."""
    shows = [_SHOW.get(s) for s in spec]
    if not any(shows):
        return template.__mod__
    return lambda values: template % tuple([value if show is None else show(value)
                                            for show, value in zip(shows, values)])


# key -> (rule, message from values), made once.
_WORDING = {key: (rule, _formatter(spec, template))
            for key, (rule, spec, template) in MESSAGES.items()}


def word(key: str, values: tuple) -> tuple[str, str]:
    """(rule, message) of the violation `key` with its raw `values`."""
    rule, message = _WORDING[key]
    return rule, message(values)
