"""Fuzzing: mutations of valid BTF blobs, running a command on one, and judging the outcome.

Shared by tests/test_fuzz.py (hypothesis, seeded, a few hundred inputs) and
tools/fuzz_campaign.py (tens of thousands). A mutation knows where every record's words
are in the seed blob (`Layout`), so besides blind bit flips it can aim at what the format
trusts: header offsets and lengths, vlen, kind, type ids (past the end, the type itself,
a by-value cycle), name offsets, the string section's NULs.

Only two outcomes of a command are acceptable: success with valid output, or exit status
2 with exactly one line on stderr and no output file. `judge` lists every way a run
broke that rule. For `encode`, the golden objects are damaged instead (`mutate_object`,
`judge_encode`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import struct
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf, Type
from canonbtf.errors import InputError
from canonbtf.output import TEMP_PREFIX
from canonbtf.spec import kinds as spec

HEADER_NAMES = ("magic", "version", "flags", "hdr_len", "type_off", "type_len", "str_off",
                "str_len")
LAYOUT_NAMES = ("layout_off", "layout_len")  # the 2026 header's extra fields
OUTPUT_NAME = "out"


# ---- seeds ---------------------------------------------------------------------------


def handmade_btf() -> Btf:
    """Every kind once at least, the way compilers and pahole use them; the kernel takes it."""
    b = BtfBuilder()
    int_ = b.int("int", 4, f.INT_SIGNED)
    uint = b.int("unsigned int", 4)
    char = b.int("char", 1, f.INT_SIGNED)
    long_ = b.int("long int", 8, f.INT_SIGNED)
    bool_ = b.int("_Bool", 1, f.INT_BOOL)
    double = b.float("double", 8)
    head_ptr = b.ptr(b.first_id + len(b.types) + 1)
    head = b.struct("list_head", 16, [("next", head_ptr, 0), ("prev", head_ptr, 64)])
    const_char = b.modifier(f.CONST, char)
    string = b.ptr(const_char)
    volatile_int = b.modifier(f.VOLATILE, int_)
    u32 = b.typedef("u32", uint)
    name_array = b.array(char, int_, 16)
    state = b.enum("state", 4, [("S_IDLE", 0), ("S_BUSY", 1), ("S_GONE", -1)], signed=True)
    big = b.enum("big", 8, [("BIG_A", 1 << 40), ("BIG_B", 2)])
    either = b.struct("", 8, [("l", long_, 0), ("s", string, 0)], union=True)
    flags = b.struct("flags", 4, [("a", uint, 0, 3), ("b", uint, 3, 5), ("c", uint, 8, 24)])
    opaque = b.fwd("opaque")
    opaque_ptr = b.ptr(opaque)
    user_int = b.type_tag("user", int_)
    user_ptr = b.ptr(user_int)
    task = b.struct("task", 104, [
        ("node", head, 0), ("name", name_array, 128), ("u", either, 256), ("id", u32, 320),
        ("state", state, 352), ("f", flags, 384), ("big", big, 448), ("v", volatile_int, 512),
        ("d", double, 576), ("ok", bool_, 640), ("priv", opaque_ptr, 704),
        ("uptr", user_ptr, 768),
    ])
    task_ptr = b.ptr(task)
    b.typedef("task_t", task)
    proto = b.func_proto(int_, [("t", task_ptr), ("flags", uint)])
    handler = b.typedef("handler_t", b.ptr(proto))
    b.struct("ops", 8, [("run", handler, 0)])
    run = b.func("run_task", proto)
    b.decl_tag("bpf_kfunc", run)
    b.decl_tag("nonnull", run, 0)
    printf = b.func_proto(int_, [("fmt", string), ("", 0)])
    b.func("log_line", printf, f.LINKAGE_STATIC)
    b.modifier(f.RESTRICT, string)
    counter = b.var("counter", long_)
    table = b.var("names", name_array)
    b.datasec(".bss", 24, [(counter, 0, 8), (table, 8, 16)])
    return b.build()


@dataclass
class Seed:
    """A valid blob to mutate: its bytes, where its records are, its base if split."""

    name: str
    blob: bytes
    base: Btf | None = None
    base_path: str | None = None
    elf: bool = False  # inputs are ELF files holding the (mutated) blob as .BTF
    layout: Layout = field(init=False)

    def __post_init__(self) -> None:
        first_id = self.base.last_id + 1 if self.base is not None else 1
        str_start = self.base.strings.end if self.base is not None else 0
        self.layout = Layout(self.blob, first_id, str_start)

    @property
    def file_bytes(self) -> bytes:
        """The seed as a file: the blob, or an ELF object holding it."""
        return elf_wrap(self.blob)[0] if self.elf else self.blob


def handmade_seed(byteorder: str = "<") -> Seed:
    name = "handmade" if byteorder == "<" else "handmade-be"
    return Seed(name, writer.write(handmade_btf(), byteorder))


def layout_seed() -> Seed:
    """The handmade types with the 2026 header (32 bytes) and a layout section, which
    the reader keeps as opaque bytes."""
    btf = handmade_btf()
    btf.header_tail = bytes(8)
    btf.layout = bytes(range(1, 21))
    return Seed("handmade-layout", writer.write(btf))


def elf_seed() -> Seed:
    return Seed("handmade-elf", writer.write(handmade_btf()), elf=True)


def split_seed(name: str, module: Path, base_path: Path, base: Btf) -> Seed:
    return Seed(name, reader.btf_bytes(str(module)), base, str(base_path))


# ---- where the words are -------------------------------------------------------------


@dataclass
class Record:
    """One type record of the seed: byte offsets of its words, by what they hold."""

    type_id: int
    kind: int
    start: int
    end: int
    info: int
    type_slots: list[int]
    name_slots: list[int]
    value_slots: list[int]
    by_value_slots: list[int]


class Layout:
    """The header fields and records of a valid blob (what `Record`s describe)."""

    def __init__(self, blob: bytes, first_id: int = 1, str_start: int = 0):
        self.byteorder = "<" if int.from_bytes(blob[:2], "little") == f.MAGIC else ">"
        self.header = f.header_struct(self.byteorder)
        fields = self.header.unpack_from(blob)
        self.fields = dict(zip(HEADER_NAMES, fields))
        if self.fields["hdr_len"] >= f.HEADER_LEN_WITH_LAYOUT:
            words = struct.unpack_from(self.byteorder + "II", blob, f.HEADER_LEN)
            self.fields.update(zip(LAYOUT_NAMES, words))
        self.size = len(blob)
        self.first_id = first_id
        self.str_start = str_start
        hdr_len = self.fields["hdr_len"]
        self.types_start = hdr_len + self.fields["type_off"]
        self.types_end = self.types_start + self.fields["type_len"]
        self.strings_start = hdr_len + self.fields["str_off"]
        self.strings_end = self.strings_start + self.fields["str_len"]
        self.records = self._walk(blob)
        self.last_id = first_id + len(self.records) - 1

    def word(self, blob: bytes, offset: int) -> int:
        return int.from_bytes(blob[offset : offset + 4], _ENDIAN[self.byteorder])

    def _walk(self, blob: bytes) -> list[Record]:
        records = []
        pos = self.types_start
        type_id = self.first_id
        while pos < self.types_end:
            info = self.word(blob, pos + 4)
            kind = f.info_kind(info)
            vlen = f.info_vlen(info) if kind != f.FUNC else 0
            fixed = pos + 12
            words = 3 + spec.FIXED_WORDS.get(kind, 0) + spec.ITEM_WORDS.get(kind, 0) * vlen
            rec = Record(type_id, kind, pos, pos + 4 * words, info, [], [pos], [], [])
            if kind in spec.TYPED:
                rec.type_slots.append(pos + 8)
                if kind in (f.TYPEDEF, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG):
                    rec.by_value_slots.append(pos + 8)
            elif kind in spec.SIZED:
                rec.value_slots.append(pos + 8)
            if kind == f.ARRAY:
                rec.type_slots += [fixed, fixed + 4]
                rec.by_value_slots.append(fixed)
                rec.value_slots.append(fixed + 8)
            elif kind in spec.FIXED_WORDS:
                rec.value_slots.append(fixed)
            items = fixed + 4 * spec.FIXED_WORDS.get(kind, 0)
            step = 4 * spec.ITEM_WORDS.get(kind, 0)
            for item in range(items, rec.end, step or 1):
                if kind in (f.STRUCT, f.UNION):
                    rec.name_slots.append(item)
                    rec.type_slots.append(item + 4)
                    rec.by_value_slots.append(item + 4)
                    rec.value_slots.append(item + 8)
                elif kind == f.FUNC_PROTO:
                    rec.name_slots.append(item)
                    rec.type_slots.append(item + 4)
                elif kind == f.DATASEC:
                    rec.type_slots.append(item)
                    rec.value_slots += [item + 4, item + 8]
                else:
                    rec.name_slots.append(item)
                    rec.value_slots += [item + 4] + ([item + 8] if kind == f.ENUM64 else [])
            records.append(rec)
            pos = rec.end
            type_id += 1
        return records

    def boundaries(self) -> list[int]:
        """Every offset where a part of the blob starts or ends: header fields, sections,
        records, strings."""
        cuts = {0, 2, 3, 4, 8, 12, 16, 20, 24, self.fields["hdr_len"], self.types_start,
                self.types_end, self.strings_start, self.strings_end, self.size}
        cuts.update(rec.start for rec in self.records)
        return sorted(c for c in cuts if c <= self.size)


_ENDIAN = {"<": "little", ">": "big"}


# ---- mutations -----------------------------------------------------------------------

Mutation = Callable[[bytearray, Layout, random.Random], bytearray]


def _put(data: bytearray, lay: Layout, offset: int, value: int) -> None:
    if 0 <= offset and offset + 4 <= len(data):
        data[offset : offset + 4] = (value & 0xFFFFFFFF).to_bytes(4, _ENDIAN[lay.byteorder])


def _set_header(data: bytearray, lay: Layout, name: str, value: int) -> None:
    if name in LAYOUT_NAMES:
        offset, width = f.HEADER_LEN + 4 * LAYOUT_NAMES.index(name), 4
    else:
        index = HEADER_NAMES.index(name)
        offset = struct.calcsize(lay.byteorder + f.HEADER_FIELDS[:index])
        width = struct.calcsize(f.HEADER_FIELDS[index])
    if offset + width <= len(data):
        data[offset : offset + width] = (value % (1 << 8 * width)).to_bytes(
            width, _ENDIAN[lay.byteorder])


def _interesting(rnd: random.Random, original: int, lay: Layout) -> int:
    return rnd.choice([
        0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 64, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000,
        0xFFFFFF, 0x1000000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF,
        original + 1, original - 1, original + 4, original - 4, original * 2, original * 8,
        original | 0x80000000, lay.size, lay.size - lay.fields["hdr_len"],
        rnd.getrandbits(32),
    ])


def flip_bits(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    for _ in range(rnd.randint(1, 8)):
        span = lay.types_end if rnd.random() < 0.7 else len(data)
        pos = rnd.randrange(max(1, min(span, len(data))))
        data[pos] ^= 1 << rnd.randrange(8)
    return data


def set_header_field(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    name = rnd.choice(HEADER_NAMES[3:] * 3 + HEADER_NAMES[:3]
                      + (LAYOUT_NAMES * 3 if "layout_off" in lay.fields else ()))
    value = rnd.choice([_interesting(rnd, lay.fields[name], lay), 24, 28, 32, 36])
    _set_header(data, lay, name, value)
    return data


def truncate(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    cut = rnd.choice(lay.boundaries()) + rnd.choice((0, 0, 0, -1, 1, -4, 4))
    return data[: max(0, min(cut, len(data) - 1))]


def truncate_records(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    """Keep only the first k records, with the header saying so: the blob is well-formed
    up to the references that now point past the end."""
    if not lay.records:
        return data
    return keep_records(data, lay, rnd.randrange(len(lay.records)))


def keep_records(data: bytearray, lay: Layout, keep: int) -> bytearray:
    """The blob with its first `keep` records only, the header adjusted."""
    cut = lay.records[keep].start
    removed = lay.types_end - cut
    out = data[:cut] + data[lay.types_end :]
    _set_header(out, lay, "type_len", lay.fields["type_len"] - removed)
    if lay.fields["str_off"] >= lay.fields["type_off"] + lay.fields["type_len"]:
        _set_header(out, lay, "str_off", lay.fields["str_off"] - removed)
    return out


def _record(lay: Layout, rnd: random.Random, want: Callable[[Record], bool]) -> Record | None:
    choices = [rec for rec in lay.records if want(rec)]
    return rnd.choice(choices) if choices else None


def set_vlen(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    rec = _record(lay, rnd, lambda r: True)
    if rec is not None:
        vlen = f.info_vlen(rec.info)
        value = rnd.choice([vlen + 1, vlen + 2, vlen + 1000, 0xFFFF, 0x10000, 0xFFFFFF,
                            max(0, vlen - 1), rnd.getrandbits(24)])
        _put(data, lay, rec.start + 4, (rec.info & ~0xFFFFFF) | (value & 0xFFFFFF))
    return data


def set_kind(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    rec = _record(lay, rnd, lambda r: True)
    if rec is not None:
        kind = rnd.choice([0, 20, 21, 31, 0x40, 0x7F, *range(1, f.MAX_KIND + 1)])
        _put(data, lay, rec.start + 4, (rec.info & ~(0x7F << 24)) | (kind << 24))
    return data


def flip_kind_flag(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    rec = _record(lay, rnd, lambda r: True)
    if rec is not None:
        _put(data, lay, rec.start + 4, rec.info ^ 0x80000000)
    return data


def set_type_id(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    """A referenced type id becomes another: past the end, the type itself, any type."""
    rec = _record(lay, rnd, lambda r: bool(r.type_slots))
    if rec is not None:
        value = rnd.choice([
            lay.last_id + 1, lay.last_id + 2, lay.last_id + 1000, f.MAX_TYPE_ID,
            f.MAX_TYPE_ID + 1, 0x80000000, 0xFFFFFFFF, 0, rec.type_id, rec.type_id,
            lay.first_id - 1, rnd.randrange(lay.last_id + 1), rnd.randrange(lay.last_id + 1),
            rnd.randrange(lay.first_id, lay.last_id + 1),
        ])
        _put(data, lay, rnd.choice(rec.type_slots), value)
    return data


def self_reference(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    """A type refers to itself: a typedef of itself, a struct holding itself, ..."""
    rec = _record(lay, rnd, lambda r: bool(r.type_slots))
    if rec is not None:
        _put(data, lay, rnd.choice(rec.type_slots), rec.type_id)
    return data


def by_value_cycle(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    """Follow by-value references (members, array elements, typedefs, modifiers) a few
    steps from one type, then point the last one back at the first."""
    start = _record(lay, rnd, lambda r: bool(r.by_value_slots))
    if start is None:
        return data
    by_id = {rec.type_id: rec for rec in lay.records}
    rec = start
    for _ in range(rnd.randint(0, 4)):
        target = lay.word(bytes(data), rnd.choice(rec.by_value_slots))
        nxt = by_id.get(target)
        if nxt is None or not nxt.by_value_slots or nxt is start:
            break
        rec = nxt
    _put(data, lay, rnd.choice(rec.by_value_slots), start.type_id)
    return data


def set_name_offset(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    rec = _record(lay, rnd, lambda r: True)
    if rec is not None:
        end = lay.str_start + lay.fields["str_len"]
        value = rnd.choice([end - 1, end, end + 1, 0xFFFFFF, 0x1000000, 0xFFFFFFFF,
                            rnd.randrange(lay.str_start, end), 0, lay.str_start])
        _put(data, lay, rnd.choice(rec.name_slots), value)
    return data


def set_value(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    """A size, member offset, bitfield, enum value, INT encoding or nelems goes odd."""
    rec = _record(lay, rnd, lambda r: bool(r.value_slots))
    if rec is not None:
        slot = rnd.choice(rec.value_slots)
        _put(data, lay, slot, _interesting(rnd, lay.word(bytes(data), slot), lay))
    return data


def set_word(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    if lay.types_end > lay.types_start:
        slot = lay.types_start + 4 * rnd.randrange((lay.types_end - lay.types_start) // 4)
        _put(data, lay, slot, _interesting(rnd, lay.word(bytes(data), slot), lay))
    return data


def break_strings(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    """Strings without their NUL, names with bytes C and JSON must escape."""
    start, end = lay.strings_start, lay.strings_end
    if end <= start:
        return data
    how = rnd.randrange(5)
    if how == 0:
        data[end - 1] = ord("x")
    elif how == 1:
        for pos in range(start + 1, end - 1):
            if data[pos] == 0:
                data[pos] = ord("_")
    elif how == 2:
        data[start] = ord("A")
    elif how == 3:
        pos = rnd.randrange(start, end)
        data[pos] = rnd.choice(b'\xff\x80 \n\t"\\*/%{}#()[]-0')
    else:
        nuls = [pos for pos in range(start, end - 1) if data[pos] == 0]
        if nuls:
            data[rnd.choice(nuls)] = rnd.choice(b"\x01\xffa")
    return data


def move_records(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    """Delete, duplicate or swap whole records, header adjusted: every later id shifts."""
    if not lay.records:
        return data
    a = rnd.choice(lay.records)
    b = rnd.choice(lay.records)
    piece_a = bytes(data[a.start : a.end])
    how = rnd.randrange(3)
    if how == 0:
        out = data[: a.start] + data[a.end :]
        delta = -len(piece_a)
    elif how == 1:
        out = data[: b.start] + piece_a + data[b.start :]
        delta = len(piece_a)
    else:
        if a.start > b.start:
            a, b = b, a
        out = (data[: a.start] + data[b.start : b.end] + data[a.end : b.start]
               + data[a.start : a.end] + data[b.end :])
        delta = 0
    _set_header(out, lay, "type_len", lay.fields["type_len"] + delta)
    _set_header(out, lay, "str_off", lay.fields["str_off"] + delta)
    return out


def splice_bytes(data: bytearray, lay: Layout, rnd: random.Random) -> bytearray:
    pos = rnd.randrange(len(data) + 1)
    if rnd.random() < 0.5:
        return data[:pos] + bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 8))) \
            + data[pos:]
    return data[:pos] + data[pos + rnd.randint(1, 8) :]


# Mutations of the parsed types that mostly keep the BTF valid: new pointer cycles,
# duplicates for dedup to merge, forward declarations to resolve, renamed types. They
# reach the code behind the reader and the validator far more often than byte damage.

_NOT_POINTED_AT = frozenset({f.VAR, f.DATASEC, f.DECL_TAG, f.FUNC})


def _semantic_step(btf: Btf, rnd: random.Random) -> str:
    types = btf.types
    first = btf.first_id
    all_types = btf.all_types()
    own = range(first, first + len(types))

    def pick(kinds: frozenset[int] | None = None) -> int | None:
        ids = [i for i in own if kinds is None or all_types[i].kind in kinds]
        return rnd.choice(ids) if ids else None

    def pointable() -> int:
        ids = [i for i in range(len(all_types))
               if i == 0 or all_types[i].kind not in _NOT_POINTED_AT]
        return rnd.choice(ids[-400:] if rnd.random() < 0.8 else ids)

    how = rnd.choice(["duplicate", "retarget-pointer", "rename", "enum-value", "wrap",
                      "anonymous", "forward", "kind-flag"])
    if how == "duplicate":
        t = types[pick() - first]
        types.append(Type(t.kind, t.name_off, t.kflag, t.size_or_type, t.extra,
                          list(t.items)))
    elif how == "retarget-pointer":
        ptr = pick(frozenset({f.PTR}))
        if ptr is not None:
            types[ptr - first].size_or_type = pointable()
    elif how == "rename":
        named = [i for i in own if all_types[i].name_off]
        if named:
            a, b = rnd.choice(named), rnd.choice(named)
            types[a - first].name_off = all_types[b].name_off
    elif how == "enum-value":
        enum = pick(frozenset({f.ENUM, f.ENUM64}))
        if enum is not None and types[enum - first].items:
            items = list(types[enum - first].items)
            i = rnd.randrange(len(items))
            bits = 64 if types[enum - first].kind == f.ENUM64 else 32
            items[i] = (items[i][0], rnd.getrandbits(bits))
            types[enum - first].items = items
    elif how == "wrap":
        kind = rnd.choice([f.PTR, f.CONST, f.VOLATILE, f.TYPEDEF])
        name = types[rnd.randrange(len(types))].name_off if kind == f.TYPEDEF else 0
        types.append(Type(kind, name, 0, pointable()))
        ptr = pick(frozenset({f.PTR}))
        if ptr is not None and rnd.random() < 0.5:
            types[ptr - first].size_or_type = first + len(types) - 1
    elif how == "anonymous":
        aggregate = pick(frozenset({f.STRUCT, f.UNION, f.ENUM}))
        if aggregate is not None:
            types[aggregate - first].name_off = 0
    elif how == "forward":
        aggregate = pick(frozenset({f.STRUCT, f.UNION}))
        if aggregate is not None and all_types[aggregate].name_off:
            t = all_types[aggregate]
            types.append(Type(f.FWD, t.name_off, int(t.kind == f.UNION), 0, 0, ()))
            ptr = pick(frozenset({f.PTR}))
            if ptr is not None:
                types[ptr - first].size_or_type = first + len(types) - 1
    else:
        enum = pick(frozenset({f.ENUM, f.ENUM64, f.FWD}))
        if enum is not None:
            types[enum - first].kflag ^= 1
    return f"semantic {how}"


def semantic_mutate(seed: Seed, rnd: random.Random) -> tuple[bytes, list[str]]:
    """The seed's types changed in one to four mostly-valid ways, written out again."""
    btf = reader.parse(seed.blob, "seed", seed.base)
    names = [_semantic_step(btf, rnd) for _ in range(rnd.randint(1, 4))]
    return writer.write(btf), names


