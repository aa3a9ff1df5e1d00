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

from ..btf import format as f
from ..btf.model import Type
from ..spec import kinds as spec
from .env import (
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
)

_DECL_TAG_TARGET = kinds(*spec.DECL_TAG_TARGET)


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
                env.report(r.type_id, r.key, *r.values)
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
            raise Reject(top, "resolve-state")
        return True
    except Reject as r:
        env.report(r.type_id, r.key, *r.values)
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


def _bad_target(env: CheckEnv, type_id: int, target: int) -> Reject:
    if target >= env.n:
        return Reject(type_id, "refers-missing", env.ref(target))
    return Reject(type_id, "refers-source", env.ref(target), env.kinds[type_id])


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
        raise _bad_target(env, type_id, target)
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
        raise Reject(type_id, "refers-unsized", env.ref(target))
    env.pop_resolved(target, 0)


def _resolve_var(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    target = _settled_target(env, type_id, True)
    if target is None:
        return
    sized = env.id_size(target)
    if sized is None:
        raise Reject(type_id, "var-unsized", env.ref(target))
    env.pop_resolved(sized[0], 0)


def _resolve_array(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    elem, index, nelems = env.types[type_id].extra
    if not _array_part_settled(env, type_id, index, "array-index-kind"):
        return
    sized = env.id_size(index)
    if sized is None or env.kind(sized[0]) != f.INT or not env.int_regular(sized[0]):
        raise Reject(type_id, "array-index-int", env.ref(index))
    if not _array_part_settled(env, type_id, elem, "array-elem-kind"):
        return
    sized = env.id_size(elem)
    if sized is None:
        raise Reject(type_id, "array-elem-unsized", env.ref(elem))
    if env.kind(sized[0]) == f.INT and not env.int_regular(sized[0]):
        raise Reject(type_id, "array-elem-int", env.ref(elem))
    if nelems and sized[1] > U32 // nelems:
        raise Reject(type_id, "array-overflow", nelems, sized[1])
    env.pop_resolved(sized[0], sized[1] * nelems)


def _array_part_settled(env: CheckEnv, type_id: int, part: int, key: str) -> bool:
    """Whether an array's index or element type is settled (`key` words its being of
    a kind without size); when the walk must go there first, it is pushed."""
    kind = env.kind(part)
    if NOSIZE[kind] or SOURCE_ONLY[kind]:
        raise Reject(type_id, key, env.ref(part))
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
            raise Reject(type_id, "member-unresolved", next_member - 1)
        _check_member(env, type_id, t, next_member - 1, mtype, word)
    for i in range(next_member, len(items)):
        name_off, mtype, word = items[i]
        kind = env.kind(mtype)
        if NOSIZE[kind] or SOURCE_ONLY[kind]:
            raise Reject(type_id, "member-unsized", env.member(name_off, i), env.ref(mtype))
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
    def label(self) -> tuple[str | None, int]:
        return self.env.member(self.st.items[self.index][0], self.index)

    @property
    def ref(self) -> tuple[int, int | None, str]:
        return self.env.ref(self.mtype)

    def reject(self, key: str, *values: object) -> Reject:
        """Violation `key` of this member: its label, then `values`."""
        return Reject(self.sid, key, self.label, *values)

    def past(self, key: str, *values: object) -> Reject:
        """Violation `key` of this member running past its struct: `values`, then the
        struct's kind and size."""
        return self.reject(key, *values, self.st.kind, self.st.size_or_type)


def _check_member(env: CheckEnv, sid: int, st: Type, index: int, mtype: int, word: int
                  ) -> None:
    """The kernel's check_member / check_kflag_member, by the member type's kind, for
    member number `index` of struct `sid`."""
    kind = env.kind(mtype)
    if MODIFIER[kind]:
        sized = env.id_size(mtype)
        if sized is None:
            raise Reject(sid, "member-unsized", env.member(st.items[index][0], index),
                         env.ref(mtype))
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
            raise member.reject("member-bitfield", member.ref)
        word = offset
    _MEMBER_CHECKS.get(kind, _not_a_member)(member, word)


def _int_member(m: _Member, word: int) -> None:
    data = m.env.types[m.mtype].extra
    bits = data & 0xFF
    offset = word + ((data >> 16) & 0xFF)
    if offset > U32:
        raise m.reject("member-overflow")
    _check_span(m, offset, bits, word)


def _check_span(m: _Member, offset: int, nbits: int, shown_offset: int) -> None:
    """An int member of `nbits` bits from bit `offset` (shown at `shown_offset`): the
    kernel copies at most 128 bits of it, and it must end inside its struct."""
    copy_bits = nbits + (offset & 7)
    if copy_bits > 128:
        raise m.reject("member-128")
    start = offset >> 3
    size = m.st.size_or_type
    if size < start or size - start < (copy_bits + 7) // 8:
        raise m.past("member-bits-past", shown_offset, nbits)


def _byte_member(m: _Member, word: int) -> None:
    """A pointer, array, struct, union or enum: byte-aligned, inside its struct."""
    msize = POINTER_SIZE if m.kind == f.PTR else m.env.id_size(m.mtype)[1]
    if word & 7:
        raise m.reject("member-byte-align", word)
    if (m.st.size_or_type - (word >> 3)) & U32 < msize:
        raise m.past("member-bytes-past", word, msize)


def _float_member(m: _Member, word: int) -> None:
    msize = m.env.id_size(m.mtype)[1]
    if not msize:
        # Only a base FLOAT can be so (an own one fails float-size first); the kernel,
        # which refuses such a base, would divide by it.
        raise m.reject("member-float-0", m.ref)
    align = min(POINTER_SIZE, msize) * 8
    if word % align:
        raise m.reject("member-float-align", word)
    if word // 8 + msize > m.st.size_or_type:
        raise m.past("member-bytes-past", word, msize)


def _not_a_member(m: _Member, word: int) -> None:
    raise m.reject("member-kind", m.ref)


def _kflag_int_member(m: _Member, offset: int, bitfield: int) -> None:
    env = m.env
    if not env.int_regular(m.mtype):
        raise m.reject("member-kflag-int", m.ref)
    int_bits = env.types[m.mtype].extra & 0xFF
    nbits = bitfield
    if not nbits:
        if offset & 7:
            raise m.reject("member-byte-align", offset)
        nbits = int_bits
    elif nbits > int_bits:
        raise m.reject("member-int-bits", nbits, int_bits)
    _check_span(m, offset, nbits, offset)


def _kflag_enum_member(m: _Member, offset: int, bitfield: int) -> None:
    nbits = bitfield
    if not nbits:
        if offset & 7:
            raise m.reject("member-byte-align", offset)
        nbits = 32
    elif nbits > 32:
        raise m.reject("member-enum-bits", nbits)
    end = (offset + nbits + 7) // 8
    if m.st.size_or_type < end:
        raise m.past("member-end-past", end)


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
            raise Reject(type_id, "datasec-not-var", i, env.ref(vtype))
        if env.walks_on(vtype):
            entry[1] = i + 1
            env.push(vtype)
            return
        target = env.types[vtype].size_or_type
        sized = env.id_size(target)
        if sized is None:
            raise Reject(type_id, "datasec-unsized", i, vtype)
        if vsize < sized[1]:
            raise Reject(type_id, "datasec-small", i, vsize, sized[1])
    env.pop_resolved(0, 0)


def _resolve_func(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    proto = env.types[type_id].size_or_type
    if env.kind(proto) != f.FUNC_PROTO:
        raise Reject(type_id, "func-not-proto", env.ref(proto))
    if env.state[proto] == BROKEN:
        raise Broken
    for i, (name_off, ptype) in enumerate(env.types[proto].items):
        if not name_off and ptype:
            raise Reject(type_id, "func-param-name", i + 1, proto)
    env.pop_resolved(proto, 0)


def _resolve_decl_tag(env: CheckEnv, entry: list[int]) -> None:
    type_id = entry[0]
    t = env.types[type_id]
    target = t.size_or_type
    kind = env.kind(target)
    if not _DECL_TAG_TARGET[kind]:
        raise Reject(type_id, "decl-tag-target", env.ref(target))
    if env.walks_on(target):
        env.push(target)
        return
    index = t.extra
    if index != -1:
        if kind in (f.VAR, f.TYPEDEF):
            raise Reject(type_id, "decl-tag-none", index, kind)
        holder = target
        if kind == f.FUNC:
            # Its prototype's parameters; a base FUNC of type 0 (the kernel's own types are
            # never so) has void's: none.
            holder = env.types[target].size_or_type
        vlen = len(env.types[holder].items) if holder else 0
        if index >= vlen:
            raise Reject(type_id, "decl-tag-range", index, env.ref(target), vlen)
    env.pop_resolved(target, 0)


def _resolve_unexpected(env: CheckEnv, entry: list[int]) -> None:
    raise Reject(entry[0], "resolve-kind")


def _func_proto_check(env: CheckEnv, type_id: int) -> None:
    t = env.types[type_id]
    ret = t.size_or_type
    if ret:
        kind = env.kind(ret)
        if kind == NULL or SOURCE_ONLY[kind]:
            raise Reject(type_id, "proto-return", env.ref(ret))
        if NEEDS_RESOLVE[kind] and not env.resolved(ret) and not _resolve(env, ret):
            env.state[type_id] = BROKEN
            return
        if env.id_size(ret) is None:
            raise Reject(type_id, "proto-return-unsized", env.ref(ret))
    params = t.items
    count = len(params)
    if count and not params[-1][1]:
        if params[-1][0]:
            raise Reject(type_id, "proto-vararg")
        count -= 1
    for i in range(count):
        name_off, ptype = params[i]
        kind = env.kind(ptype)
        if kind == NULL or SOURCE_ONLY[kind]:
            raise Reject(type_id, "proto-param", i + 1, env.ref(ptype))
        if name_off and not (env.offset_ok(name_off) and env.is_identifier(name_off)):
            raise Reject(type_id, "proto-param-name", i + 1, env.name_at(name_off))
        if NEEDS_RESOLVE[kind] and not env.resolved(ptype) and not _resolve(env, ptype):
            env.state[type_id] = BROKEN
            return
        if env.id_size(ptype) is None:
            raise Reject(type_id, "proto-param-unsized", i + 1, env.ref(ptype))


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
