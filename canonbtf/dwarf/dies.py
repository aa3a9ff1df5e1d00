"""The fast DIE reader: one unit's type DIEs, decoding only the attributes BTF needs.

pyelftools builds a DIE object with every attribute for every DIE: about 60 k DIEs/s,
minutes for a kernel's 18 M DIEs, most of which (subprogram bodies, locations, call sites)
BTF never reads. This reader compiles, once per distinct abbreviation, a Python function
that reads a DIE of that shape: fixed-size attributes in one `struct` call, wanted values
converted on the spot, everything else stepped over. DIEs that are not types (or children
of a type) are skipped whole: by a constant when every form has a fixed size.

Besides types it keeps function definitions (their parameters and annotations), the
unit's own variables (a variable inside a function is stepped over, with no attributes
read) and clang's DW_TAG_LLVM_annotation children, for FUNC, VAR, DECL_TAG and TYPE_TAG.
A function declaration is skipped by its abbreviation alone (DW_AT_declaration with
DW_FORM_flag_present), so the declarations every unit repeats cost what any skip costs.

The result is the same `UnitTypes` the pyelftools reference reader (`reference.py`) makes;
tests hold the two to agree DIE for DIE.
"""

from __future__ import annotations

import functools
import struct
from functools import partial

from ..spec import dwarf_numbers as c
from .forms import (
    ADDRX_FORMS,
    BLOCK,
    BLOCK_FORMS,
    BLOCK_LENGTH_SIZES,
    CONST_FORMS,
    CU_REF_FORMS,
    FORMS,
    OFFSET,
    STRING_FORMS,
    STRX_FORMS,
    ULEB,
    forms_laid_out,
)
from .locations import LocationList, LocationListIndex, expression_summary, unit_locations
from .sections import DwarfFile, Unit
from .unit_types import DwarfFormatError, TypeDie, UnitTypes

# How the generated readers read each form, from the one table of forms (forms.py):
# fixed-size forms by struct code, or by byte count for 3-byte forms and the sizes with
# no struct code (16, and 0 for forms whose value is in the abbreviation).
_STRUCT_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}
_FIXED = {form: _STRUCT_CODES.get(spec.layout, spec.layout) for form, spec in FORMS.items()
          if spec.layout.__class__ is int}
_OFFSET_FORMS = forms_laid_out(OFFSET)
_ULEB_FORMS = forms_laid_out(ULEB)
_ULEB_BLOCK_FORMS = forms_laid_out(BLOCK)
_BLOCK_FORMS = {form: _STRUCT_CODES[BLOCK_LENGTH_SIZES[spec.layout]]
                for form, spec in FORMS.items() if spec.layout in BLOCK_LENGTH_SIZES}
_UNREADABLE_REF_FORMS = {
    c.FORM_ref_sig8: "type unit signatures (DW_FORM_ref_sig8, -fdebug-types-section)",
    c.FORM_GNU_ref_alt: "references into a dwz supplementary file (DW_FORM_GNU_ref_alt)",
    c.FORM_ref_sup4: "references into a supplementary file (DW_FORM_ref_sup4)",
    c.FORM_ref_sup8: "references into a supplementary file (DW_FORM_ref_sup8)",
}
_UNREADABLE_STRING_FORMS = {
    c.FORM_GNU_strp_alt: "strings in a dwz supplementary file (DW_FORM_GNU_strp_alt)",
    c.FORM_strp_sup: "strings in a supplementary file (DW_FORM_strp_sup)",
}