# In-place mutations keep every record where the layout says it is, so several can be
# combined; the others change the blob's shape and come last.
IN_PLACE: dict[str, Mutation] = {
    "flip-bits": flip_bits,
    "header-field": set_header_field,
    "vlen": set_vlen,
    "kind": set_kind,
    "kind-flag": flip_kind_flag,
    "type-id": set_type_id,
    "self-reference": self_reference,
    "by-value-cycle": by_value_cycle,
    "name-offset": set_name_offset,
    "value": set_value,
    "word": set_word,
    "strings": break_strings,
}
RESHAPING: dict[str, Mutation] = {
    "truncate": truncate,
    "truncate-records": truncate_records,
    "move-records": move_records,
    "splice": splice_bytes,
}


def mutate(seed: Seed, rnd: random.Random) -> tuple[bytes, list[str]]:
    """A mutated copy of the seed and the names of the mutations applied, in order."""
    if rnd.random() < 0.25:
        blob, names = semantic_mutate(seed, rnd)
        return (elf_wrap(blob)[0] if seed.elf else blob), names
    data = bytearray(seed.blob)
    names = []
    in_place = list(IN_PLACE)
    for _ in range(rnd.choice((1, 1, 1, 2, 2, 3))):
        name = rnd.choice(in_place)
        data = IN_PLACE[name](data, seed.layout, rnd)
        names.append(name)
    if rnd.random() < 0.3:
        name = rnd.choice(list(RESHAPING))
        data = RESHAPING[name](data, seed.layout, rnd)
        names.append(name)
    if not seed.elf:
        return bytes(data), names
    if rnd.random() < 0.5:
        return elf_wrap(bytes(data))[0], names
    if rnd.random() < 0.5:
        names, data = [], bytearray(seed.blob)  # the ELF part alone is damaged
    elf, elf_names = mutate_elf(bytes(data), rnd)
    return elf, names + elf_names


