"""Each root described as facts: (key, value) pairs with references spelled as C and
anonymous aggregates written out under the member path C uses to reach them."""

from __future__ import annotations

from collections.abc import Callable

from ..btf import format as f
from ..btf.declarator import MAX_CHAIN
from ..btf.model import Btf, Type
from ..spec import kinds as spec
from .pairing import Types
from .speller import _Speller


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


class _Facts:
    """One BTF's roots described by facts (see the module docstring), spelled by `speller`;
    `of` says whether a root's facts name a duplicated type."""

    def __init__(self, btf: Btf, types: Types | None = None,
                 names: Callable[[int], str] | None = None,
                 made: tuple[dict, dict] | None = None):
        self.speller = _Speller(btf, types, names, made)
        self.types = self.speller.types
        self.name = self.speller.name
        self.own_first = btf.first_id
        self._protos: dict[int, tuple[tuple, bool]] = {}
        # Anonymous aggregates described inside some root.
        self.expanded: set[int] = set()
        # Whether the facts under way named a duplicated type so far.
        self._dup = False

    def of(self, type_id: int) -> tuple[tuple, bool]:
        """The root's facts as a tuple of (key, value), equal tuples meaning no change, and
        whether they name a duplicated type."""
        self._dup = False
        facts = self._facts(type_id)
        return facts, self._dup

    def forget(self) -> None:
        """Drop what was spelled before the duplicate tags were known."""
        self.speller.forget()
        self._protos.clear()

    def _expr(self, type_id: int) -> str:
        text, dup = self.speller.spell(type_id)
        if dup:
            self._dup = True
        return text

    def anon_end(self, type_id: int) -> tuple[int, str] | None:
        """The anonymous aggregate a reference leads to, through modifiers, arrays and
        pointers, with the path suffix the way leads through ("", "[]" or "->")."""
        suffix = ""
        depth = 0
        while type_id and depth <= MAX_CHAIN:
            t = self.types[type_id]
            kind = t.kind
            if kind in spec.QUALIFIER:
                type_id = t.size_or_type
            elif kind == f.ARRAY:
                suffix += "[]"
                type_id = t.extra[0]
            elif kind == f.PTR:
                suffix += "->"
                type_id = t.size_or_type
            elif kind in spec.TAGGED and not t.name_off:
                return type_id, suffix
            else:
                return None
            depth += 1
        return None

    # --- facts -------------------------------------------------------------------

    def _expand(self, type_id: int, prefix: str, base: int, out: list, seen: set[int]) -> None:
        """Facts for the inside of an anonymous aggregate, under member path `prefix`."""
        if type_id in seen:
            return
        self.expanded.add(type_id)
        t = self.types[type_id]
        if t.kind == f.ENUM or t.kind == f.ENUM64:
            self._values(t, prefix, out)
            return
        seen.add(type_id)
        self._members(t, prefix, base, out, seen)
        seen.discard(type_id)

    def _members(self, t: Type, prefix: str, base: int, out: list, seen: set[int]) -> None:
        name = self.name
        kflag = t.kflag
        for m_name, m_type, word in t.items:
            if kflag:
                bit_offset, bitfield = word & 0xFFFFFF, word >> 24
            else:
                bit_offset, bitfield = word, 0
            text = name(m_name)
            path = prefix + text
            if text:
                out.append((("member", path), (self._expr(m_type), base + bit_offset, bitfield)))
            end = self.anon_end(m_type)
            if end is None:
                continue
            anon, way = end
            if not way:
                self._expand(anon, path + "." if text else prefix, base + bit_offset, out, seen)
            else:
                self._expand(anon, _way_prefix(path if text else prefix + "(anon)", way), 0,
                             out, seen)

    def _values(self, t: Type, path: str, out: list) -> None:
        name = self.name
        where = path[:-1] if path.endswith(".") else path
        if t.kflag:
            bits = 32 if t.kind == f.ENUM else 64
            for v_name, value in t.items:
                out.append((("value", where, name(v_name)), _signed(value, bits)))
        else:
            for v_name, value in t.items:
                out.append((("value", where, name(v_name)), value))

    def _expand_reference(self, type_id: int, out: list) -> None:
        """Facts for an anonymous aggregate a typedef or variable is made of."""
        end = self.anon_end(type_id)
        if end is not None:
            anon, way = end
            self._expand(anon, _way_prefix("", way), 0, out, set())

    def _facts(self, type_id: int) -> tuple:
        t = self.types[type_id]
        kind = t.kind
        out: list = []
        if kind == f.STRUCT or kind == f.UNION:
            out.append((("size",), t.size_or_type))
            self._members(t, "", 0, out, {type_id})
        elif kind == f.ENUM or kind == f.ENUM64:
            out.append((("width",), "64-bit" if kind == f.ENUM64 else "32-bit"))
            out.append((("size",), t.size_or_type))
            out.append((("signed",), bool(t.kflag)))
            self._values(t, "", out)
        elif kind == f.FUNC:
            return ((("linkage",), _linkage(t.extra)),) + self._proto_facts(t.size_or_type)
        elif kind == f.TYPEDEF:
            out.append((("target",), self._expr(t.size_or_type)))
            self._expand_reference(t.size_or_type, out)
        elif kind == f.VAR:
            out.append((("type",), self._expr(t.size_or_type)))
            out.append((("linkage",), _linkage(t.extra)))
            self._expand_reference(t.size_or_type, out)
        elif kind == f.DATASEC:
            out.append((("size",), t.size_or_type))
            for v_type, v_off, v_size in t.items:
                target = self.types[v_type] if v_type else None
                v_name = self.name(target.name_off) if target is not None else ""
                out.append((("entry", v_name), (v_off, v_size)))
        elif kind == f.INT:
            word = t.extra
            out.append((("size",), t.size_or_type))
            out.append((("encoding",), _int_encoding(word >> 24)))
            out.append((("bits",), word & 0xFF))
            out.append((("bit_offset",), (word >> 16) & 0xFF))
        elif kind == f.FLOAT:
            out.append((("size",), t.size_or_type))
        elif kind == f.FWD:
            out.append((("fwd_kind",), "union" if t.kflag else "struct"))
        if kind in spec.TAGGED and len({key for key, _ in out}) != len(out):
            out = _unique_keys(out)
        return tuple(out)

    def _proto_facts(self, proto_id: int) -> tuple:
        """Return and parameter facts, shared by every function of one prototype."""
        cached = self._protos.get(proto_id)
        if cached is not None:
            if cached[1]:
                self._dup = True
            return cached[0]
        outer = self._dup
        self._dup = False
        out: list = []
        proto = self.types[proto_id] if proto_id else None
        if proto is None or proto.kind != f.FUNC_PROTO:
            out.append((("proto",), self._expr(proto_id)))
        else:
            out.append((("return",), self._expr(proto.size_or_type)))
            items = proto.items
            varargs = bool(items) and items[-1] == (0, 0)
            name = self.name
            expr = self._expr
            for index, (p_name, p_type) in enumerate(items[:-1] if varargs else items, 1):
                out.append((("param", index), (name(p_name), expr(p_type))))
            out.append((("varargs",), varargs))
        facts = tuple(out)
        self._protos[proto_id] = (facts, self._dup)
        self._dup = self._dup or outer
        return facts


def _way_prefix(path: str, way: str) -> str:
    """Member path prefix for what lies behind `way` ("[]", "->", ...) from `path`."""
    if way.endswith("->"):
        return path + way
    return path + way + "." if path or way else ""


def _linkage(value: int) -> str:
    return f.LINKAGE_NAMES[value] if value < len(f.LINKAGE_NAMES) else str(value)


def _int_encoding(bits: int) -> str:
    words = [text for flag, text in ((f.INT_SIGNED, "signed"), (f.INT_CHAR, "char"),
                                     (f.INT_BOOL, "bool")) if bits & flag]
    return "|".join(words) or "unsigned"


def _unique_keys(pairs: list) -> list:
    """Malformed BTF can repeat a member or enumerator name; keep every one, tagged."""
    seen: set = set()
    out = []
    for key, value in pairs:
        if key in seen:
            n = 2
            while key[:-1] + (f"{key[-1]}#{n}",) in seen:
                n += 1
            key = key[:-1] + (f"{key[-1]}#{n}",)
        seen.add(key)
        out.append((key, value))
    return out
