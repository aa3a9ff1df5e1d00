"""btf/'s one door to C (canonbtf._btf, csrc/): whether the compiled reader and writer
apply (native/ says whether the extension is built and wanted) and the calls. Each
returns None where C does not apply or declines; the caller then runs the reference,
which gives the message for input it rejects."""

from __future__ import annotations

from .. import native

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


def wanted(marker: str) -> bool:
    """Whether the compiled `marker` part will be asked (before preparing its input)."""
    return native.compiled("canonbtf._btf", marker) is not None


def checked_view(words: bytes, first_id: int, sections: list[tuple[int, bytes]]
                 ) -> tuple[int, object] | None:
    """How many types a type section (host-order words) holds, checked by the C as the
    reader checks it, and the C's view of it (indexed once: canon/accel.py gives it in
    place of the words); None where it would not take the section."""
    module = native.compiled("canonbtf._btf", "view")
    if module is None:
        return None
    try:
        view = module.view(words, first_id, sections)
        return module.check(view, first_id, sections), view
    except ValueError:
        return None


def decoded(words: bytes, first_id: int, sections: list[tuple[int, bytes]],
            make_type: Callable) -> list | None:
    """The `Type`s (made by `make_type`) of a section `checked_view` took."""
    module = native.compiled("canonbtf._btf", "decode")
    return None if module is None else module.decode(words, first_id, sections, make_type)


def packed_words(types: Sequence) -> bytes | None:
    """`types` as the type section's host-order words; None where C declines a record
    (the reference then names it)."""
    module = native.compiled("canonbtf._btf", "pack")
    if module is None:
        return None
    try:
        return module.pack(types)
    except ValueError:
        return None
