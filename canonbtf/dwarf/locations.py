"""Where a function's parameters really are: pahole 1.31's "unexpected register" rule.

A FUNC promises that argument i is in the i-th argument register of the calling
convention; fentry and fexit programs read it there. An optimizer may move a parameter
(gcc's .isra and .part clones, or a function whose caller and callee it sees both), and
then the DWARF prototype describes registers the code does not use. pahole 1.31 reads
each of the first register parameters' DW_AT_location (dwarf_loader.c, parameter__reg):

* its first location description is exactly one DW_OP_regN (a trailing
  DW_OP_stack_value aside): the parameter is in register N;
* any description that is exactly DW_OP_entry_value(DW_OP_regE) with E the expected
  register: the parameter arrived where expected (whatever it became after);
* N differing from the expected register, and no such entry value: an unexpected
  register. Anything else (no register at all: optimized away or on the stack) is
  not held against the function.

A location is summed up while reading as one int (`summary`): the first description's
register + 1 (0: none) in the low 6 bits, and a bit per register E named by an entry
value above them; both DIE readers and the compiled core make the same int. Location
lists are read from .debug_loclists (DWARF 5: DW_FORM_sec_offset, or DW_FORM_loclistx
through the unit's DW_AT_loclists_base) or .debug_loc (DWARF 2-4); a list that runs out
of its section or holds an entry kind not known here ends where it stops making sense,
the same way on both cores.
"""

from __future__ import annotations

import struct

from ..spec.dwarf_numbers import (
    OP_entry_value,
    OP_GNU_entry_value,
    OP_reg0,
    OP_reg31,
    OP_stack_value,
)

# DW_LLE_* (DWARF 5 .debug_loclists).
LLE_end_of_list = 0
LLE_base_addressx = 1
LLE_startx_endx = 2
LLE_startx_length = 3
LLE_offset_pair = 4
LLE_default_location = 5
LLE_base_address = 6
LLE_start_end = 7
LLE_start_length = 8
REGISTER_BITS = 6  # the first register + 1 fits below the entry-value bits


class LocationList(int):
    """A parameter's DW_AT_location that is a location list: its section offset."""

    __slots__ = ()


class LocationListIndex(int):
    """A DW_FORM_loclistx value: an index into the unit's location list offsets."""

    __slots__ = ()


def read_uleb(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned LEB128 at `pos`: (value, position after it); IndexError past the end."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def expression_summary(expr: bytes, first: bool) -> int:
    """The summary bits one location description gives: its register (when it comes
    first) and its entry-value register."""
    end = len(expr)
    if end > 1 and expr[end - 1] == OP_stack_value:
        end -= 1
    if end == 1 and first and OP_reg0 <= expr[0] <= OP_reg31:
        return expr[0] - OP_reg0 + 1
    if end == 3 and expr[0] in (OP_entry_value, OP_GNU_entry_value) and expr[1] == 1 \
            and OP_reg0 <= expr[2] <= OP_reg31:
        return 1 << (REGISTER_BITS + expr[2] - OP_reg0)
    return 0


def unexpected_register(summary: int, expected: int) -> bool:
    """Whether a parameter with this location summary sits in another register than
    `expected` (its DWARF number) without saying it arrived there."""
    first = summary & ((1 << REGISTER_BITS) - 1)
    if not first or first - 1 == expected:
        return False
    return not summary >> (REGISTER_BITS + expected) & 1


class UnitLocations:
    """Reads the location lists of one unit's parameters into summaries."""

    def __init__(self, sections: dict[str, bytes], version: int, address_size: int,
                 offset_size: int, little_endian: bool, loclists_base: int | None):
        self.version = version
        self.address_size = address_size
        self.offset_size = offset_size
        self.order = "<" if little_endian else ">"
        self.loclists_base = loclists_base
        self.lists = sections.get(".debug_loclists" if version >= 5 else ".debug_loc", b"")

    def summary(self, value) -> int:
        """The summary of a parameter's location as a reader keeps it: an int already
        summed up (an expression), a LocationList or a LocationListIndex."""
        if value.__class__ is LocationListIndex:
            offset = self._indexed(value)
            return 0 if offset is None else self._list(offset)
        if value.__class__ is LocationList:
            return self._list(value)
        return value

    def _indexed(self, index: int) -> int | None:
        base = self.loclists_base
        if base is None or self.version < 5:
            return None
        pos = base + index * self.offset_size
        if pos + self.offset_size > len(self.lists):
            return None
        code = self.order + ("I" if self.offset_size == 4 else "Q")
        return base + struct.unpack_from(code, self.lists, pos)[0]

    def _list(self, offset: int) -> int:
        if self.address_size not in (4, 8):
            return 0
        if self.version >= 5:
            return self._loclists(offset)
        return self._loc(offset)

    def _loclists(self, pos: int) -> int:
        data = self.lists
        size = self.address_size
        out = 0
        first = True
        try:
            while pos < len(data):
                kind = data[pos]
                pos += 1
                if kind == LLE_end_of_list:
                    break
                if kind == LLE_base_addressx:
                    _, pos = read_uleb(data, pos)
                    continue
                if kind == LLE_base_address:
                    pos += size
                    continue
                if kind in (LLE_startx_endx, LLE_startx_length, LLE_offset_pair):
                    _, pos = read_uleb(data, pos)
                    _, pos = read_uleb(data, pos)
                elif kind == LLE_start_end:
                    pos += 2 * size
                elif kind == LLE_start_length:
                    pos += size
                    _, pos = read_uleb(data, pos)
                elif kind != LLE_default_location:
                    break
                length, pos = read_uleb(data, pos)
                if pos + length > len(data):
                    break
                out |= expression_summary(data[pos:pos + length], first)
                first = False
                pos += length
        except IndexError:
            pass  # a LEB128 running out of the section: the list ends there
        return out

    def _loc(self, pos: int) -> int:
        data = self.lists
        size = self.address_size
        code = self.order + ("I" if size == 4 else "Q")
        largest = (1 << (8 * size)) - 1
        out = 0
        first = True
        while pos + 2 * size <= len(data):
            begin, end = struct.unpack_from(code * 2, data, pos)
            pos += 2 * size
            if begin == 0 and end == 0:
                break
            if begin == largest:
                continue  # a base address selection
            if pos + 2 > len(data):
                break
            (length,) = struct.unpack_from(self.order + "H", data, pos)
            pos += 2
            if pos + length > len(data):
                break
            out |= expression_summary(data[pos:pos + length], first)
            first = False
            pos += length
        return out


def unit_locations(dwarf, unit, loclists_base: int | None) -> UnitLocations:
    """What sums up the location lists of `unit` (sections.Unit) of `dwarf`
    (sections.DwarfFile)."""
    return UnitLocations(dwarf.sections, unit.version, unit.address_size, unit.offset_size,
                         dwarf.little_endian, loclists_base)