def read_uleb(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned LEB128 at pos: (value, position after it)."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    return _uleb_tail(buf, pos + 1, byte)


def read_sleb(buf: bytes, pos: int) -> tuple[int, int]:
    """A signed LEB128 at pos: (value, position after it)."""
    byte = buf[pos]
    if byte < 0x80:  # most enumerator values (DW_FORM_sdata)
        return (byte - 0x80 if byte & 0x40 else byte), pos + 1
    value, end = _uleb_tail(buf, pos + 1, byte)
    if buf[end - 1] & 0x40:  # the sign bit of the last byte
        value -= 1 << (7 * (end - pos))
    return value, end


def _uleb_tail(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """Rest of a ULEB128 whose first byte (>= 0x80) was already read; pos is past it."""
    value = first & 0x7F
    shift = 7
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def location_value(expr: bytes) -> int | None:
    """A member location expression's constant byte offset, if it is one."""
    if expr and expr[0] in (c.OP_plus_uconst, c.OP_constu):
        value, end = read_uleb(expr, 1)
        if end == len(expr):
            return value
    return None


class AddressIndex(int):
    """An index into the unit's .debug_addr entries, until `resolve_addresses` reads it."""

    __slots__ = ()


def address_expression(expr: bytes, address_size: int, little_endian: bool
                       ) -> int | AddressIndex | None:
    """The address of a location that is exactly one DW_OP_addr or DW_OP_addrx."""
    if not expr:
        return None
    op = expr[0]
    if op == c.OP_addr and len(expr) == 1 + address_size:
        return int.from_bytes(expr[1:], "little" if little_endian else "big")
    if op == c.OP_addrx or op == c.OP_GNU_addr_index:
        index, end = read_uleb(expr, 1)
        if end == len(expr):
            return AddressIndex(index)
    return None


def resolve_addresses(types: dict, addr_base: int | None, debug_addr: bytes,
                      address_size: int, little_endian: bool) -> None:
    """Replace the AddressIndex values of functions and variables by addresses."""
    order = "little" if little_endian else "big"
    for die in types.values():
        if die.tag != c.TAG_subprogram and die.tag != c.TAG_variable:
            continue
        for attr, value in die.attrs.items():
            if value.__class__ is AddressIndex:
                if addr_base is None:
                    raise DwarfFormatError("an address index without DW_AT_addr_base")
                pos = addr_base + value * address_size
                if pos + address_size > len(debug_addr):
                    raise DwarfFormatError(f"address index {int(value)} is outside "
                                           f".debug_addr")
                die.attrs[attr] = int.from_bytes(debug_addr[pos:pos + address_size], order)


def parse_abbrev(data: bytes, pos: int) -> tuple[int, bool, tuple, int]:
    """The abbreviation after its code at pos: (tag, has_children, specs, position after
    its terminating (0, 0)); specs are ((attr, form, implicit const), ...).

    Hand-written because pyelftools' AbbrevTable costs 5.5 ms per kernel unit (1.1 s for
    200 of the 6.1 kernel's 2,172 tables, measured), 12 s of a full encode; this loop
    reads the same table in well under a millisecond.
    """
    implicit_const = c.FORM_implicit_const
    tag, pos = read_uleb(data, pos)
    has_children = data[pos] != 0
    pos += 1
    specs = []
    while True:
        # Attribute and form numbers below 128 are one byte: read in line, which
        # took a kernel unit's table from 0.55 to 0.33 ms (543 of the 6.1 kernel's).
        attr = data[pos]
        if attr < 0x80:
            pos += 1
        else:
            attr, pos = read_uleb(data, pos)
        form = data[pos]
        if form < 0x80:
            pos += 1
        else:
            form, pos = read_uleb(data, pos)
        if attr == 0 and form == 0:
            return tag, has_children, tuple(specs), pos
        implicit = None
        if form == implicit_const:
            implicit, pos = read_sleb(data, pos)
        specs.append((attr, form, implicit))


def unit_attribute(dwarf: DwarfFile, unit: Unit, attr: int) -> int | None:
    """An integer attribute of the unit's own DIE (DW_AT_language, say), or None.

    Reads that one DIE with this module's abbreviation parser: pyelftools parses the
    whole abbreviation table of every unit to get there (39 s for the 6.1 kernel's
    languages; this takes well under a second)."""
    data, info = dwarf.abbrev, dwarf.info
    try:
        code, pos = read_uleb(info, unit.die_offset)
        table = unit.abbrev_offset
        while True:
            number, table = read_uleb(data, table)
            if number == 0:
                return None
            _, _, specs, table = parse_abbrev(data, table)
            if number == code:
                break
        gen = _Codegen(">", unit.offset_size, unit.address_size, unit.version)
        order = "little" if dwarf.little_endian else "big"
        for spec_attr, form, implicit in specs:
            fixed = gen.fixed_code(form)
            if form == c.FORM_implicit_const:
                value = implicit
            elif fixed is not None:
                size = _fixed_size(fixed)
                value = int.from_bytes(info[pos:pos + size], order)
                pos += size
            elif form in _ULEB_FORMS:
                value, pos = read_uleb(info, pos)
            elif form == c.FORM_sdata:
                value, pos = read_sleb(info, pos)
            elif form == c.FORM_string:
                value, pos = None, info.index(0, pos) + 1
            elif form in _ULEB_BLOCK_FORMS:
                length, pos = read_uleb(info, pos)
                value, pos = None, pos + length
            elif form in _BLOCK_FORMS:
                size = struct.calcsize(_BLOCK_FORMS[form])
                length = int.from_bytes(info[pos:pos + size], order)
                value, pos = None, pos + size + length
            else:
                raise DwarfFormatError(f"unknown attribute form {form:#x}")
            if spec_attr == attr:
                return value if form in CONST_FORMS else None
        return None
    except (IndexError, ValueError) as e:
        raise DwarfFormatError(f"unit at .debug_info offset {unit.offset:#x}: truncated or "
                               f"corrupt unit DIE ({e})") from None


class _Codegen:
    """Python source for reading one abbreviation's DIE; see `DieReader._compile`."""

    def __init__(self, byteorder: str, offset_size: int, address_size: int, version: int):
        self.byteorder = byteorder
        self.offset_code = "I" if offset_size == 4 else "Q"
        self.address_code = {1: "B", 2: "H", 4: "I", 8: "Q"}.get(address_size)
        self.version = version
        self.lines: list[str] = []
        self.constants: dict[str, object] = {}
        self.run: list[tuple[str, str | None]] = []  # pending fixed-size (code, variable)
        self.run_size = 0
        self.tmp = 0

    def fixed_code(self, form: int) -> str | int | None:
        """struct code or byte count of a fixed-size form (None: variable size)."""
        if form in _OFFSET_FORMS:
            return self.offset_code
        if form == c.FORM_ref_addr:
            return self.offset_code if self.version >= 3 else self.address_code
        if form == c.FORM_addr:
            if self.address_code is None:
                raise DwarfFormatError("address size not supported by DW_FORM_addr")
            return self.address_code
        return _FIXED.get(form)

    def var(self) -> str:
        self.tmp += 1
        return f"v{self.tmp}"

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def add_fixed(self, code: str | int, wanted: bool) -> str | None:
        """Queue a fixed-size field; returns the variable that will hold it if wanted."""
        if isinstance(code, int):
            if wanted and code == 3:
                self.flush()
                name = self.var()
                self.emit(f"{name} = int.from_bytes(buf[pos:pos + 3], {self._order()!r})")
                self.emit("pos += 3")
                return name
            if code:
                self.run.append((f"{code}x", None))
                self.run_size += code
            return None
        size = struct.calcsize("<" + code)
        if wanted:
            name = self.var()
            self.run.append((code, name))
        else:
            name = None
            self.run.append((f"{size}x", None))
        self.run_size += size
        return name

    def _order(self) -> str:
        return "little" if self.byteorder == "<" else "big"

    def flush(self) -> None:
        """Emit the pending fixed-size fields as one struct read (or a plain skip)."""
        if not self.run:
            return
        names = [name for _, name in self.run if name is not None]
        if names:
            fmt = self.byteorder + "".join(code for code, _ in self.run)
            key = f"S{len(self.constants)}"
            self.constants[key] = _unpacker(fmt)
            if len(names) == 1:
                self.emit(f"{names[0]}, = {key}(buf, pos)")
            else:
                self.emit(f"{', '.join(names)} = {key}(buf, pos)")
        self.emit(f"pos += {self.run_size}")
        self.run = []
        self.run_size = 0

    def uleb(self, wanted: bool) -> str | None:
        self.flush()
        name = self.var() if wanted else "_"
        self.emit("b = buf[pos]")
        self.emit("pos += 1")
        self.emit("if b < 0x80:")
        self.emit(f"    {name} = b")
        self.emit("else:")
        self.emit(f"    {name}, pos = uleb_tail(buf, pos, b)")
        return name if wanted else None

    def variable(self, form: int, wanted: bool) -> tuple[str, str] | str | None:
        """Read or step over a variable-size form; returns what the value is made of."""
        if form in _ULEB_FORMS:
            return self.uleb(wanted)
        self.flush()
        if form == c.FORM_sdata:
            if not wanted:
                self.emit("while buf[pos] >= 0x80:")
                self.emit("    pos += 1")
                self.emit("pos += 1")
                return None
            name = self.var()
            self.emit(f"{name}, pos = sleb(buf, pos)")
            return name
        if form == c.FORM_string:
            if not wanted:
                self.emit("pos = buf.index(0, pos) + 1")
                return None
            name = self.var()
            self.emit("end = buf.index(0, pos)")
            self.emit(f"{name} = buf[pos:end].decode('latin-1')")
            self.emit("pos = end + 1")
            return name
        if form in _ULEB_BLOCK_FORMS:
            length = self.uleb(True)
        elif form in _BLOCK_FORMS:
            code = _BLOCK_FORMS[form]
            length = self.var()
            size = struct.calcsize(code)
            if size == 1:
                self.emit(f"{length} = buf[pos]")
            else:
                key = f"S{len(self.constants)}"
                self.constants[key] = _unpacker(self.byteorder + code)
                self.emit(f"{length}, = {key}(buf, pos)")
            self.emit(f"pos += {size}")
        elif form == c.FORM_indirect:
            raise DwarfFormatError("DW_FORM_indirect is not supported")
        else:
            raise DwarfFormatError(f"unknown attribute form {form:#x}")
        if not wanted:
            self.emit(f"pos += {length}")
            return None
        name = self.var()
        self.emit(f"{name} = buf[pos:pos + {length}]")
        self.emit(f"pos += {length}")
        return ("block", name)


@functools.cache
def _unpacker(fmt: str):
    return struct.Struct(fmt).unpack_from


class _StringCache(dict):
    """Names by section offset, decoded on first use.

    A dict subclass so that generated readers look a name up with one subscript, the
    miss going to `__missing__`: a method call per name instead cost 2.6 % more
    instructions reading 1/80 of the 6.1 kernel's units (valgrind, 1,351 M -> 1,316 M).
    """

    def __init__(self, data: bytes, section: str):
        super().__init__()
        self.data = data
        self.section = section

    def __missing__(self, offset: int) -> str:
        data = self.data
        end = data.find(b"\0", offset)
        if end < 0 or offset >= len(data):
            raise DwarfFormatError(f"string offset {offset:#x} is outside {self.section}")
        name = data[offset:end].decode("latin-1")
        self[offset] = name
        return name


class DieReader:
    """Reads the type DIEs of units of one `DwarfFile`; one per process."""

    def __init__(self, dwarf: DwarfFile):
        self.dwarf = dwarf
        self.byteorder = "<" if dwarf.little_endian else ">"
        self._strings = _StringCache(dwarf.str, ".debug_str")
        self._line_strings = _StringCache(dwarf.line_str, ".debug_line_str")
        # Compiled readers by (tag-kind, attribute specs, offset size, address size,
        # version, wanted): abbreviations repeat across the units of one compiler.
        self._compiled: dict[tuple, tuple] = {}
        self._abbrevs: dict[int, list] = {}
        self._plan_cache: dict[tuple, tuple] = {}
        self._plan_by_bytes: dict[tuple, dict[bytes, tuple]] = {}
        self._code: dict[str, object] = {}  # compiled reader source by its text
        self.skipped_tags: dict[int, int] = {}

    # -- strings ---------------------------------------------------------------------

    def indexed_string(self, base: int | None, index: int, offset_size: int) -> str:
        if base is None:
            raise DwarfFormatError("DW_FORM_strx without DW_AT_str_offsets_base")
        pos = base + index * offset_size
        data = self.dwarf.str_offsets
        if pos + offset_size > len(data):
            raise DwarfFormatError(f"string index {index} is outside .debug_str_offsets")
        code = self.byteorder + ("I" if offset_size == 4 else "Q")
        return self._strings[struct.unpack_from(code, data, pos)[0]]

    # -- compiling abbreviations ------------------------------------------------------

    def _plans(self, unit: Unit) -> tuple[list, list]:
        """Per abbreviation code: (action, tag, has_children, role, reader, other reader)
        for this unit, codes the table does not define get `_UNDEFINED`; and per byte, the
        appending reader of a leaf child whose code is that one byte, else None."""
        key = (unit.abbrev_offset, unit.offset_size, unit.address_size, unit.version)
        plans = self._abbrevs.get(key)
        if plans is None:
            by_code = {}
            cache = self._plan_cache
            sizes = (unit.offset_size, unit.address_size, unit.version)
            by_bytes = self._plan_by_bytes.setdefault(sizes, {})
            data = self.dwarf.abbrev
            pos = unit.abbrev_offset
            size = len(data)
            while True:
                if pos >= size:
                    raise DwarfFormatError(f"abbreviation table at {unit.abbrev_offset:#x} "
                                           f"runs past the end of .debug_abbrev")
                code = data[pos]
                if code < 0x80:
                    pos += 1
                else:
                    code, pos = read_uleb(data, pos)
                if code == 0:
                    break
                # Units of one compiler repeat abbreviations under other codes: the plan
                # is looked up by the abbreviation's bytes up to the first (0, 0), which
                # end it unless an implicit constant holds zeros (then it is parsed each
                # time). Instead of parsing each one and looking it up by its parsed
                # shape, this took the plans of all the 6.1 kernel's units from 0.90 to
                # 0.35 s (from 1.45 to 0.63 s when the readers are made too).
                end = data.find(b"\0\0", pos)
                if end < 0:
                    raise DwarfFormatError(f"abbreviation table at {unit.abbrev_offset:#x} "
                                           f"runs past the end of .debug_abbrev")
                raw = data[pos:end]
                plan = by_bytes.get(raw)
                if plan is not None:
                    pos = end + 2
                else:
                    tag, has_children, specs, pos = parse_abbrev(data, pos)
                    shape = (tag, has_children, specs)
                    plan = cache.get((shape, sizes))
                    if plan is None:
                        plan = self._compile(*shape, unit)
                        cache[(shape, sizes)] = plan
                    if pos == end + 2:
                        by_bytes[raw] = plan
                by_code[code] = plan
            plans = [_UNDEFINED] * (max(by_code, default=0) + 1)
            for code, plan in by_code.items():
                plans[code] = plan
            leaves = [None] * 256
            for code, plan in enumerate(plans[:0x80]):
                if plan[0] == ACT_CHILD:
                    leaves[code] = plan[4]
            if len(self._abbrevs) > 64:
                self._abbrevs.clear()
            plans = self._abbrevs[key] = (plans, leaves)
        return plans

    def _compile(self, tag: int, has_children: bool, specs: tuple, unit: Unit) -> tuple:
        """(action, tag, has_children, role, reader, other reader): the other reader
        reads a unit-level variable, or steps over a leaf child that has no parent."""
        if tag in c.TYPE_TAGS:
            role = ROLE_TYPE
        elif tag in c.CHILD_TAGS:
            role = ROLE_CHILD
        elif tag in c.UNIT_TAGS:
            role = ROLE_UNIT
        elif tag == c.TAG_subprogram and not declares(specs):
            role = ROLE_TYPE
        elif tag == c.TAG_variable:
            role = ROLE_VARIABLE
        else:
            role = ROLE_SKIP
        if role == ROLE_VARIABLE:
            # Only the unit's own variables can be in BTF; a function's locals are
            # stepped over as if skipped.
            return (ACT_GENERAL, tag, has_children, role,
                    self._reader(ROLE_SKIP, 0, specs, unit), self._reader(role, tag, specs, unit))
        if role == ROLE_CHILD and not has_children:
            # A member-like leaf: a reader that appends (tag, attributes) to the parent's
            # children itself, and one that steps over it where it has no parent.
            return (ACT_CHILD, tag, has_children, role,
                    self._reader(role, tag, specs, unit, append_tag=tag),
                    self._reader(ROLE_SKIP, 0, specs, unit))
        reader = self._reader(role, tag if role != ROLE_SKIP else 0, specs, unit,
                              has_children=has_children)
        action = ACT_GENERAL
        fixed = reader.__class__ is int
        if role == ROLE_TYPE and not fixed:
            action = ACT_TYPE
        elif role == ROLE_SKIP and not has_children:
            action = ACT_SKIP_FIXED if fixed else ACT_SKIP
        return (action, tag, has_children, role, reader, None)

    def _reader(self, role: int, tag: int, specs: tuple, unit: Unit,
                append_tag: int | None = None, has_children: bool = False):
        wanted = c.WANTED_ATTRS.get(tag, {}) if role != ROLE_SKIP else {}
        # A child's values in the order of its fields, the last (its annotations) a new
        # list when the DIE has children; other DIEs' attributes in a dict.
        child = None
        if role == ROLE_CHILD:
            child = (c.CHILD_FIELDS[tag], "[]" if has_children else "None")
        # By what is wanted rather than by tag: every type tag shares one reader per shape.
        key = (role, tuple(wanted.items()), specs, unit.offset_size, unit.address_size,
               unit.version, append_tag, child)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._generate(specs, wanted, unit, append_tag, child)
            self._compiled[key] = compiled
        return compiled

    def _generate(self, specs: tuple, wanted: dict[int, str], unit: Unit,
                  append_tag: int | None = None, child: tuple | None = None):
        """A reader for DIEs of this shape: an int (fixed size to skip) or a function
        (buf, pos, unit offset, str_offsets base) -> (values or None, new pos), values a
        dict, or for a child (`child`: its fields, and the expression of its annotations
        field) the tuple of dwarf_numbers.CHILD_FIELDS. With `append_tag`: (buf, pos, unit
        offset, str_offsets base, append) -> new pos, having called
        append((append_tag, values))."""
        gen = _Codegen(self.byteorder, unit.offset_size, unit.address_size, unit.version)
        values: list[tuple[int, str, int, object]] = []  # (attr, kind, form, made of)
        for attr, form, implicit in specs:
            kind = wanted.get(attr)
            code = gen.fixed_code(form)
            if form == c.FORM_implicit_const:
                if kind is not None:
                    values.append((attr, kind, form, implicit))
                continue
            if form == c.FORM_flag_present:
                if kind is not None:
                    values.append((attr, kind, form, True))
                continue
            if kind is not None and not _readable(kind, form):
                kind = None
            if code is not None:
                var = gen.add_fixed(code, kind is not None and code != 16)
                if kind is not None:
                    values.append((attr, kind, form, var))
            else:
                made_of = gen.variable(form, kind is not None)
                if kind is not None:
                    values.append((attr, kind, form, made_of))
        gen.flush()
        if (child is None and not values
                and all(gen.fixed_code(f) is not None for _, f, _ in specs)):
            return sum(_fixed_size(gen.fixed_code(f)) for _, f, _ in specs)
        body = list(gen.lines)
        exprs = {}
        for attr, kind, form, made_of in values:
            expr = _value_expr(kind, form, made_of, unit.offset_size)
            if expr is not None:
                exprs[attr] = expr
        if child is not None:
            # A tuple, not a dict: built and freed for most of a kernel's DIEs (measured
            # in dwarf_numbers.CHILD_FIELDS).
            fields, annotations = child
            result = _child_expr(fields, exprs, annotations)
        elif wanted:
            result = "{" + ", ".join(f"{attr}: {expr}" for attr, expr in exprs.items()) + "}"
        else:
            result = "None"
        if append_tag is None:
            source = ["def read(buf, pos, cu, sob):", *body, f"    return {result}, pos"]
        else:
            # Appending in the reader instead of returning a pair to the walk (with the
            # walk's loop over leaf children and ACT_TYPE): reading 1/40 of the 6.1
            # kernel's units took 3,100 M -> 2,888 M instructions (valgrind).
            source = ["def read(buf, pos, cu, sob, append):", *body,
                      f"    append(({append_tag}, {result}))", "    return pos"]
        namespace = dict(gen.constants)
        text = "\n".join(source)
        # The 6.1 kernel's units need 7,466 readers but only 469 distinct texts (the
        # struct formats are constants): compiling each text once took making the
        # plans of all its units (once per worker) from 2.6 to 1.45 s.
        code = self._code.get(text)
        if code is None:
            code = self._code[text] = compile(text, "<dwarf reader>", "exec")
        namespace.update(uleb_tail=_uleb_tail, sleb=read_sleb, location=location_value,
                         strings=self._strings, line_strings=self._line_strings,
                         indexed=self.indexed_string, AddressIndex=AddressIndex,
                         param_expr=expression_summary, LocationList=LocationList,
                         LocationListIndex=LocationListIndex,
                         addr_expr=partial(address_expression, address_size=unit.address_size,
                                           little_endian=self.dwarf.little_endian))
        exec(code, namespace)  # noqa: S102
        return namespace["read"]

    # -- walking ----------------------------------------------------------------------

    def read_unit(self, unit: Unit) -> UnitTypes:
        """Every type DIE of `unit` (wherever it is nested) with its member-like children."""
        try:
            return self._walk(unit)
        except DwarfFormatError as e:
            raise DwarfFormatError(f"unit at .debug_info offset {unit.offset:#x}: {e}") from None
        except (IndexError, ValueError, struct.error) as e:
            raise DwarfFormatError(f"unit at .debug_info offset {unit.offset:#x}: truncated "
                                   f"or corrupt DIE data ({e})") from None

    def _walk(self, unit: Unit) -> UnitTypes:
        """The unit's DIEs in one loop, its state (position, parent, the parent stack,
        depth) in locals: the pure encoder's hottest function, kept whole over 80 lines.
        Moving its general branch (roles, DIEs with children) into a method of its own
        took reading every 20th unit of the 6.1 kernel from 0.565 to 0.623 s (+10 %,
        pure, best of 6)."""
        # Leaf DIEs (members, enumerators, parameters; skipped leaves) take the first
        # branches with one action test instead of testing role, children and reader
        # kind: 3.3 % fewer instructions reading 1/80 of the 6.1 kernel's units
        # (valgrind, 1,397 M -> 1,351 M; the readers themselves are the rest).
        plans, leaves = self._plans(unit)
        buf = self.dwarf.info
        pos = unit.die_offset
        end = unit.end
        cu = unit.offset
        sob = None
        aob = lob = None
        types: dict[int, TypeDie] = {}
        skipped = self.skipped_tags
        quiet = c.QUIET_CHILD_TAGS
        stack: list = []
        parent = None  # the TypeDie whose children are being read, if any
        append = None  # parent.children.append
        depth = 0
        while pos < end:
            die_offset = pos
            b = buf[pos]
            pos += 1
            if b < 0x80:
                code = b
            else:
                code, pos = _uleb_tail(buf, pos, b)
            if code == 0:
                if depth == 0:
                    continue  # padding after the unit DIE's children
                parent = stack.pop()
                append = None if parent is None else parent.children.append
                depth -= 1
                continue
            try:
                action, tag, has_children, role, reader, other_reader = plans[code]
            except IndexError:
                action = ACT_UNDEFINED
            if action == ACT_CHILD:
                if append is not None:
                    pos = reader(buf, pos, cu, sob, append)
                else:
                    if other_reader.__class__ is int:
                        pos += other_reader
                    else:
                        pos = other_reader(buf, pos, cu, sob)[1]
                    if tag not in quiet:
                        skipped[tag] = skipped.get(tag, 0) + 1
                continue
            if action == ACT_SKIP_FIXED:
                pos += reader
                continue
            if action == ACT_TYPE:
                attrs, pos = reader(buf, pos, cu, sob)
                die = TypeDie(tag, attrs)
                types[die_offset] = die
                if has_children:
                    stack.append(parent)
                    parent = die
                    append = die.children.append
                    depth += 1
                    # Its members, enumerators or parameters in a loop of their own, by
                    # a table of one-byte abbreviation codes (measured with the
                    # appending readers, see `_generate`).
                    leaf = leaves[buf[pos]] if pos < end else None
                    while leaf is not None:
                        pos = leaf(buf, pos + 1, cu, sob, append)
                        leaf = leaves[buf[pos]] if pos < end else None
                continue
            if action == ACT_SKIP:
                pos = reader(buf, pos, cu, sob)[1]
                continue
            if action == ACT_UNDEFINED:
                raise DwarfFormatError(f"DIE at {die_offset:#x} uses abbreviation code {code}, "
                                       f"which the unit's table does not define")
            if role == ROLE_SKIP or (role == ROLE_VARIABLE and depth != 1):
                if reader.__class__ is int:
                    pos += reader
                else:
                    pos = reader(buf, pos, cu, sob)[1]
                if has_children:
                    stack.append(parent)
                    parent = append = None
                    depth += 1
                continue
            if role == ROLE_VARIABLE:
                role = ROLE_TYPE
                reader = other_reader
            if reader.__class__ is int:
                attrs = {}
                pos += reader
            else:
                attrs, pos = reader(buf, pos, cu, sob)
            if role == ROLE_TYPE:
                die = TypeDie(tag, attrs)
                types[die_offset] = die
                if has_children:
                    stack.append(parent)
                    parent = die
                    append = die.children.append
                    depth += 1
                continue
            if role == ROLE_CHILD:
                if parent is not None:
                    append((tag, attrs))
                    if has_children:  # a member's or parameter's annotations
                        stack.append(parent)
                        parent = _Annotations(attrs[-1])
                        append = parent.children.append
                        depth += 1
                        continue
                elif tag not in quiet:
                    skipped[tag] = skipped.get(tag, 0) + 1
            elif role == ROLE_UNIT:
                sob = attrs.get(c.AT_str_offsets_base)
                aob = attrs.get(c.AT_addr_base)
                lob = attrs.get(c.AT_loclists_base)
            if has_children:
                stack.append(parent)
                parent = append = None
                depth += 1
        if aob is not None:
            resolve_addresses(types, aob, self.dwarf.sections.get(".debug_addr", b""),
                              unit.address_size, self.dwarf.little_endian)
        return UnitTypes(unit.offset, types, unit_locations(self.dwarf, unit, lob))


ROLE_SKIP = 0
ROLE_TYPE = 1  # types and function definitions
ROLE_CHILD = 2
ROLE_UNIT = 3
ROLE_VARIABLE = 4  # read at unit level only

# What the walk does with a DIE, decided once per abbreviation: the leaf cases first.
ACT_CHILD = 0  # a member-like leaf with attributes to read
ACT_SKIP_FIXED = 1  # a leaf to step over by a constant
ACT_SKIP = 2  # a leaf to step over by reading its variable-size forms
ACT_GENERAL = 3  # anything else: see the roles
ACT_UNDEFINED = 4
ACT_TYPE = 5  # a type or function definition with attributes to read
_UNDEFINED = (ACT_UNDEFINED, 0, False, ROLE_SKIP, 0, None)


class _Annotations:
    """The parent of a member's or parameter's own children: they go to its last field
    (dwarf_numbers.ANNOTATIONS)."""

    __slots__ = ("children",)

    def __init__(self, children: list):
        self.children = children


def _value_expr(kind: str, form: int, made_of, offset_size: int) -> str | None:
    """Python expression for an attribute's value, from the variables read."""
    if form == c.FORM_implicit_const or form == c.FORM_flag_present:
        return repr(made_of)
    if made_of is None:
        return None
    if kind == c.V_STRING or kind == c.V_TEXT:
        if form in _UNREADABLE_STRING_FORMS:
            raise DwarfFormatError(f"{_UNREADABLE_STRING_FORMS[form]} are not supported")
        if form == c.FORM_strp:
            return f"strings[{made_of}]"
        if form == c.FORM_line_strp:
            return f"line_strings[{made_of}]"
        if form in STRX_FORMS:
            return f"indexed(sob, {made_of}, {offset_size})"
        if form == c.FORM_string:
            return made_of
        raise DwarfFormatError(f"form {form:#x} is not a string form")
    if kind == c.V_REF:
        if form in _UNREADABLE_REF_FORMS:
            raise DwarfFormatError(f"{_UNREADABLE_REF_FORMS[form]} are not supported")
        if form in CU_REF_FORMS:
            return f"{made_of} + cu"
        if form == c.FORM_ref_addr:
            return made_of
        raise DwarfFormatError(f"form {form:#x} is not a reference form")
    if kind == c.V_FLAG:
        return f"bool({made_of})"
    if kind == c.V_SECTION_OFFSET:
        return made_of
    if kind == c.V_LOCATION and isinstance(made_of, tuple):
        return f"location({made_of[1]})"
    if kind == c.V_ADDRESS_EXPR:
        return f"addr_expr({made_of[1]})"
    if kind == c.V_PARAM_LOCATION:
        if form == c.FORM_sec_offset:
            return f"LocationList({made_of})"
        if form == c.FORM_loclistx:
            return f"LocationListIndex({made_of})"
        return f"param_expr({made_of[1]}, True)"
    if kind == c.V_ADDRESS and form in ADDRX_FORMS:
        return f"AddressIndex({made_of})"
    if isinstance(made_of, tuple):
        return None
    return made_of


def _child_expr(fields: tuple, exprs: dict[int, str], annotations: str) -> str:
    """The tuple expression of a child's fields (dwarf_numbers.CHILD_FIELDS): a group is None
    when the abbreviation has none of its attributes."""
    parts = []
    for field in fields:
        if field == c.ANNOTATIONS:
            parts.append(annotations)
        elif field.__class__ is tuple:
            present = any(attr in exprs for attr in field)
            parts.append(_child_expr(field, exprs, "") if present else "None")
        else:
            parts.append(exprs.get(field, "None"))
    return "(" + ", ".join(parts) + ",)"


def declares(specs: tuple) -> bool:
    """Whether an abbreviation is a declaration by its shape (DW_FORM_flag_present)."""
    return any(attr == c.AT_declaration and form == c.FORM_flag_present
               for attr, form, _ in specs)


def _fixed_size(code: str | int) -> int:
    return code if isinstance(code, int) else struct.calcsize("<" + code)


def _readable(kind: str, form: int) -> bool:
    """Whether `form` carries the kind of value wanted (a VLA bound is an expression)."""
    if kind == c.V_CONST:
        return form in CONST_FORMS
    if kind == c.V_TEXT:
        return form in STRING_FORMS
    if kind == c.V_ADDRESS:
        return form == c.FORM_addr or form in ADDRX_FORMS
    if kind == c.V_ADDRESS_EXPR:
        return form in BLOCK_FORMS
    if kind == c.V_LOCATION:
        return form in CONST_FORMS or form in BLOCK_FORMS
    if kind == c.V_PARAM_LOCATION:
        return form in BLOCK_FORMS or form == c.FORM_sec_offset or form == c.FORM_loclistx
    return True

