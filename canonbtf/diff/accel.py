"""diff's one door to C (canonbtf._btf, csrc/): whether the compiled plan, pairing and
report apply (native/ says whether the extension is built and wanted) and the calls.
A call that declines is counted as a fallback (native.fell_back) and gives None; the
caller then runs the reference."""

from __future__ import annotations

from collections.abc import Callable

from .. import native

fell_back = native.fell_back


def wanted(marker: str) -> bool:
    """Whether the compiled `marker` part will be asked (before preparing its input)."""
    return native.compiled("canonbtf._btf", marker) is not None


def _module(marker: str):
    return native.compiled("canonbtf._btf", marker)


def plan(*sides: tuple) -> tuple:
    """`_btf.diff_plan` of the two sides (words, strings, first id): per side the roots,
    which to spell, the anonymous roots, the types to decode and the texts made."""
    return _module("diff_plan").diff_plan(*sides)


def decoded(words: bytes, strings: list, make_type: Callable, need: bytes) -> list:
    """The `Type`s (made by `make_type`) of the ids `need` lists, from id 1 of `words`."""
    return _module("decode").decode(words, 1, strings, make_type, need)


def joint(*args: object) -> tuple | None:
    """`_btf.diff_joint`: each side's reach and places, and the joint classes; None where
    it declines."""
    try:
        return _module("diff_joint").diff_joint(*args)
    except ValueError as e:
        fell_back("diff pairing", str(e))
        return None


def report(*args: object) -> tuple[bytes, int] | None:
    """`_btf.diff_report`: the whole report and how many types differ; None where it
    declines."""
    made = _module("diff_report").diff_report(*args)
    if made is None:
        fell_back("diff report", "diff_report declined")
    return made
