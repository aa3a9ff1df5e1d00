"""The validator's second pass: the kernel's resolve walk, by kind.

From each own type in id order, a depth-first walk with the kernel's 32-entry stack
(`CheckEnv.push`) resolves what the type holds by value or points to; each kind has its
step in `RESOLVERS` (the kernel's per-kind resolve op) and each member type kind its
check in the member tables (check_member / check_kflag_member). FUNC_PROTOs are checked
apart, as the kernel does after the walk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from . import format as f
from .check_env import (
    BROKEN,
    MODE_TBD,
    MODIFIER,
    NEEDS_RESOLVE,
    NOSIZE,
    NULL,
    POINTER_SIZE,
    RESOLVED,
    SOURCE_ONLY,
    U32,
    VOID,
    Broken,
    CheckEnv,
    Reject,
    kinds,
    quote,
)
from .model import Type

_DECL_TAG_TARGET = kinds(f.FUNC, f.STRUCT, f.UNION, f.VAR, f.TYPEDEF)


def check_all_resolve(env: CheckEnv) -> None:
    kind_of = env.kinds
    state = env.state
    for type_id in range(env.first, env.n):
        if state[type_id] == BROKEN:
            continue
        kind = kind_of[type_id]
        if NEEDS_RESOLVE[kind] and state[type_id] != RESOLVED:
            _resolve(env, type_id)
        elif kind == f.FUNC_PROTO:
            try:
                _func_proto_check(env, type_id)
            except Reject as r:
                env.report(r.type_id, r.rule, r.message)
            except Broken:
                state[type_id] = BROKEN


def _resolve(env: CheckEnv, top: int) -> bool:
    """Walk from `top` until it is resolved; False (and reported) when it fails."""
    env.top = top
    env.mode = MODE_TBD
    env.stack = stack = []
    resolvers = RESOLVERS
    kind_of = env.kinds
    try:
        env.push(top)
        while stack:
            entry = stack[-1]
            resolvers[kind_of[entry[0]]](env, entry)
        if not _resolve_valid(env, top):
            raise Reject(top, "resolve-state", "the kernel's consistency check after "
                         "resolving fails")
        return True
    except Reject as r:
        env.report(r.type_id, r.rule, r.message)
    except Broken:
        pass
    for entry in stack:
        env.state[entry[0]] = BROKEN
    env.state[top] = BROKEN
    stack.clear()
    return False


def _resolve_valid(env: CheckEnv, type_id: int) -> bool:
    if not env.resolved(type_id):
        return False
    kind = env.kinds[type_id]
    rid = env.resolved_id(type_id)
    rsize = env.resolved_size(type_id)
    if kind in (f.STRUCT, f.UNION, f.DATASEC):
        return not rid and not rsize
    if kind in (f.DECL_TAG, f.FUNC):
        return bool(rid) and not rsize
    if MODIFIER[kind] or kind in (f.PTR, f.VAR):
        rkind = env.kind(rid)
        return rkind != NULL and not MODIFIER[rkind] and rkind not in (f.VAR, f.DATASEC)
    if kind == f.ARRAY:
        elem, _, nelems = env.types[type_id].extra
        sized = env.id_size(elem)
        return (sized is not None and not MODIFIER[env.kind(sized[0])]
                and (nelems * sized[1]) & U32 == rsize)
    return False


def _resolve_modifier(env: CheckEnv, entry: list[int]) -> None:
    target = _settled_target(env, entry[0], False)
    if target is not None:
        _finish_reference(env, entry[0], target, env.kind(target))


def _bad_target(env: CheckEnv, type_id: int, target: int) -> str:
    if target >= env.n:
        return f"refers to {env.describe(target)}"
    return (f"refers to {env.describe(target)}; a {f.kind_name(env.kinds[type_id])} "
            "cannot refer to a VAR, DATASEC or DECL_TAG")


def _resolve_ptr(env: CheckEnv, entry: list[int]) -> None:
    target = _settled_target(env, entry[0], True)
    if target is not None:
        _finish_reference(env, entry[0], target, env.kind(target))


def _settled_target(env: CheckEnv, type_id: int, past_modifiers: bool) -> int | None:
    """The type a modifier, PTR or VAR refers to once the walk has settled it, or None
    when the walk goes on there first (for a PTR or VAR, `past_modifiers`, also on to a
    PTR that a resolved modifier leads to)."""
    target = env.types[type_id].size_or_type
    kind = env.kind(target)
    if kind == NULL or SOURCE_ONLY[kind]:
        raise Reject(type_id, "type-id", _bad_target(env, type_id, target))
    if env.walks_on(target):
        env.push(target)
        return None
    if past_modifiers and MODIFIER[kind] and _follow_pointer(env, target):
        return None
    return target


def _follow_pointer(env: CheckEnv, modifier: int) -> bool:
    """Past a resolved modifier that ends in a PTR, walk that PTR too (pointer loops)."""
    rid = env.resolved_id(modifier)
    if env.kind(rid) == f.PTR and env.walks_on(rid):
        env.push(rid)
        return True
    return False


def _finish_reference(env: CheckEnv, type_id: int, target: int, kind: int) -> None:
    sized = env.id_size(target)
    if sized is not None:
        env.pop_resolved(sized[0], 0)
        return
    if env.resolved(target):
        target = env.resolved_id(target)
        kind = env.kind(target)
    if kind not in (VOID, f.FWD, f.FUNC_PROTO):
        raise Reject(type_id, "type-id", f"refers to {env.describe(target)}, which has "
                     "no size and is not void, a FWD or a FUNC_PROTO")
    env.pop_resolved(target, 0)


def _resolve_var(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    target = _settled_target(env, type_id, True)
    if target is None:
        return
    sized = env.id_size(target)
    if sized is None:
        raise Reject(type_id, "var", f"its type, {env.describe(target)}, has no size")
    env.pop_resolved(sized[0], 0)


def _resolve_array(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    elem, index, nelems = env.types[type_id].extra
    if not _array_part_settled(env, type_id, index, "index"):
        return
    sized = env.id_size(index)
    if sized is None or env.kind(sized[0]) != f.INT or not env.int_regular(sized[0]):
        raise Reject(type_id, "array", f"index type {env.describe(index)} is not a "
                     "regular int")
    if not _array_part_settled(env, type_id, elem, "element"):
        return
    sized = env.id_size(elem)
    if sized is None:
        raise Reject(type_id, "array", f"element type {env.describe(elem)} has no size")
    if env.kind(sized[0]) == f.INT and not env.int_regular(sized[0]):
        raise Reject(type_id, "array", f"element type {env.describe(elem)} is an int "
                     "with a bit offset or an odd bit count")
    if nelems and sized[1] > U32 // nelems:
        raise Reject(type_id, "array", f"{nelems} elements of {sized[1]} bytes overflow "
                     "32 bits")
    env.pop_resolved(sized[0], sized[1] * nelems)


def _array_part_settled(env: CheckEnv, type_id: int, part: int, what: str) -> bool:
    """Whether an array's index or element type (`what`) is settled; when the walk must
    go there first, it is pushed."""
    kind = env.kind(part)
    if NOSIZE[kind] or SOURCE_ONLY[kind]:
        raise Reject(type_id, "array", f"{what} type is {env.describe(part)}")
    if env.walks_on(part):
        env.push(part)
        return False
    return True


def _resolve_struct(env: CheckEnv, entry: list[int]) -> None:
    type_id, next_member = entry
    t = env.types[type_id]
    items = t.items
    if next_member:
        _, mtype, word = items[next_member - 1]
        if not env.resolved(mtype):
            raise Reject(type_id, "resolve-state", f"member {next_member - 1} is not "
                         "resolved after its walk")
        _check_member(env, type_id, t, next_member - 1, mtype, word)
    for i in range(next_member, len(items)):
        name_off, mtype, word = items[i]
        kind = env.kind(mtype)
        if NOSIZE[kind] or SOURCE_ONLY[kind]:
            raise Reject(type_id, "member-type", f"member {env.member(name_off, i)} has "
                         f"{env.describe(mtype)} as its type, which has no size")
        if env.walks_on(mtype):
            entry[1] = i + 1
            env.push(mtype)
            return
        _check_member(env, type_id, t, i, mtype, word)
    env.pop_resolved(0, 0)


class _Member(NamedTuple):
    """A member under check: member number `index` of struct `sid`, of type `mtype`
    (past modifiers) of kind `kind`. What messages say of it is worked out only for a
    message."""

    env: CheckEnv
    sid: int
    st: Type
    index: int
    mtype: int
    kind: int

    @property
    def label(self) -> str:
        return self.env.member(self.st.items[self.index][0], self.index)

    @property
    def outside(self) -> str:
        """`the struct size 16` (or union)."""
        return f"the {f.kind_name(self.st.kind).lower()} size {self.st.size_or_type}"


def _check_member(env: CheckEnv, sid: int, st: Type, index: int, mtype: int, word: int
                  ) -> None:
    """The kernel's check_member / check_kflag_member, by the member type's kind, for
    member number `index` of struct `sid`."""
    kind = env.kind(mtype)
    if MODIFIER[kind]:
        sized = env.id_size(mtype)
        if sized is None:
            raise Reject(sid, "member-type", f"member {env.member(st.items[index][0], index)} "
                         f"has {env.describe(mtype)} as its type, which has no size")
        mtype = sized[0]
        kind = env.kind(mtype)
    if env.state[mtype] == BROKEN:
        raise Broken
    member = _Member(env, sid, st, index, mtype, kind)
    if st.kflag:
        bitfield = word >> 24
        offset = word & 0xFFFFFF
        check_kflag = _KFLAG_MEMBER_CHECKS.get(kind)
        if check_kflag is not None:
            check_kflag(member, offset, bitfield)
            return
        if bitfield:
            raise Reject(sid, "bitfield", f"member {member.label} is a bitfield of "
                         f"{env.describe(mtype)}; only ints and enums can be")
        word = offset
    _MEMBER_CHECKS.get(kind, _not_a_member)(member, word)


def _int_member(m: _Member, word: int) -> None:
    data = m.env.types[m.mtype].extra
    bits = data & 0xFF
    offset = word + ((data >> 16) & 0xFF)
    if offset > U32:
        raise Reject(m.sid, "member-offset", f"member {m.label} bit offset overflows")
    _check_span(m, offset, bits, word)


def _check_span(m: _Member, offset: int, nbits: int, shown_offset: int) -> None:
    """An int member of `nbits` bits from bit `offset` (shown at `shown_offset`): the
    kernel copies at most 128 bits of it, and it must end inside its struct."""
    copy_bits = nbits + (offset & 7)
    if copy_bits > 128:
        raise Reject(m.sid, "bitfield", f"member {m.label} spans more than 128 bits")
    start = offset >> 3
    size = m.st.size_or_type
    if size < start or size - start < (copy_bits + 7) // 8:
        raise Reject(m.sid, "member-size", f"member {m.label} at bit offset {shown_offset} "
                     f"({nbits} bits) runs past {m.outside}")


def _byte_member(m: _Member, word: int) -> None:
    """A pointer, array, struct, union or enum: byte-aligned, inside its struct."""
    msize = POINTER_SIZE if m.kind == f.PTR else m.env.id_size(m.mtype)[1]
    if word & 7:
        raise Reject(m.sid, "member-alignment", f"member {m.label} at bit offset "
                     f"{word} is not byte-aligned")
    if (m.st.size_or_type - (word >> 3)) & U32 < msize:
        raise Reject(m.sid, "member-size", f"member {m.label} at bit offset {word} "
                     f"({msize} bytes) runs past {m.outside}")


def _float_member(m: _Member, word: int) -> None:
    msize = m.env.id_size(m.mtype)[1]
    if not msize:
        # Only a base FLOAT can be so (an own one fails float-size first); the kernel,
        # which refuses such a base, would divide by it.
        raise Reject(m.sid, "member-type", f"member {m.label} has "
                     f"{m.env.describe(m.mtype)} of size 0 as its type")
    align = min(POINTER_SIZE, msize) * 8
    if word % align:
        raise Reject(m.sid, "member-alignment", f"member {m.label} at bit offset "
                     f"{word} is not aligned to its float size")
    if word // 8 + msize > m.st.size_or_type:
        raise Reject(m.sid, "member-size", f"member {m.label} at bit offset {word} "
                     f"({msize} bytes) runs past {m.outside}")


def _not_a_member(m: _Member, word: int) -> None:
    raise Reject(m.sid, "member-type", f"member {m.label} has {m.env.describe(m.mtype)} as "
                 "its type, which cannot be a member")


def _kflag_int_member(m: _Member, offset: int, bitfield: int) -> None:
    env = m.env
    if not env.int_regular(m.mtype):
        raise Reject(m.sid, "bitfield", f"member {m.label} has {env.describe(m.mtype)} as "
                     "its type; with kind_flag set it must be a plain 1/2/4/8/16-byte int")
    int_bits = env.types[m.mtype].extra & 0xFF
    nbits = bitfield
    if not nbits:
        if offset & 7:
            raise Reject(m.sid, "member-alignment", f"member {m.label} at bit offset "
                         f"{offset} is not byte-aligned")
        nbits = int_bits
    elif nbits > int_bits:
        raise Reject(m.sid, "bitfield", f"member {m.label} is a {nbits}-bit bitfield of a "
                     f"{int_bits}-bit int")
    _check_span(m, offset, nbits, offset)


def _kflag_enum_member(m: _Member, offset: int, bitfield: int) -> None:
    nbits = bitfield
    if not nbits:
        if offset & 7:
            raise Reject(m.sid, "member-alignment", f"member {m.label} at bit "
                         f"offset {offset} is not byte-aligned")
        nbits = 32
    elif nbits > 32:
        raise Reject(m.sid, "bitfield", f"member {m.label} is a {nbits}-bit "
                     "bitfield of an enum; the kernel allows at most 32")
    end = (offset + nbits + 7) // 8
    if m.st.size_or_type < end:
        raise Reject(m.sid, "member-size", f"member {m.label} ends at byte {end}, "
                     f"past {m.outside}")


# The member checks by the member type's kind: without kind_flag (the bit offset), and
# with it (offset and bit-field size); a kind without a kind_flag check takes no
# bit-field and is checked at its offset as without.
_MEMBER_CHECKS: dict[int, Callable[[_Member, int], None]] = {
    f.INT: _int_member,
    f.PTR: _byte_member,
    f.ARRAY: _byte_member,
    f.STRUCT: _byte_member,
    f.UNION: _byte_member,
    f.ENUM: _byte_member,
    f.ENUM64: _byte_member,
    f.FLOAT: _float_member,
}
_KFLAG_MEMBER_CHECKS: dict[int, Callable[[_Member, int, int], None]] = {
    f.INT: _kflag_int_member,
    f.ENUM: _kflag_enum_member,
    f.ENUM64: _kflag_enum_member,
}


def _resolve_datasec(env: CheckEnv, entry: list[int]) -> None:
    env.mode = MODE_TBD
    type_id, next_member = entry
    items = env.types[type_id].items
    for i in range(next_member, len(items)):
        vtype, _, vsize = items[i]
        if env.kind(vtype) != f.VAR:
            raise Reject(type_id, "datasec", f"entry {i} is {env.describe(vtype)}, "
                         "not a VAR")
        if env.walks_on(vtype):
            entry[1] = i + 1
            env.push(vtype)
            return
        target = env.types[vtype].size_or_type
        sized = env.id_size(target)
        if sized is None:
            raise Reject(type_id, "datasec", f"entry {i}: the type of VAR {vtype} has "
                         "no size")
        if vsize < sized[1]:
            raise Reject(type_id, "datasec", f"entry {i} has size {vsize}, smaller than "
                         f"its VAR's type ({sized[1]} bytes)")
    env.pop_resolved(0, 0)


def _resolve_func(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    proto = env.types[type_id].size_or_type
    if env.kind(proto) != f.FUNC_PROTO:
        raise Reject(type_id, "func", f"refers to {env.describe(proto)}, not a "
                     "FUNC_PROTO")
    if env.state[proto] == BROKEN:
        raise Broken
    for i, (name_off, ptype) in enumerate(env.types[proto].items):
        if not name_off and ptype:
            raise Reject(type_id, "func", f"parameter {i + 1} of its FUNC_PROTO "
                         f"{proto} has no name")
    env.pop_resolved(proto, 0)


def _resolve_decl_tag(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    t = env.types[type_id]
    target = t.size_or_type
    kind = env.kind(target)
    if not _DECL_TAG_TARGET[kind]:
        raise Reject(type_id, "decl-tag", f"targets {env.describe(target)}; it must be "
                     "a FUNC, STRUCT, UNION, VAR or TYPEDEF")
    if env.walks_on(target):
        env.push(target)
        return
    index = t.extra
    if index != -1:
        if kind in (f.VAR, f.TYPEDEF):
            raise Reject(type_id, "decl-tag", f"component_idx {index} on a "
                         f"{f.kind_name(kind)}, which has no components")
        holder = target
        if kind == f.FUNC:
            # Its prototype's parameters; a base FUNC of type 0 (the kernel's own types are
            # never so) has void's: none.
            holder = env.types[target].size_or_type
        vlen = len(env.types[holder].items) if holder else 0
        if index >= vlen:
            raise Reject(type_id, "decl-tag", f"component_idx {index} is out of range "
                         f"for {env.describe(target)} with {vlen} components")
    env.pop_resolved(target, 0)


def _resolve_unexpected(env: CheckEnv, entry: list[int]) -> None:
    raise Reject(entry[0], "resolve-state", "the kernel cannot resolve this kind")


def _func_proto_check(env: CheckEnv, type_id: int) -> None:
    t = env.types[type_id]
    ret = t.size_or_type
    if ret:
        kind = env.kind(ret)
        if kind == NULL or SOURCE_ONLY[kind]:
            raise Reject(type_id, "func-proto", f"return type is {env.describe(ret)}")
        if NEEDS_RESOLVE[kind] and not env.resolved(ret) and not _resolve(env, ret):
            env.state[type_id] = BROKEN
            return
        if env.id_size(ret) is None:
            raise Reject(type_id, "func-proto", f"return type {env.describe(ret)} has "
                         "no size")
    params = t.items
    count = len(params)
    if count and not params[-1][1]:
        if params[-1][0]:
            raise Reject(type_id, "func-proto", "the trailing vararg entry (type 0) has "
                         "a name")
        count -= 1
    for i in range(count):
        name_off, ptype = params[i]
        kind = env.kind(ptype)
        if kind == NULL or SOURCE_ONLY[kind]:
            raise Reject(type_id, "func-proto", f"parameter {i + 1} is "
                         f"{env.describe(ptype)}")
        if name_off and not (env.offset_ok(name_off) and env.is_identifier(name_off)):
            raise Reject(type_id, "name", f"parameter {i + 1} name "
                         f"{quote(env.name_at(name_off))} is not a valid identifier")
        if NEEDS_RESOLVE[kind] and not env.resolved(ptype) and not _resolve(env, ptype):
            env.state[type_id] = BROKEN
            return
        if env.id_size(ptype) is None:
            raise Reject(type_id, "func-proto", f"parameter {i + 1} type "
                         f"{env.describe(ptype)} has no size")


# Each kind's step of the walk (the kernel's resolve op); kinds the walk never starts at
# or enters are an error.
RESOLVERS: list[Callable[[CheckEnv, list[int]], None]] = [_resolve_unexpected] * (NULL + 1)
for _kind in (f.TYPEDEF, f.VOLATILE, f.CONST, f.RESTRICT, f.TYPE_TAG):
    RESOLVERS[_kind] = _resolve_modifier
RESOLVERS[f.PTR] = _resolve_ptr
RESOLVERS[f.VAR] = _resolve_var
RESOLVERS[f.ARRAY] = _resolve_array
RESOLVERS[f.STRUCT] = _resolve_struct
RESOLVERS[f.UNION] = _resolve_struct
RESOLVERS[f.DATASEC] = _resolve_datasec
RESOLVERS[f.FUNC] = _resolve_func
RESOLVERS[f.DECL_TAG] = _resolve_decl_tag