# ---- ELF files ---------------------------------------------------------------------

ELF_HEADER = struct.Struct("<4sBBBBB7sHHIQQQIHHHHHH")
SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")
COMPRESSION_HEADER = struct.Struct("<IIQQ")
SHF_COMPRESSED = 0x800
SHT_PROGBITS, SHT_STRTAB = 1, 3


def elf_wrap(blob: bytes, compress: bool = False) -> tuple[bytes, dict[str, int]]:
    """A minimal relocatable ELF64 file whose .BTF section holds `blob` (zlib-compressed
    when `compress`), and the byte offsets of the fields worth mutating."""
    import zlib

    names = b"\0.BTF\0.shstrtab\0"
    flags = 0
    section = blob
    if compress:
        flags = SHF_COMPRESSED
        section = COMPRESSION_HEADER.pack(1, 0, len(blob), 4) + zlib.compress(blob)
    btf_off = ELF_HEADER.size
    names_off = btf_off + len(section)
    sh_off = (names_off + len(names) + 7) & ~7
    header = ELF_HEADER.pack(b"\x7fELF", 2, 1, 1, 0, 0, b"\0" * 7, 1, 247, 1, 0, 0, sh_off,
                             0, ELF_HEADER.size, 0, 0, SECTION_HEADER.size, 3, 2)
    sections = [
        SECTION_HEADER.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        SECTION_HEADER.pack(1, SHT_PROGBITS, flags, 0, btf_off, len(section), 0, 0, 4, 0),
        SECTION_HEADER.pack(6, SHT_STRTAB, 0, 0, names_off, len(names), 0, 0, 1, 0),
    ]
    data = header + section + names + b"\0" * (sh_off - names_off - len(names))
    data += b"".join(sections)
    fields = {"e_ident_class": 4, "e_ident_data": 5, "e_shoff": 0x28, "e_shentsize": 0x3A,
              "e_shnum": 0x3C, "e_shstrndx": 0x3E, "sections": sh_off, "btf": btf_off,
              "names": names_off}
    for i, sec in enumerate(("null", "btf", "shstrtab")):
        base = sh_off + i * SECTION_HEADER.size
        for name, rel in (("name", 0), ("type", 4), ("flags", 8), ("offset", 24),
                          ("size", 32), ("link", 40), ("entsize", 56)):
            fields[f"{sec}.{name}"] = base + rel
    if compress:
        fields["ch_size"] = btf_off + 8
    return data, fields


