"""The BTF string section.

Names are kept as `str` decoded as latin-1: one character per byte, so the round trip is
lossless and `str` comparison is the bytewise order the canonical order is defined by.
Offsets of split BTF continue after the base's section, so a table knows where it starts.
"""

from __future__ import annotations

PEEKS = 256  # StringTable.get's lookups before it indexes the section


class _ByOffset(dict):
    """offset -> string; offsets into the middle of a string are resolved on first use."""

    __slots__ = ("table",)

    def __missing__(self, offset: int) -> str:
        return self.table.get_uncached(offset)


class StringTable:
    """One string section: its raw bytes, offset lookup, and appending for builders."""

    __slots__ = ("start", "_data", "_by_offset", "_offset_of", "_size", "_peeked")

    def __init__(self, data: bytes = b"\0", start: int = 0):
        self.start = start
        self._data = bytes(data)
        self._size = len(self._data)
        self._by_offset: _ByOffset | None = None  # made after PEEKS lookups (get)
        self._peeked = 0
        self._offset_of: dict[str, int] | None = None

    def _map(self) -> _ByOffset:
        by_offset = self._by_offset
        return by_offset if by_offset is not None else self._index()

    def _index(self) -> _ByOffset:
        """offset -> string for every whole string: `sort` with the compiled order never
        looks a name up in Python, and this was a quarter of its time."""
        text = self._data.decode("latin-1")
        by_offset = _ByOffset()
        by_offset.table = self
        pos = self.start
        for piece in text.split("\0")[:-1] if text.endswith("\0") else text.split("\0"):
            by_offset[pos] = piece
            pos += len(piece) + 1
        self._by_offset = by_offset
        return by_offset

    @property
    def size(self) -> int:
        return self._size

    @property
    def end(self) -> int:
        """First offset past this section (where a split BTF's strings would start)."""
        return self.start + self._size

    def data(self) -> bytes:
        return self._data

    def get(self, offset: int) -> str:
        """The string at `offset`, which may point into the middle of a stored string.
        The first PEEKS lookups read the bytes (`peek`); the section is indexed once there
        are more: a kernel module's run looks up a hundred or so of its thousands of
        names, and indexing them all was 1 ms of veth.ko's."""
        by_offset = self._by_offset
        if by_offset is None:
            if self._peeked < PEEKS:
                self._peeked += 1
                return self.peek(offset)
            by_offset = self._index()
        return by_offset[offset]

    @property
    def lookup(self):
        """`get` as a C-level bound method, for hot loops."""
        return self._map().__getitem__

    def peek(self, offset: int) -> str:
        """`get` without indexing the whole section first: for a few names of a large one
        (indexing a vmlinux's 2 MB of names was 0.05 s of a module's encode)."""
        if self._by_offset is not None:
            return self._by_offset[offset]
        rel = offset - self.start
        if not 0 <= rel < self._size:
            raise KeyError(offset)
        end = self._data.find(b"\0", rel)
        return self._data[rel:end if end >= 0 else self._size].decode("latin-1")

    def get_uncached(self, offset: int) -> str:
        rel = offset - self.start
        if not 0 <= rel < self._size:
            raise KeyError(offset)
        end = self._data.find(b"\0", rel)
        if end < 0:
            end = self._size
        name = self._data[rel:end].decode("latin-1")
        self._map()[offset] = name
        return name

    def contains(self, offset: int) -> bool:
        return self.start <= offset < self.end

    def offset_of(self, name: str) -> int | None:
        """The lowest offset at which `name` starts as a whole string, or None.

        Built from the section itself, not from the offsets looked up so far: those may
        point into the middle of a string, and a suffix found that way must not decide
        where a name goes (the canonical bytes would depend on what was read before)."""
        if self._offset_of is None:
            offset_of: dict[str, int] = {}
            text = self._data.decode("latin-1")
            pos = self.start
            for piece in text.split("\0")[:-1] if text.endswith("\0") else text.split("\0"):
                offset_of.setdefault(piece, pos)
                pos += len(piece) + 1
            self._offset_of = offset_of
        return self._offset_of.get(name)

    def add(self, name: str) -> int:
        """Offset of `name`, appending it if the table does not hold it yet."""
        off = self.offset_of(name) if self._offset_of is not None else self._search(name)
        if off is None:
            off = self.start + self._size
            self._data += name.encode("latin-1") + b"\0"
            self._size = len(self._data)
            # The indexes, once made, learn the name; else they are made from the data.
            if self._by_offset is not None:
                self._by_offset[off] = name
            if self._offset_of is not None:
                self._offset_of[name] = off
        return off

    def _search(self, name: str) -> int | None:
        """`offset_of(name)` by one search of the bytes, without making the name index:
        the keyed merge adds a DATASEC name or two to a kernel's 1.7 MB table, whose
        index took 0.18 s."""
        if not name or "\0" in name:
            return self.offset_of(name)
        raw = name.encode("latin-1")
        data = self._data if self._data.endswith(b"\0") else self._data + b"\0"
        if data.startswith(raw + b"\0"):
            return self.start
        at = data.find(b"\0" + raw + b"\0")
        return None if at < 0 else self.start + at + 1

    @classmethod
    def build(cls, names: list[str], start: int = 0) -> tuple[StringTable, dict[str, int]]:
        """A table holding the empty string then `names` in the given order, deduplicated."""
        offsets: dict[str, int] = {"": 0}  # split BTF shares the base's empty string
        chunks = [b"\0"] if start == 0 else []
        pos = start + (1 if start == 0 else 0)
        for name in names:
            if name not in offsets:
                offsets[name] = pos
                raw = name.encode("latin-1")
                chunks.append(raw + b"\0")
                pos += len(raw) + 1
        table = cls(b"".join(chunks), start)
        table._offset_of = dict(offsets)
        return table, offsets
