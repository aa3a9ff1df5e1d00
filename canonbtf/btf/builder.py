"""Building BTF type by type with names as strings: for encoders and hand-made tests."""

from __future__ import annotations

from collections.abc import Sequence

from . import format as f
from . import kinds
from .model import Btf, Type
from .strings import StringTable


class BtfBuilder:
    """Appends types and returns their ids; `build()` gives the `Btf`."""

    def __init__(self, base: Btf | None = None, byteorder: str = "<"):
        self.base = base
        self.byteorder = byteorder
        start = base.strings.end if base is not None else 0
        self.strings = StringTable(b"\0" if base is None else b"", start)
        self.types: list[Type] = []
        self.first_id = base.last_id + 1 if base is not None else 1

    def _name(self, name: str) -> int:
        if not name:
            return 0
        return self.strings.add(name)

    def add(self, kind: int, name: str = "", size_or_type: int = 0, *, kflag: int = 0,
            extra: int | tuple[int, int, int] = 0, items: Sequence[tuple] = ()) -> int:
        """Append a type; names (its own, and its items' where kinds.py puts one) are given
        as strings."""
        at = kinds.item_name_index(kind)
        if at is not None:
            items = [(*item[:at], self._name(item[at]), *item[at + 1:]) for item in items]
        self.types.append(Type(kind, self._name(name), kflag, size_or_type, extra, list(items)))
        return self.first_id + len(self.types) - 1

    def int(self, name: str, size: int, encoding: int = 0, bits: int | None = None,
            offset: int = 0) -> int:
        bits = size * 8 if bits is None else bits
        return self.add(f.INT, name, size, extra=(encoding << 24) | (offset << 16) | bits)

    def ptr(self, target: int) -> int:
        return self.add(f.PTR, "", target)

    def typedef(self, name: str, target: int) -> int:
        return self.add(f.TYPEDEF, name, target)

    def modifier(self, kind: int, target: int) -> int:
        return self.add(kind, "", target)

    def array(self, elem: int, index: int, nelems: int) -> int:
        return self.add(f.ARRAY, "", 0, extra=(elem, index, nelems))

    def struct(self, name: str, size: int, members: Sequence[tuple], union: bool = False) -> int:
        """members: (name, type, bit offset) or (name, type, bit offset, bitfield size)."""
        kflag = int(any(len(m) > 3 and m[3] for m in members))
        items = []
        for m in members:
            bitsize = m[3] if len(m) > 3 else 0
            offset = (bitsize << 24) | m[2] if kflag else m[2]
            items.append((m[0], m[1], offset))
        return self.add(f.UNION if union else f.STRUCT, name, size, kflag=kflag, items=items)

    def fwd(self, name: str, union: bool = False) -> int:
        return self.add(f.FWD, name, 0, kflag=int(union))

    def enum(self, name: str, size: int, values: Sequence[tuple[str, int]],
             signed: bool = False) -> int:
        if size > 4 or any(v > 0xFFFFFFFF or v < -0x80000000 for _, v in values):
            items = [(n, v & 0xFFFFFFFFFFFFFFFF) for n, v in values]
            return self.add(f.ENUM64, name, size, kflag=int(signed), items=items)
        items = [(n, v & 0xFFFFFFFF) for n, v in values]
        return self.add(f.ENUM, name, size, kflag=int(signed), items=items)

    def func_proto(self, ret: int, params: Sequence[tuple[str, int]]) -> int:
        return self.add(f.FUNC_PROTO, "", ret, items=params)

    def func(self, name: str, proto: int, linkage: int = f.LINKAGE_GLOBAL) -> int:
        return self.add(f.FUNC, name, proto, extra=linkage)

    def var(self, name: str, target: int, linkage: int = f.LINKAGE_GLOBAL) -> int:
        return self.add(f.VAR, name, target, extra=linkage)

    def datasec(self, name: str, size: int, entries: Sequence[tuple[int, int, int]]) -> int:
        return self.add(f.DATASEC, name, size, items=entries)

    def float(self, name: str, size: int) -> int:
        return self.add(f.FLOAT, name, size)

    def decl_tag(self, value: str, target: int, component_idx: int = -1,
                 attribute: bool = False) -> int:
        return self.add(f.DECL_TAG, value, target, kflag=int(attribute), extra=component_idx)

    def type_tag(self, value: str, target: int, attribute: bool = False) -> int:
        return self.add(f.TYPE_TAG, value, target, kflag=int(attribute))

    def build(self) -> Btf:
        return Btf(self.types, self.strings, self.base, self.byteorder)