_ELF_FIELD_WIDTH = {"e_ident_class": 1, "e_ident_data": 1, "e_shoff": 8, "e_shentsize": 2,
                    "e_shnum": 2, "e_shstrndx": 2, "name": 4, "type": 4, "flags": 8,
                    "offset": 8, "size": 8, "link": 4, "entsize": 8, "ch_size": 8}


def mutate_elf(blob: bytes, rnd: random.Random) -> tuple[bytes, list[str]]:
    """`blob` wrapped as ELF, with the ELF part itself damaged in one way."""
    compress = rnd.random() < 0.3
    data, fields = elf_wrap(blob, compress)
    data = bytearray(data)
    how = rnd.randrange(3)
    if how == 0:
        name = rnd.choice([n for n in fields if n not in ("sections", "btf", "names")])
        width = _ELF_FIELD_WIDTH[name.rpartition(".")[2]]
        value = rnd.choice([0, 1, 2, 3, 8, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40,
                            (1 << 8 * width) - 1, len(data), len(data) + 1,
                            SHF_COMPRESSED, rnd.getrandbits(8 * width)])
        offset = fields[name]
        data[offset : offset + width] = (value % (1 << 8 * width)).to_bytes(width, "little")
        label = f"elf-field {name}"
    elif how == 1:
        for _ in range(rnd.randint(1, 8)):
            region = rnd.choice([(0, ELF_HEADER.size), (fields["sections"], len(data))])
            data[rnd.randrange(*region)] ^= 1 << rnd.randrange(8)
        label = "elf-flip-bits"
    else:
        cuts = sorted({0, 4, 16, ELF_HEADER.size, fields["btf"] + 8, fields["names"],
                       fields["sections"], fields["sections"] + SECTION_HEADER.size,
                       len(data) - 1})
        data = data[: rnd.choice(cuts)]
        label = "elf-truncate"
    return bytes(data), [("compressed " if compress else "") + label]


