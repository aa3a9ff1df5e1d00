"""BTF as JSON (docs/JSON.md): one object per type, names resolved, keys in a fixed order.

The document is a single JSON object whose "types" array holds one type per line, so it
can be read whole with any JSON parser or streamed line by line. Names are the BTF bytes
mapped one to one onto code points U+0000..U+00FF and written ASCII-escaped, so the
output is plain ASCII and lossless.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as _quote
from typing import TextIO

from ..btf import format as f
from ..btf.model import Btf
from ..spec import kinds as spec

JSON_FORMAT_VERSION = 1

_INT_FLAGS = ((f.INT_SIGNED, "SIGNED"), (f.INT_CHAR, "CHAR"), (f.INT_BOOL, "BOOL"))
_BATCH_LINES = 4096


def _linkage(value: int) -> str:
    return _quote(f.LINKAGE_NAMES[value] if value < len(f.LINKAGE_NAMES) else str(value))


def _int_encoding(word: int) -> str:
    bits = word >> 24
    return "[" + ",".join(f'"{text}"' for flag, text in _INT_FLAGS if bits & flag) + "]"


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def json_lines(btf: Btf) -> list[str]:
    """The document as text pieces (each ends with a newline)."""
    all_types = btf.all_types()
    string_of = btf.name
    quoted: dict[int, str] = {0: '""'}

    def name(off: int) -> str:
        text = quoted.get(off)
        if text is None:
            text = quoted[off] = _quote(string_of(off))
        return text

    lines = [f'{{"canonbtf_json":{JSON_FORMAT_VERSION},"first_id":{btf.first_id},'
             f'"last_id":{btf.last_id},"types":[\n']
    emit = lines.append
    kind_names = spec.KIND_NAMES
    last_id = btf.last_id
    for type_id, t in btf.own():
        kind = t.kind
        sot = t.size_or_type
        head = (f'{{"id":{type_id},"kind":"{kind_names[kind]}","name":{name(t.name_off)},'
                f'"kind_flag":{t.kflag}')
        if kind == f.STRUCT or kind == f.UNION:
            if t.kflag:
                members = ",".join(
                    f'{{"name":{name(n)},"type_id":{m_type},"bits_offset":{off & 0xFFFFFF},'
                    f'"bitfield_size":{off >> 24}}}' for n, m_type, off in t.items)
            else:
                members = ",".join(
                    f'{{"name":{name(n)},"type_id":{m_type},"bits_offset":{off},'
                    f'"bitfield_size":0}}' for n, m_type, off in t.items)
            body = f',"size":{sot},"vlen":{len(t.items)},"members":[{members}]'
        elif kind in (f.PTR, f.TYPEDEF, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG):
            body = f',"type_id":{sot}'
        elif kind == f.FUNC_PROTO:
            params = ",".join(f'{{"name":{name(n)},"type_id":{p_type}}}' for n, p_type in t.items)
            body = f',"ret_type_id":{sot},"vlen":{len(t.items)},"params":[{params}]'
        elif kind == f.FUNC:
            body = f',"type_id":{sot},"linkage":{_linkage(t.extra)}'
        elif kind == f.INT:
            word = t.extra
            body = (f',"size":{sot},"bits_offset":{(word >> 16) & 0xFF},"nr_bits":{word & 0xFF},'
                    f'"encoding":{_int_encoding(word)}')
        elif kind == f.ARRAY:
            elem, index, nelems = t.extra
            body = f',"type_id":{elem},"index_type_id":{index},"nr_elems":{nelems}'
        elif kind == f.ENUM or kind == f.ENUM64:
            width = 32 if kind == f.ENUM else 64
            if t.kflag:
                values = ",".join(f'{{"name":{name(n)},"val":{_signed(v, width)}}}'
                                  for n, v in t.items)
            else:
                values = ",".join(f'{{"name":{name(n)},"val":{v}}}' for n, v in t.items)
            body = (f',"encoding":"{"SIGNED" if t.kflag else "UNSIGNED"}","size":{sot},'
                    f'"vlen":{len(t.items)},"values":[{values}]')
        elif kind == f.FWD:
            body = f',"fwd_kind":"{"union" if t.kflag else "struct"}"'
        elif kind == f.VAR:
            body = f',"type_id":{sot},"linkage":{_linkage(t.extra)}'
        elif kind == f.DATASEC:
            entries = []
            for v_type, v_off, v_size in t.items:
                target = all_types[v_type] if 0 < v_type <= last_id else None
                v_name = name(target.name_off) if target is not None else '""'
                entries.append(f'{{"type_id":{v_type},"name":{v_name},"offset":{v_off},'
                               f'"size":{v_size}}}')
            body = f',"size":{sot},"vlen":{len(t.items)},"vars":[{",".join(entries)}]'
        elif kind == f.FLOAT:
            body = f',"size":{sot}'
        elif kind == f.DECL_TAG:
            body = f',"type_id":{sot},"component_idx":{t.extra}'
        else:
            body = ""
        emit(f"{head}{body}}},\n")
    if len(lines) > 1:
        lines[-1] = lines[-1][:-2] + "\n"
    emit("]}\n")
    return lines


def dump_json(btf: Btf, out: TextIO) -> None:
    """Write the JSON form of `btf`'s own types (docs/JSON.md)."""
    lines = json_lines(btf)
    write = out.write
    for start in range(0, len(lines), _BATCH_LINES):
        write("".join(lines[start:start + _BATCH_LINES]))
