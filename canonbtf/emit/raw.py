"""The text `bpftool btf dump file IN format raw` prints (bpftool 7.1), byte for byte.

bpftool's raw dump is the reference text people compare BTF with, so this reproduces it
exactly, ids included: one header line per type, one tab-indented line per member,
parameter, enumerator or section entry. For split BTF only the module's own types are
printed, with their ids continuing after the base, as `bpftool -B BASE` does.
"""

from __future__ import annotations

from typing import TextIO

from ..btf import format as f
from ..btf.model import Btf

# bpftool spells kind 0 differently from our KIND_NAMES.
_KIND_TEXT = ("UNKNOWN", *f.KIND_NAMES[1:])
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


def raw_lines(btf: Btf) -> list[str]:
    """The dump as a list of text pieces (each ends with a newline) for `btf`'s own types."""
    all_types = btf.all_types()
    string_of = btf.names

    def name(off: int) -> str:
        return string_of(off) if off else "(anon)"

    lines: list[str] = []
    emit = lines.append
    kind_text = _KIND_TEXT
    for type_id, t in btf.own():
        kind = t.kind
        head = f"[{type_id}] {kind_text[kind]} '{name(t.name_off)}'"
        if kind == f.STRUCT or kind == f.UNION:
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
        elif kind in (f.PTR, f.TYPEDEF, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG):
            emit(f"{head} type_id={t.size_or_type}\n")
        elif kind == f.FUNC_PROTO:
            emit(f"{head} ret_type_id={t.size_or_type} vlen={len(t.items)}\n")
            for p_name, p_type in t.items:
                emit(f"\t'{name(p_name)}' type_id={p_type}\n")
        elif kind == f.FUNC:
            emit(f"{head} type_id={t.size_or_type} "
                 f"linkage={_linkage(_FUNC_LINKAGE_TEXT, t.extra)}\n")
        elif kind == f.INT:
            word = t.extra
            encoding = _INT_ENCODING_TEXT.get(word >> 24, "UNKN")
            emit(f"{head} size={t.size_or_type} bits_offset={(word >> 16) & 0xFF} "
                 f"nr_bits={word & 0xFF} encoding={encoding}\n")
        elif kind == f.ARRAY:
            elem, index, nelems = t.extra
            emit(f"{head} type_id={elem} index_type_id={index} nr_elems={nelems}\n")
        elif kind == f.ENUM or kind == f.ENUM64:
            signed = t.kflag
            emit(f"{head} encoding={'SIGNED' if signed else 'UNSIGNED'} "
                 f"size={t.size_or_type} vlen={len(t.items)}\n")
            if kind == f.ENUM:
                to_value = _signed32 if signed else int
                for v_name, value in t.items:
                    emit(f"\t'{name(v_name)}' val={to_value(value)}\n")
            else:
                suffix = "LL" if signed else "ULL"
                to_value = _signed64 if signed else int
                for v_name, value in t.items:
                    emit(f"\t'{name(v_name)}' val={to_value(value)}{suffix}\n")
        elif kind == f.FWD:
            emit(f"{head} fwd_kind={'union' if t.kflag else 'struct'}\n")
        elif kind == f.VAR:
            emit(f"{head} type_id={t.size_or_type}, "
                 f"linkage={_linkage(_VAR_LINKAGE_TEXT, t.extra)}\n")
        elif kind == f.DATASEC:
            emit(f"{head} size={t.size_or_type} vlen={len(t.items)}\n")
            for v_type, v_off, v_size in t.items:
                target = all_types[v_type] if v_type < len(all_types) else None
                if target is None and v_type:
                    emit(f"\ttype_id={v_type} offset={v_off} size={v_size}\n")
                else:
                    # Void (id 0) is printed as bpftool's UNKNOWN kind with no name.
                    t_kind, t_name = (target.kind, target.name_off) if target else (0, 0)
                    emit(f"\ttype_id={v_type} offset={v_off} size={v_size} "
                         f"({kind_text[t_kind]} '{name(t_name)}')\n")
        elif kind == f.FLOAT:
            emit(f"{head} size={t.size_or_type}\n")
        elif kind == f.DECL_TAG:
            emit(f"{head} type_id={t.size_or_type} component_idx={t.extra}\n")
        else:
            emit(f"{head}\n")
    return lines


def dump_raw(btf: Btf, out: TextIO) -> None:
    """Write bpftool 7.1's `format raw` text for `btf` (own types only for split BTF)."""
    lines = raw_lines(btf)
    write = out.write
    for start in range(0, len(lines), _BATCH_LINES):
        write("".join(lines[start:start + _BATCH_LINES]))