# ---- running a command ----------------------------------------------------------------


class RunTimeout(BaseException):
    """Raised into a run that took longer than its time limit (not an Exception, so no
    handler in the code under test can swallow it)."""


@dataclass
class Outcome:
    status: int | None
    stdout: bytes
    stderr: str
    seconds: float
    error: str | None = None  # the traceback of an exception that escaped main()
    timed_out: bool = False


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum, frame):
        raise RunTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def cached_bases(bases: dict[str, Btf]) -> Iterator[None]:
    """Reading a base BTF named in `bases` gives the Btf already read: the seeds' base is
    the one thing no mutation touches, and vmlinux takes far longer to read than a module."""
    original = reader.load

    def load(path: str, base: Btf | None = None) -> Btf:
        if base is None and path in bases:
            return bases[path]
        return original(path, base)

    reader.load = load
    try:
        yield
    finally:
        reader.load = original


def run_in_process(argv: list[str], limit: float, bases: dict[str, Btf] | None = None
                   ) -> Outcome:
    """canonbtf's main() on `argv` with stdout and stderr captured, under a time limit."""
    from canonbtf import cli

    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    stderr = io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr
    start = time.perf_counter()
    status: int | None = None
    error = None
    timed_out = False
    try:
        with time_limit(limit), cached_bases(bases or {}):
            status = cli.main(argv)
    except RunTimeout:
        timed_out = True
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 2
    except BaseException:  # noqa: BLE001 -- a traceback is exactly what is being looked for
        error = traceback.format_exc()
    finally:
        sys.stdout, sys.stderr = saved
    seconds = time.perf_counter() - start
    stdout.flush()
    return Outcome(status, stdout.buffer.getvalue(), stderr.getvalue(), seconds, error,
                   timed_out)


