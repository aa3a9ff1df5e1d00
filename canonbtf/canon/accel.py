"""The canonical order and renumbering in C (canonbtf._btf, canon/csrc/ and btf/csrc/), when built.

order.py, refine.py, labels.py and renumber.py stay the reference: the compiled part
mirrors them on the type section's words (docs/ORDER.md defines what both compute), and
tests/test_compiled_order.py holds the two to the same ids and bytes. Each function here
returns None where the compiled part does not apply (not built, CANONBTF_PURE set, a
Btf-like graph that is not a Btf, records no 32-bit word holds); the caller then runs
the reference. The result of `renumbered` stays packed: `sort` writes it without ever
making its 95 k `Type`s."""

from __future__ import annotations

import itertools

from .. import native, u32
from ..btf import writer
from ..btf.model import Btf, Packed, Type
from ..btf.reader import unpacked_types
from ..btf.strings import StringTable
from .keyed import KeyedTypes

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from types import ModuleType


def _module() -> ModuleType | None:
    return native.compiled("canonbtf._btf", "order")


_words = writer.section_words


def _applies(btf: object) -> bool:
    chain = btf
    while chain is not None:
        if not isinstance(chain, Btf) or not isinstance(chain.strings, StringTable):
            return False
        chain = chain.base
    return True


def _redirect(btf: Btf, into: Mapping[int, int] | None) -> bytes | None:
    """`into` over every id of `btf` (the others to themselves) as u32s, made by the
    compiled part (0..95 k made in Python was 5 % of a module's run); None for no
    redirect or no compiled part. ValueError or OverflowError where an id is out of
    range."""
    module = _module()
    if not into or module is None:
        return None
    return module.redirect(btf.last_id + 1, u32.pack(into), u32.pack(into.values()))


def packed(btf: Btf) -> Btf:
    """`btf` with its type section packed once: itself when it is packed already or the
    compiled part does not apply, else a twin sharing its `Type`s. A canonicalization
    calls the compiled part up to four times; each would pack the types again."""
    if btf.packed is not None or _module() is None or not _applies(btf):
        return btf
    words = _words(btf)
    if words is None:
        return btf
    types = btf.types
    return Btf(None, btf.strings, btf.base, btf.byteorder, btf.header_tail, btf.layout,
               Packed(words, len(types), lambda: types))


def _call(btf: Btf, function: str, *args: object) -> object | None:
    """`function` of the compiled part on `btf`'s words, first id and string sections,
    then `args`; None where it does not apply or would not take the section."""
    module = _module()
    if module is None or not _applies(btf):
        return None
    try:
        words = _view(module, btf) if btf.packed is not None else _words(btf)
        if words is None:
            return None
        return getattr(module, function)(words, btf.first_id, btf.string_sections(), *args)
    except ValueError:
        return None


def _view(module: ModuleType, btf: Btf) -> object:
    """`btf`'s packed words as the compiled part's View, indexed and checked once for its
    first id and string chain (a module's run read vmlinux's 95 k records once per call:
    ext4.ko's function checks decode about 90 of its types, one at a time); ValueError
    where the compiled part does not take them."""
    packed, sections = btf.packed, btf.string_sections()
    view = packed.view_for(btf.first_id, sections)
    if view is None:
        view = module.view(packed.words, btf.first_id, sections)
        packed.keep_view(view, btf.first_id, sections)
    return view


def order(btf: Btf, by_name: bool, nodes: Sequence[int] | None = None,
          into: Mapping[int, int] | None = None) -> tuple[list[int], bool] | None:
    """order.ordered: `nodes` (own ids, all by default) in canonical order with edges
    redirected through `into`, and whether no tie was broken."""
    try:
        redirect = _redirect(btf, into)
    except (OverflowError, ValueError):
        return None
    done = _call(btf, "order", by_name, None if nodes is None else u32.pack(nodes),
                 redirect)
    if done is None:
        return None
    raw, alone = done
    return _id_list(raw), alone


def renumbered(btf: Btf, new_order: Sequence[int], into: Mapping[int, int] | None = None,
               strings: bool = True) -> Btf | None:
    """renumber.renumber, the result packed."""
    try:
        redirect = _redirect(btf, into)
    except (OverflowError, ValueError):
        return None
    done = _call(btf, "renumber", u32.pack(new_order), redirect, strings)
    if done is None:
        return None
    new_words, new_strings = done
    table = btf.strings if new_strings is None else StringTable(new_strings, btf.strings.start)
    first_id = btf.first_id
    sections = [*btf.string_sections()[:-1], (table.start, table.data())]
    packed = Packed(new_words, len(new_order),
                    lambda: unpacked_types(new_words, first_id, sections))
    return Btf(None, table, btf.base, btf.byteorder, btf.header_tail, btf.layout, packed)


