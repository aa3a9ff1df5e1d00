"""diff's plan from the compiled keys: which roots to describe, which types to decode,
and the spellings the compiled part already made."""

from __future__ import annotations

from ..btf.model import Btf, Type
from ..btf.writer import section_words
from . import accel


class _Plan:
    """Which roots to describe, from the compiled keys (diff/csrc/diffkeys.c), made before
    any type is decoded: a name with one root on each side whose keys say equal facts is
    left out, a root only added or removed is not spelled (its facts are never read), and
    only the types describing the rest reads are decoded (`_Decoded`); the references
    those types make, and the one-line descriptions of functions and variables, are
    spelled by the compiled part (`made`: ({id: C spelling}, {id: brief})) where the text
    depends on nothing but the types. The pure path (the reference) describes and spells
    every root."""

    def __init__(self, old: Btf, new: Btf):
        self.old = self.new = self.old_spell = self.new_spell = None
        self.old_types = self.new_types = self.old_names = self.new_names = None
        self.old_made = self.new_made = None
        self.chains: list | None = None
        if not accel.wanted("diff_plan"):
            return
        chains = [_chain_words(old), _chain_words(new)]
        if None in chains:
            accel.fell_back("diff plan", "types not packed as read")
            return
        self.chains = chains
        sides = [(words, strings, btf.first_id)
                 for (words, strings), btf in zip(chains, (old, new))]
        (old_roots, self.old_spell, old_anon, old_need, *old_texts), \
            (new_roots, self.new_spell, new_anon, new_need, *new_texts) = accel.plan(*sides)
        self.old = (_ids(old_roots), _ids(old_anon))
        self.new = (_ids(new_roots), _ids(new_anon))
        self.old_types = _Decoded(old, chains[0], old_need)
        self.new_types = _Decoded(new, chains[1], new_need)
        self.old_names = _Names(chains[0][1]).__getitem__
        self.new_names = _Names(chains[1][1]).__getitem__
        self.old_made = _made(old_need, old_roots, *old_texts)
        self.new_made = _made(new_need, new_roots, *new_texts)


class _Decoded(dict):
    """A BTF's types by id, only those `need` names decoded (all a plan's roots read but
    the duplicates' pairing, which may follow them past named types): anything else
    decodes the whole BTF, once. Unchanged types are most of a kernel, and their objects
    most of diff's memory."""

    def __init__(self, btf: Btf, chain: tuple[bytes, list], need: bytes):
        words, strings = chain
        super().__init__(zip(_ids(need), accel.decoded(words, strings, Type, need)))
        self[0] = None
        self.btf = btf

    def __missing__(self, type_id: int) -> Type | None:
        every = self.btf.all_types()
        self.update(enumerate(every))
        return every[type_id]


class _Names(dict):
    """offset -> name, as `StringTable.get` reads it (latin-1, up to its NUL), each decoded
    when first read: the string table's index of every name was half of diff's memory at
    16 x the kernel, and the plan reads a few of them."""

    def __init__(self, sections: list[tuple[int, bytes]]):
        super().__init__()
        self.sections = sections[::-1]

    def __missing__(self, offset: int) -> str:
        for start, data in self.sections:
            if offset >= start:
                rel = offset - start
                if rel >= len(data):
                    break
                end = data.find(b"\0", rel)
                name = self[offset] = data[rel:end if end >= 0 else len(data)].decode("latin-1")
                return name
        raise KeyError(offset)


def _made(need: bytes, roots: bytes, spellings: list, briefs: list
          ) -> tuple[dict[int, str], dict[int, str]]:
    """({id: `ReferenceSpeller.expr(id)`} of the types read, {id: `_Speller.brief(id)`} of
    the roots) where the compiled part made them (no loop, no duplicated name, not nested
    too deep; briefs of functions and variables)."""
    return ({type_id: text for type_id, text in zip(_ids(need), spellings) if text is not None},
            {type_id: text for type_id, text in zip(_ids(roots), briefs) if text is not None})


def _ids(data: bytes) -> list[int]:
    return memoryview(data).cast("I").tolist()


def _chain_words(btf: Btf) -> tuple[bytes, list] | None:
    """The type sections of `btf` and its bases as one, from id 1, and their strings."""
    parts = []
    part: Btf | None = btf
    while part is not None:
        words = section_words(part)
        if words is None:
            return None
        parts.append(words)
        part = part.base
    return b"".join(reversed(parts)), btf.string_sections()