def run_subprocess(argv: list[str], limit: float) -> Outcome:
    """canonbtf as a user runs it: a new interpreter, `python -m canonbtf`."""
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo)}
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "canonbtf", *argv], capture_output=True,
                              env=env, timeout=limit)
    except subprocess.TimeoutExpired as e:
        return Outcome(None, e.stdout or b"", (e.stderr or b"").decode("latin-1"),
                       time.perf_counter() - start, timed_out=True)
    stderr = proc.stderr.decode("latin-1")
    error = stderr if "Traceback (most recent call last)" in stderr else None
    return Outcome(proc.returncode, proc.stdout, stderr, time.perf_counter() - start, error)


# ---- commands and the judge ------------------------------------------------------------

COMMANDS = ("check", "sort", "sort-dedup", "sort-name", "dump-raw", "dump-json", "dump-c",
            "diff", "diff-json")
_SUCCESS = {"check": (0, 1), "diff": (0, 1), "diff-json": (0, 1)}


def command_argv(command: str, input_path: str, out_path: str, seed_path: str,
                 base_path: str | None) -> list[str]:
    base = ["--base", base_path] if base_path else []
    if command == "check":
        return ["check", input_path, *base]
    if command.startswith("sort"):
        extra = {"sort": [], "sort-dedup": ["--dedup"], "sort-name": ["--order", "name"]}
        return ["sort", input_path, *base, *extra[command], "-o", out_path]
    if command.startswith("dump-"):
        return ["dump", input_path, *base, "--format", command[5:], "-o", out_path]
    bases = ["--base-old", base_path, "--base-new", base_path] if base_path else []
    fmt = ["--format", "json"] if command == "diff-json" else []
    return ["diff", seed_path, input_path, *bases, *fmt]