def labels(btf: Btf) -> list[tuple] | None:
    """labels.label of each of `btf`'s own types ("kind" order), in id order."""
    return _call(btf, "labels")


def keyed_types(btf: Btf) -> KeyedTypes | None:
    """What the dedup's refinement reads of a BTF (dedup.KeyedTypes): `_abstract_keys`'
    keys with the same numbers, and no `Type` decoded. Split BTF over a base without a
    base of its own is numbered as `_reference_inputs` numbers it with the base's index:
    from the base's keys kept in the cache (cachefiles.kept_keys_path; made and kept when
    missing or damaged), else with its base as one section, the base's types first."""
    module = _module()
    if module is None or not _applies(btf) or (btf.base is not None
                                               and btf.base.base is not None):
        return None
    btf = packed(btf)  # the words are read again for the edges
    words = _words(btf)
    if words is None:
        return None
    if btf.base is not None:
        base_words = _words(btf.base)
        if base_words is None:
            return None
        from . import cachefiles  # only a module's run keeps a base's keys

        path = cachefiles.kept_keys_path(module, base_words, btf.base.string_sections())
        if path is not None:
            return _keyed_over(module, btf, base_words, path)
        words, base_count = bytes(base_words) + bytes(words), btf.base.last_id
    else:
        base_count = 0
    sections = btf.string_sections()
    try:
        words = module.view(words, 1, sections)  # indexed once for the keys and the edges
        done = module.abstract_keys(words, 1, sections, base_count)
    except ValueError:
        return None

    def edges_of(nodes: list[int]) -> dict[int, tuple]:
        return dict(zip(nodes, module.edges(words, 1, sections, u32.pack(nodes))))

    return _keyed(done, edges_of, module, (None, None, words, 1, sections))


def _keyed_over(module: ModuleType, btf: Btf, base_words: bytes, path: str
                ) -> KeyedTypes | None:
    """keyed_types of a split BTF from its base's keys kept at `path` (mapped by the
    compiled part, or made and kept there): only the module's own types are keyed."""
    from . import cachefiles

    base = btf.base
    base_sections = base.string_sections()
    sections = btf.string_sections()
    try:
        base_view = _view(module, base) if base.packed is not None else base_words
        view = _view(module, btf)
        *done, made = module.keys_over(base_view, base_sections, view, btf.first_id,
                                       sections, path)
    except ValueError:
        return None
    if made is not None:
        cachefiles.keep_keys(path, made)
    first = btf.first_id

    def edges_of(nodes: list[int]) -> dict[int, tuple]:
        below = [node for node in nodes if node < first]
        own = [node for node in nodes if node >= first]
        found = dict(zip(own, module.edges(view, first, sections, u32.pack(own))))
        if below:
            found.update(zip(below, module.edges(base_view, 1, base_sections,
                                                 u32.pack(below))))
        return found

    return _keyed(done, edges_of, module, (base_view, base_sections, view, first, sections))


def _keyed(done: tuple, edges_of: Callable[[list[int]], dict[int, tuple]],
           module: ModuleType, views: tuple) -> KeyedTypes:
    """KeyedTypes of the compiled part's (keys, token keys, declares, kinds); `views`:
    _refined's arguments that say where the types are."""
    raw_keys, raw_tokens, declares, kinds = done
    keys, tokens = u32.view(raw_keys), u32.view(raw_tokens)
    # The arrays as they are (0: no token): a list of each, and None for 0, were 5-7 ms
    # over a module's base, each run.
    return KeyedTypes(keys, tokens, declares, kinds, edges_of,
                      lambda shared: _refined(module, *views, keys, tokens, declares, shared))


def _refined(module: ModuleType, base_view: object, base_sections: list | None,
             view: object, first: int, sections: list, keys: memoryview,
             tokens: memoryview, declares: bytes, shared: list[int]
             ) -> tuple[memoryview, ...] | None:
    """dedup._refined's (rank, stands_for, classes, the twins' candidates) by the
    compiled part (canon/csrc/refined.c), which reads the edges in place: in Python, the
    partition of a module's types sharing a key with the base's was a fifth of dummy.ko's
    run. None where it declines."""
    try:
        made = module.dedup_refined(base_view, base_sections, view, first, sections, keys,
                                    tokens, declares, u32.pack(shared))
    except ValueError as e:
        native.fell_back("dedup refinement", str(e))
        return None
    rank, stands_for, classes, candidates = (u32.view(raw) for raw in made)
    return rank, stands_for, classes, candidates


def kept_ids(btf: Btf, into: Mapping[int, int]) -> memoryview | None:
    """canon._kept_ids (`btf`'s own ids `into` does not move, ascending) by the compiled
    part; None where it does not apply."""
    module = _module()
    if module is None:
        return None
    try:
        return u32.view(module.kept_ids(btf.first_id, btf.last_id, u32.pack(into)))
    except (OverflowError, ValueError):
        return None


