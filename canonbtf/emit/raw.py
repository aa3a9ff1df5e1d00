"""The text `bpftool btf dump file IN format raw` prints (bpftool 7.1), byte for byte.

bpftool's raw dump is the reference text people compare BTF with, so this reproduces it
exactly, ids included: one header line per type, one tab-indented line per member,
parameter, enumerator or section entry. For split BTF only the module's own types are
printed, with their ids continuing after the base, as `bpftool -B BASE` does.

This is the reference; `_btf.raw_dump` (canonbtf/emit/csrc/rawdump.c) writes the same text
from the reader's packed words when it is built (tests/test_compiled_raw.py holds the two
to each other): 1.5 M types' Type objects were 0.9 GB at 16 x a vmlinux.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from ..btf import format as f
from ..btf.model import Btf, Type
from ..spec import kinds as spec
from .accel import raw_dump as _compiled_dump

# bpftool spells kind 0 differently from our KIND_NAMES.
_KIND_TEXT = ("UNKNOWN", *spec.KIND_NAMES[1:])
_INT_ENCODING_TEXT = {0: "(none)", f.INT_SIGNED: "SIGNED", f.INT_CHAR: "CHAR",
                      f.INT_BOOL: "BOOL"}
_FUNC_LINKAGE_TEXT = ("static", "global", "extern")
_VAR_LINKAGE_TEXT = ("static", "global", "extern")
# Lines are collected and written in batches: one write per type is the slow part.
_BATCH_LINES = 4096


def _linkage(names: tuple[str, ...], value: int) -> str:
    return names[value] if value < len(names) else "(unknown)"


def _signed32(value: int) -> int:
    return value - 0x100000000 if value & 0x80000000 else value


def _signed64(value: int) -> int:
    return value - 0x10000000000000000 if value & 0x8000000000000000 else value


class _RawText:
    """bpftool's text of each kind: a header line, then one line per item."""

    def __init__(self, btf: Btf):
        self.all_types = btf.all_types()
        self.string_of = btf.names
        self.btf = btf
        self.out: list[str] = []
        self.emit = self.out.append

    def name(self, off: int) -> str:
        return self.string_of(off) if off else "(anon)"

    def write(self, out: TextIO) -> None:
        """The dump of `btf`'s own types to `out`, a batch of lines at a time (all lines
        at once were most of the peak memory: 1.2 GB at 16 x a vmlinux)."""
        name = self.name
        kind_text = _KIND_TEXT
        by_kind = _BY_KIND
        pending = self.out
        for type_id, t in self.btf.own():
            kind = t.kind
            head = f"[{type_id}] {kind_text[kind]} '{name(t.name_off)}'"
            write = by_kind.get(kind)
            if write is None:
                self.emit(f"{head}\n")
            else:
                write(self, head, t)
            if len(pending) >= _BATCH_LINES:
                out.write("".join(pending))
                pending.clear()
        out.write("".join(pending))

    def _struct(self, head: str, t: Type) -> None:
        emit = self.emit
        name = self.name
        emit(f"{head} size={t.size_or_type} vlen={len(t.items)}\n")
        if t.kflag:
            for m_name, m_type, m_off in t.items:
                bitfield = m_off >> 24
                if bitfield:
                    emit(f"\t'{name(m_name)}' type_id={m_type} "
                         f"bits_offset={m_off & 0xFFFFFF} bitfield_size={bitfield}\n")
                else:
                    emit(f"\t'{name(m_name)}' type_id={m_type} bits_offset={m_off}\n")
        else:
            for m_name, m_type, m_off in t.items:
                emit(f"\t'{name(m_name)}' type_id={m_type} bits_offset={m_off}\n")

    def _reference(self, head: str, t: Type) -> None:
        self.emit(f"{head} type_id={t.size_or_type}\n")

    def _func_proto(self, head: str, t: Type) -> None:
        emit = self.emit
        name = self.name
        emit(f"{head} ret_type_id={t.size_or_type} vlen={len(t.items)}\n")
        for p_name, p_type in t.items:
            emit(f"\t'{name(p_name)}' type_id={p_type}\n")

    def _func(self, head: str, t: Type) -> None:
        self.emit(f"{head} type_id={t.size_or_type} "
                  f"linkage={_linkage(_FUNC_LINKAGE_TEXT, t.extra)}\n")

    def _int(self, head: str, t: Type) -> None:
        word = t.extra
        encoding = _INT_ENCODING_TEXT.get(word >> 24, "UNKN")
        self.emit(f"{head} size={t.size_or_type} bits_offset={(word >> 16) & 0xFF} "
                  f"nr_bits={word & 0xFF} encoding={encoding}\n")

    def _array(self, head: str, t: Type) -> None:
        elem, index, nelems = t.extra
        self.emit(f"{head} type_id={elem} index_type_id={index} nr_elems={nelems}\n")

    def _enum(self, head: str, t: Type) -> None:
        emit = self.emit
        name = self.name
        signed = t.kflag
        emit(f"{head} encoding={'SIGNED' if signed else 'UNSIGNED'} "
             f"size={t.size_or_type} vlen={len(t.items)}\n")
        if t.kind == f.ENUM:
            to_value = _signed32 if signed else int
            for v_name, value in t.items:
                emit(f"\t'{name(v_name)}' val={to_value(value)}\n")
        else:
            suffix = "LL" if signed else "ULL"
            to_value = _signed64 if signed else int
            for v_name, value in t.items:
                emit(f"\t'{name(v_name)}' val={to_value(value)}{suffix}\n")

    def _fwd(self, head: str, t: Type) -> None:
        self.emit(f"{head} fwd_kind={'union' if t.kflag else 'struct'}\n")

    def _var(self, head: str, t: Type) -> None:
        self.emit(f"{head} type_id={t.size_or_type}, "
                  f"linkage={_linkage(_VAR_LINKAGE_TEXT, t.extra)}\n")

    def _datasec(self, head: str, t: Type) -> None:
        emit = self.emit
        name = self.name
        all_types = self.all_types
        emit(f"{head} size={t.size_or_type} vlen={len(t.items)}\n")
        for v_type, v_off, v_size in t.items:
            target = all_types[v_type] if v_type < len(all_types) else None
            if target is None and v_type:
                emit(f"\ttype_id={v_type} offset={v_off} size={v_size}\n")
            else:
                # Void (id 0) is printed as bpftool's UNKNOWN kind with no name.
                t_kind, t_name = (target.kind, target.name_off) if target else (0, 0)
                emit(f"\ttype_id={v_type} offset={v_off} size={v_size} "
                     f"({_KIND_TEXT[t_kind]} '{name(t_name)}')\n")

    def _sized(self, head: str, t: Type) -> None:
        self.emit(f"{head} size={t.size_or_type}\n")

    def _decl_tag(self, head: str, t: Type) -> None:
        self.emit(f"{head} type_id={t.size_or_type} component_idx={t.extra}\n")


# The text of each kind (an unknown kind has its header line only).
_BY_KIND: dict[int, Callable[[_RawText, str, Type], None]] = {
    f.STRUCT: _RawText._struct,
    f.UNION: _RawText._struct,
    f.PTR: _RawText._reference,
    f.TYPEDEF: _RawText._reference,
    f.CONST: _RawText._reference,
    f.VOLATILE: _RawText._reference,
    f.RESTRICT: _RawText._reference,
    f.TYPE_TAG: _RawText._reference,
    f.FUNC_PROTO: _RawText._func_proto,
    f.FUNC: _RawText._func,
    f.INT: _RawText._int,
    f.ARRAY: _RawText._array,
    f.ENUM: _RawText._enum,
    f.ENUM64: _RawText._enum,
    f.FWD: _RawText._fwd,
    f.VAR: _RawText._var,
    f.DATASEC: _RawText._datasec,
    f.FLOAT: _RawText._sized,
    f.DECL_TAG: _RawText._decl_tag,
}


def dump_raw(btf: Btf, out: TextIO) -> None:
    """Write bpftool 7.1's `format raw` text for `btf` (own types only for split BTF)."""
    if not _compiled_dump(btf, out):
        _RawText(btf).write(out)