@dataclass
class Case:
    """One mutated input on disk, ready for any command."""

    seed: Seed
    blob: bytes
    directory: Path
    mutations: list[str] = field(default_factory=list)
    _parsed: Btf | None = None
    _rejected: bool = False
    _valid: bool | None = None

    @property
    def input_path(self) -> Path:
        return self.directory / "input.btf"

    @property
    def seed_path(self) -> Path:
        return self.directory / "seed.btf"

    @property
    def out_path(self) -> Path:
        return self.directory / OUTPUT_NAME

    def write(self) -> None:
        self.input_path.write_bytes(self.blob)
        self.seed_path.write_bytes(self.seed.file_bytes)

    def argv(self, command: str) -> list[str]:
        return command_argv(command, str(self.input_path), str(self.out_path),
                            str(self.seed_path), self.seed.base_path)

    def parsed(self) -> Btf | None:
        """The input as the reader sees it (None when it rejects it)."""
        if self._parsed is None and not self._rejected:
            try:
                data = self.blob
                if data[:4] == reader.ELF_MAGIC:
                    data = reader.elf_section("input", data, ".BTF")
                self._parsed = reader.parse(data, "input", self.seed.base)
            except InputError:
                self._rejected = True
        return self._parsed

    def valid(self) -> bool:
        """Whether the input passes `check` (the reader and the validator)."""
        if self._valid is None:
            from canonbtf.check.validator import validate

            btf = self.parsed()
            self._valid = btf is not None and not validate(btf)
        return self._valid

    def clean(self) -> None:
        for path in self.directory.iterdir():
            if path.name not in ("input.btf", "seed.btf"):
                path.unlink()

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in self.directory.iterdir()
                      if p.name.startswith(TEMP_PREFIX))


def judge(command: str, case: Case, outcome: Outcome, limit: float) -> list[str]:
    """Every way the run broke the rule: valid output, or exit 2 with one clean line."""
    if outcome.error is not None:
        last = outcome.error.strip().splitlines()[-1]
        return [f"traceback: {last}"]
    if outcome.timed_out or outcome.seconds > limit:
        return [f"over {limit:g} s"]
    problems = []
    leftovers = case.leftovers()
    if leftovers:
        problems.append(f"temporary files left behind: {leftovers}")
    writes = command.startswith(("sort", "dump"))
    if outcome.status == 2:
        lines = outcome.stderr.splitlines()
        if len(lines) != 1 or not lines[0].startswith("canonbtf: "):
            problems.append(f"exit 2 without exactly one 'canonbtf: ' line: {lines[:3]!r}")
        if writes and case.out_path.exists():
            problems.append("output file left behind after an error")
        if outcome.stdout:
            problems.append("output on stdout despite the error")
        return problems
    if outcome.status not in _SUCCESS.get(command, (0,)):
        return problems + [f"exit status {outcome.status}: {outcome.stderr.strip()[:200]!r}"]
    if "Traceback" in outcome.stderr or len(outcome.stderr.splitlines()) > 1:
        problems.append(f"stderr on success: {outcome.stderr[:200]!r}")
    if writes and not case.out_path.exists():
        return problems + ["success but no output file"]
    problems += _output_problems(command, case, outcome)
    return problems


def _output_problems(command: str, case: Case, outcome: Outcome) -> list[str]:
    btf = case.parsed()
    if btf is None:
        return ["the command succeeded on input the reader rejects"]
    if command == "check":
        lines = outcome.stdout.decode("latin-1").splitlines()
        if not lines or (outcome.status == 0) != case.valid():
            return [f"check said {outcome.status} but the validator disagrees"]
        return []
    if command.startswith("diff"):
        if command == "diff-json":
            try:
                json.loads(outcome.stdout)
            except ValueError as e:
                return [f"diff output is not JSON: {e}"]
        return []
    out = case.out_path.read_bytes()
    if command.startswith("sort"):
        return sort_problems(command, case, btf, out)
    text = out.decode("latin-1")
    if command == "dump-raw":
        heads = [line for line in text.split("\n")[:-1] if not line.startswith("\t")]
        names_span_lines = any("\n" in btf.name(off) for _, t in btf.own()
                               for off in t.name_offsets())
        if not names_span_lines and (len(heads) != len(btf)
                                     or any(not h.startswith("[") for h in heads)):
            return ["raw dump does not have one '[id] KIND' line per type"]
    elif command == "dump-json":
        try:
            doc = json.loads(text)
        except ValueError as e:
            return [f"JSON dump does not parse: {e}"]
        if len(doc["types"]) != len(btf):
            return ["JSON dump does not have one object per type"]
    elif command == "dump-c":
        from canonbtf.emit.c.header import SPLIT_NOTE

        if not text.removeprefix(SPLIT_NOTE).startswith("#ifndef ") or not text.endswith("*/\n"):
            return ["C dump is not a complete header"]
    return []