def merge_groups(classes: Sequence[int], moved: Sequence[bool], declares: bytes,
                 kinds: bytes) -> dict[int, int] | None:
    """dedup._merge_groups by the compiled part (canon/csrc/refined.c), on keyed_types'
    flags and kinds: a list per class and a `min` per group were a tenth of ext4.ko's
    run. None where it does not apply."""
    module = _module()
    if module is None:
        return None
    table = classes if u32.is_view(classes) else None
    try:
        if table is None:
            table = u32.pack(classes)
        made = module.dedup_into(table, bytes(moved) if any(moved) else None, declares,
                                 kinds)
    except (OverflowError, TypeError, ValueError):
        return None
    if made is None:
        return None
    nodes, reps = (u32.view(raw) for raw in made)
    return dict(zip(nodes, reps))


def sharing(values: Sequence[int], last: int) -> list[int] | None:
    """dedup._sharing (ids 1..`last` whose value another of them has); None where the
    compiled part does not apply or the values are not small non-negative ints. A
    module's dedup asks it three times over its base's 95 k ids."""
    module = _module()
    if module is None:
        return None
    if u32.is_view(values) and len(values) == last + 1:
        table = values  # keyed_types' keys: no copy through Python ints
    else:
        try:
            table = u32.pack(itertools.islice(values, last + 1))
        except (OverflowError, TypeError):
            return None
    return _id_list(module.sharing(table))


def members(values: Sequence[int], wanted: Iterable[int], last: int) -> list[int] | None:
    """The ids 1..`last` whose value is one of `wanted` (dedup._named_groups' definitions
    of the declared names: a lookup per base type was 3-5 ms of a module's run); None
    where the compiled part does not apply or the values are not keyed_types' u32s."""
    module = _module()
    if module is None or not (u32.is_view(values) and len(values) == last + 1):
        return None
    try:
        return _id_list(module.members(values, u32.pack(wanted)))
    except (OverflowError, TypeError):
        return None


def _id_list(raw: bytes | None) -> list[int] | None:
    """The compiled part's u32 ids (host order) as a list; None stays None."""
    if raw is None:
        return None
    return u32.view(raw).tolist()


def refers_to_func(btf: Btf) -> bool | None:
    """Whether validator.order_dependent_reference would find something (then it is run
    for its message); None where the compiled part does not apply. It saves decoding a
    packed BTF or base (a module's vmlinux) for that check."""
    module = _module()
    if module is None or not _applies(btf):
        return None
    base_kinds = bytes(1) if btf.base is None else _kinds(module, btf.base)
    found = _call(btf, "func_reference", base_kinds)
    return None if found is None else found != 0


def heads(btf: Btf, kind: int, names: set[str] | None = None
          ) -> list[tuple[int, int, int, int]] | None:
    """(id, name_off, vlen, size_or_type) of `btf`'s own types of `kind` (named one of
    `names`, if given), read from its packed words; None when it is not packed (its
    `Type`s are at hand then)."""
    if btf.packed is None:
        return None
    wanted = None if names is None else {name.encode("latin-1") for name in names}
    return _call(btf, "heads", kind, wanted)


def base_type(btf: Btf, type_id: int) -> Type | None:
    """`btf.type_by_id` of an id in one of its bases that is still packed, decoded alone:
    a module's function checks read a few of vmlinux's types, and decoding its 95 k for
    them was 0.1-0.2 s of bridge.ko. None where that does not apply (the caller reads
    `type_by_id`)."""
    holder = btf
    while holder.base is not None and 0 < type_id < holder.first_id:
        holder = holder.base
    module = _module()
    if holder is btf or holder.packed is None or module is None or not _applies(holder):
        return None
    try:
        found = module.decode(_view(module, holder), holder.first_id,
                              holder.string_sections(), Type, u32.pack([type_id]))
    except ValueError:
        return None
    return found[0]


def kinds_by_id(btf: Btf) -> bytes | None:
    """The kind of every id of `btf` and its bases (void's is 0), from packed words where
    they are kept; None when the compiled part does not apply."""
    module = _module()
    if module is None or not _applies(btf):
        return None
    try:
        return _kinds(module, btf)
    except ValueError:
        return None


def own_kinds(btf: Btf) -> bytes | None:
    """The kind of each of `btf`'s own types when they are still packed, else None."""
    return _call(btf, "kinds") if btf.packed is not None else None


def _kinds(module: ModuleType, btf: Btf) -> bytes:
    """The kind of every id of `btf`, base included; void's is 0."""
    below = _kinds(module, btf.base) if btf.base is not None else bytes(1)
    packed = btf.packed
    if packed is not None:
        if packed.kinds is None:
            packed.kinds = module.kinds(_view(module, btf), btf.first_id, btf.string_sections())
        return below + packed.kinds
    return below + bytes(t.kind & 0xFF for t in btf.types)