def sort_problems(command: str, case: Case, btf: Btf, out: bytes) -> list[str]:
    """Sorted output parses; a valid input stays valid; plain sort is an idempotent
    permutation."""
    from canonbtf.canon import canonicalize
    from canonbtf.check.validator import validate

    try:
        result = reader.parse(out, "output", case.seed.base)
    except InputError as e:
        return [f"sorted output does not parse: {e}"]
    problems = []
    if case.valid():
        violations = validate(result)
        if violations:
            problems.append(f"valid input, invalid output: {violations[0]}")
    if command == "sort-dedup":
        if len(result) > len(btf):
            problems.append("dedup output has more types than the input")
        return problems
    if len(result) != len(btf):
        problems.append("sort output does not have the input's number of types")
    order = "name" if command == "sort-name" else "kind"
    if writer.write(canonicalize(result, order=order)) != out:
        problems.append("sorting the output again changes it")
    return problems


# ---- object files for `encode` ----------------------------------------------------------

GOLDEN_OBJECTS = ["multi.gcc-dwarf5.o", "arrays.clang-dwarf4.o", "bitfields.gcc-dwarf4.o",
                  "funcptr.clang-dwarf5.o"]
DEBUG_SECTIONS = (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str",
                  ".debug_str_offsets")


class ElfSeed:
    """A golden object and where its sections and section headers are."""

    def __init__(self, path: Path):
        from elftools.elf.elffile import ELFFile

        self.name = path.name
        self.data = path.read_bytes()
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            self.shoff = elf["e_shoff"]
            self.shentsize = elf["e_shentsize"]
            self.sections = {}
            self.headers = {}
            for index, section in enumerate(elf.iter_sections()):
                self.sections[section.name] = (section["sh_offset"], section["sh_size"])
                self.headers[section.name] = self.shoff + index * self.shentsize
        self.dwarf5 = "dwarf5" in path.name

    def debug(self, rnd: random.Random) -> tuple[str, int, int]:
        names = [n for n in DEBUG_SECTIONS if self.sections.get(n, (0, 0))[1]]
        name = rnd.choice(names)
        return (name, *self.sections[name])


def _interesting_word(rnd: random.Random, size: int) -> int:
    return rnd.choice([0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFF0, 0xFFFFFFFF, size,
                       size + 1, rnd.getrandbits(32)])


def mutate_object(seed: ElfSeed, rnd: random.Random) -> tuple[bytes, str]:
    """A damaged copy of the object file and what was done to it."""
    data = bytearray(seed.data)
    info_off, info_size = seed.sections[".debug_info"]
    how = rnd.randrange(8)
    if how == 0:
        name, off, size = seed.debug(rnd)
        for _ in range(rnd.randint(1, 8)):
            data[off + rnd.randrange(size)] ^= 1 << rnd.randrange(8)
        return bytes(data), f"flip bits in {name}"
    if how in (1, 2):
        # Any word of .debug_info: DIE references, string offsets, sizes, unit lengths.
        pos = info_off + rnd.randrange(max(1, info_size - 4))
        data[pos : pos + 4] = _interesting_word(rnd, info_size).to_bytes(4, "little")
        return bytes(data), f"word at .debug_info+{pos - info_off}"
    if how == 3:
        # The first unit's header: unit_length, or its .debug_abbrev offset.
        field = rnd.choice([0, 8 if seed.dwarf5 else 6])
        value = _interesting_word(rnd, seed.sections[".debug_abbrev"][1])
        data[info_off + field : info_off + field + 4] = value.to_bytes(4, "little")
        return bytes(data), f"unit header field at {field}"
    if how == 4:
        name, off, size = seed.debug(rnd)
        data[off : off + size] = bytes(size)
        return bytes(data), f"zeroed {name}"
    if how == 5:
        name = rnd.choice([n for n in seed.headers if n])
        header = seed.headers[name]
        field = rnd.choice([24, 32])  # sh_offset, sh_size
        value = rnd.choice([len(data), len(data) + 1, 1 << 40, (1 << 64) - 1,
                            rnd.getrandbits(20)])
        data[header + field : header + field + 8] = value.to_bytes(8, "little")
        return bytes(data), f"{'sh_offset' if field == 24 else 'sh_size'} of {name}"
    cuts = sorted({o for off, size in seed.sections.values() for o in (off, off + size)}
                  | {seed.shoff, seed.shoff + seed.shentsize, 16, 64})
    cut = rnd.choice([c for c in cuts if 0 < c < len(data)])
    return bytes(data[:cut]), f"truncated at {cut}"


def judge_encode(outcome: Outcome, out: Path, directory: Path, limit: float) -> list[str]:
    """The same rule for `encode`, whose summary on success is one or two lines."""
    if outcome.error is not None:
        return [f"traceback: {outcome.error.strip().splitlines()[-1]}"]
    if outcome.timed_out:
        return [f"over {limit:g} s"]
    problems = []
    if [p for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX)]:
        problems.append("temporary file left behind")
    lines = outcome.stderr.splitlines()
    if outcome.status == 2:
        if len(lines) != 1 or not lines[0].startswith("canonbtf: "):
            problems.append(f"exit 2 without exactly one line: {lines[:3]!r}")
        if out.exists():
            problems.append("output file left behind after an error")
        return problems
    if outcome.status != 0:
        return problems + [f"exit status {outcome.status}"]
    if not all(line.startswith("canonbtf: ") for line in lines) or len(lines) > 2:
        problems.append(f"unexpected stderr: {lines[:3]!r}")
    try:
        reader.parse(out.read_bytes(), str(out))
    except InputError as e:
        problems.append(f"output does not parse: {e}")
    return problems
