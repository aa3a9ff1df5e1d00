"""The validator against the real judge: the running kernel's BPF_BTF_LOAD.

Real BTF must validate clean; each hand-made blob below breaks (or, for the order-dependent
cases, just avoids breaking) one of the kernel's rules, and the validator and the kernel
must agree on accept/reject. The kernel part skips with the reason when it cannot be asked.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import kernel, reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.check import words as check_words
from canonbtf.check.validator import RULES, validate
from canonbtf.errors import InputError

from .conftest import REPO, load_cached, real_inputs, resolve_input


def kernel_verdict(btf: Btf, raw: bytes | None = None) -> kernel.KernelVerdict:
    verdict = kernel.check_btf(btf, raw)
    if verdict.accepted is None:
        pytest.skip(f"the kernel cannot be asked: {verdict.reason}")
    return verdict


# -- real BTF -------------------------------------------------------------------------


@pytest.mark.parametrize("name", real_inputs())
def test_real_btf_validates_clean(name):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    assert [str(v) for v in validate(btf)] == []


@pytest.mark.parametrize("name", real_inputs())
def test_kernel_accepts_what_the_writer_writes(name):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    blob, _ = kernel.kernel_blob(btf)  # writer output (merged with the base for modules)
    verdict = kernel.load_btf(blob)
    if verdict.accepted is None:
        pytest.skip(f"the kernel cannot be asked: {verdict.reason}")
    assert verdict.accepted, verdict.log_tail


# -- hand-made blobs, one rule each ---------------------------------------------------

Case = Callable[[BtfBuilder], None]
CASES: dict[str, tuple[str | None, Case]] = {}


def case(name: str, rule: str | None):
    """Register a builder for a blob that breaks `rule` (None: a valid blob)."""
    assert rule is None or rule in RULES, rule

    def register(build: Case) -> Case:
        CASES[name] = (rule, build)
        return build

    return register


def retarget(b: BtfBuilder, type_id: int, target: int) -> None:
    """Point an already added reference at a type added after it."""
    b.types[type_id - b.first_id].size_or_type = target


def ints(b: BtfBuilder) -> tuple[int, int]:
    return b.int("int", 4, f.INT_SIGNED), b.int("char", 1, f.INT_SIGNED)


def struct_of_ints(name: str, size: int, members: list[tuple[str, str, int]],
                   union: bool = False) -> Case:
    """A builder of `ints` then a struct (or union) of them: each member (name, "int" or
    "char", bit offset)."""
    def build(b: BtfBuilder) -> None:
        by_name = dict(zip(("int", "char"), ints(b)))
        b.struct(name, size, [(member, by_name[of], offset) for member, of, offset in members],
                 union=union)

    return build


@case("valid-mix", None)
def _(b):
    i, c = ints(b)
    p = b.ptr(0)
    s = b.struct("s", 16, [("a", i, 0), ("b", c, 32, 3), ("p", p, 64)])
    retarget(b, p, s)
    fp = b.func_proto(i, [("x", i), ("", 0)])
    b.func("f", fp)
    b.typedef("s_t", s)
    b.enum("e", 4, [("A", 0), ("B", -1)], signed=True)
    b.fwd("later", union=True)
    b.modifier(f.CONST, 0)
    b.float("double", 8)
    b.array(c, i, 16)
    v = b.var("v", i)
    b.datasec(".data", 8, [(v, 4, 4)])
    b.decl_tag("tag", s, 1)
    b.type_tag("user", c)


@case("typedef-name-not-identifier", "name")
def _(b):
    b.typedef("1abc", ints(b)[0])


@case("ptr-with-name", "name")
def _(b):
    b.add(f.PTR, "p", ints(b)[0])


@case("const-with-name", "name")
def _(b):
    b.add(f.CONST, "c", ints(b)[0])


@case("array-with-name", "name")
def _(b):
    i, c = ints(b)
    b.add(f.ARRAY, "a", 0, extra=(c, i, 4))


@case("func-proto-with-name", "name")
def _(b):
    b.add(f.FUNC_PROTO, "fp", ints(b)[0])


case("member-name-not-identifier", "name")(struct_of_ints("s", 4, [("a-b", "int", 0)]))


@case("enum-value-without-name", "name")
def _(b):
    b.enum("e", 4, [("", 1)])


@case("fwd-without-name", "name")
def _(b):
    b.fwd("")


@case("latin1-letters-are-identifier-letters", None)
def _(b):
    b.typedef("caf\xe9", ints(b)[0])


@case("identifier-512-chars", None)
def _(b):
    b.typedef("x" * 512, ints(b)[0])


@case("identifier-513-chars", "name")
def _(b):
    b.typedef("x" * 513, ints(b)[0])


@case("datasec-name-with-space", None)
def _(b):
    v = b.var("v", ints(b)[0])
    b.datasec("my sec", 4, [(v, 0, 4)])


@case("int-kind-flag", "kind-flag")
def _(b):
    b.add(f.INT, "int", 4, kflag=1, extra=32)


@case("func-proto-kind-flag", "kind-flag")
def _(b):
    b.add(f.FUNC_PROTO, "", ints(b)[0], kflag=1)


@case("int-two-encodings", "int")
def _(b):
    b.int("int", 4, f.INT_SIGNED | f.INT_CHAR)


@case("int-bits-past-size", "int")
def _(b):
    b.int("short", 1, bits=16)


case("member-offset-past-size", "member-offset")(
    struct_of_ints("foo", 4, [("bar", "int", 40)]))
case("member-offsets-decrease", "member-offset")(
    struct_of_ints("s", 8, [("a", "int", 32), ("b", "char", 0)]))
case("member-runs-past-size", "member-size")(struct_of_ints("s", 6, [("a", "int", 32)]))
case("union-member-offset-non-zero", "union-member-offset")(
    struct_of_ints("u", 4, [("a", "int", 0), ("b", "char", 8)], union=True))


@case("member-not-byte-aligned", "member-alignment")
def _(b):
    i, _ = ints(b)
    b.struct("s", 16, [("p", b.ptr(i), 4)])


@case("float-member-misaligned", "member-alignment")
def _(b):
    _, c = ints(b)
    d = b.float("double", 8)
    b.struct("s", 16, [("c", c, 0), ("d", d, 8)])


@case("member-of-fwd-type", "member-type")
def _(b):
    b.struct("s", 8, [("f", b.fwd("opaque"), 0)])


@case("pointer-bitfield", "bitfield")
def _(b):
    i, _ = ints(b)
    b.struct("s", 8, [("p", b.ptr(i), 0, 3)])


@case("kflag-bitfield-of-odd-int", "bitfield")
def _(b):
    odd = b.int("u3", 1, bits=3)
    b.struct("s", 4, [("x", odd, 0, 2)])


@case("enum-bitfield-wider-than-32", "bitfield")
def _(b):
    e = b.enum("e", 8, [("A", 1)])
    b.struct("s", 8, [("x", e, 0, 40)])


@case("enum-size-3", "enum-size")
def _(b):
    b.enum("e", 3, [("A", 1)])


@case("float-size-5", "float-size")
def _(b):
    b.float("f5", 5)


@case("func-extern-linkage", "func-linkage")
def _(b):
    b.func("f", b.func_proto(ints(b)[0], []), linkage=f.LINKAGE_EXTERN)


@case("func-proto-unnamed-param", "func")
def _(b):
    i, _ = ints(b)
    b.func("f", b.func_proto(i, [("", i)]))


@case("func-not-pointing-at-proto", "func")
def _(b):
    b.func("f", ints(b)[0])


@case("func-proto-void-param-in-middle", "func-proto")
def _(b):
    i, _ = ints(b)
    b.func_proto(i, [("a", i), ("b", 0), ("c", i)])


@case("func-proto-returns-typedef-of-void", "func-proto")
def _(b):
    b.func_proto(b.typedef("void_t", 0), [])


@case("func-proto-named-vararg", "func-proto")
def _(b):
    i, _ = ints(b)
    b.func_proto(i, [("a", i), ("rest", 0)])


@case("ptr-to-var", "type-id")
def _(b):
    b.ptr(b.var("v", ints(b)[0]))


@case("typedef-of-datasec", "type-id")
def _(b):
    v = b.var("v", ints(b)[0])
    b.typedef("sec_t", b.datasec(".data", 4, [(v, 0, 4)]))


@case("ptr-to-earlier-func", None)
def _(b):
    b.ptr(b.func("f", b.func_proto(ints(b)[0], [])))


@case("ptr-to-later-func", "type-id")
def _(b):
    i, _ = ints(b)
    p = b.ptr(0)
    retarget(b, p, b.func("f", b.func_proto(i, [])))


@case("by-value-loop", "loop")
def _(b):
    a_id = len(b.types) + 1
    b.struct("A", 4, [("b", a_id + 1, 0)])
    b.struct("B", 4, [("a", a_id, 0)])


@case("pointer-loop", "loop")
def _(b):
    p = b.ptr(0)
    retarget(b, p, b.modifier(f.CONST, p))


@case("structs-nested-33-deep", "resolve-depth")
def _(b):
    i, _ = ints(b)
    first = len(b.types) + 1
    for n in range(32):
        b.struct(f"s{n}", 4, [("m", first + n + 1, 0)])
    b.struct("s32", 4, [("m", i, 0)])


@case("structs-nested-33-deep-innermost-first", None)
def _(b):
    prev, _ = ints(b)
    for n in range(33):
        prev = b.struct(f"s{n}", 4, [("m", prev, 0)])


@case("const-chain-33-innermost-first", None)
def _(b):
    prev, _ = ints(b)
    for _ in range(33):
        prev = b.modifier(f.CONST, prev)


@case("array-of-void", "array")
def _(b):
    b.array(0, ints(b)[0], 4)


@case("array-index-not-int", "array")
def _(b):
    i, _ = ints(b)
    b.array(i, b.struct("s", 4, [("a", i, 0)]), 4)


@case("array-of-bitfield-int", "array")
def _(b):
    b.array(b.int("u3", 1, bits=3), ints(b)[0], 4)


@case("var-extern-linkage", "var")
def _(b):
    b.var("v", ints(b)[0], linkage=2)


@case("var-of-fwd", "var")
def _(b):
    b.var("v", b.fwd("opaque"))


@case("datasec-unsorted", "datasec")
def _(b):
    i, _ = ints(b)
    v1, v2 = b.var("a", i), b.var("b", i)
    b.datasec(".data", 8, [(v1, 4, 4), (v2, 0, 4)])


@case("datasec-entry-not-var", "datasec")
def _(b):
    i, _ = ints(b)
    b.datasec(".data", 4, [(i, 0, 4)])


@case("datasec-entry-smaller-than-var", "datasec")
def _(b):
    v = b.var("v", ints(b)[0])
    b.datasec(".data", 4, [(v, 0, 2)])


@case("decl-tag-component-out-of-range", "decl-tag")
def _(b):
    s = b.struct("s", 4, [("a", ints(b)[0], 0)])
    b.decl_tag("tag", s, 1)


@case("decl-tag-on-int", "decl-tag")
def _(b):
    b.decl_tag("tag", ints(b)[0])


@case("decl-tag-on-func-param", None)
def _(b):
    i, _ = ints(b)
    fn = b.func("f", b.func_proto(i, [("x", i)]))
    b.decl_tag("tag", fn, 0, attribute=True)


@case("type-tag-after-const", "type-tag-order")
def _(b):
    tag = b.type_tag("user", ints(b)[0])
    b.ptr(b.modifier(f.CONST, tag))


@case("type-tag-before-const", None)
def _(b):
    c = b.modifier(f.CONST, ints(b)[0])
    b.ptr(b.type_tag("user", c, attribute=True))


@pytest.mark.parametrize("name", list(CASES))
def test_validator_and_kernel_agree(name):
    rule, build = CASES[name]
    b = BtfBuilder()
    build(b)
    blob = writer.write(b.build())
    btf = reader.parse(blob, name)
    rules = {v.rule for v in validate(btf)}
    if rule is None:
        assert not rules
    else:
        assert rule in rules
    verdict = kernel_verdict(btf, blob)
    assert verdict.accepted == (rule is None), verdict.log_tail


def test_violation_names_type_kind_and_rule():
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    b.struct("foo", 4, [("bar", i, 40)])
    [v] = validate(reader.parse(writer.write(b.build())))
    assert (v.type_id, v.kind, v.name, v.rule) == (2, f.STRUCT, "foo", "member-offset")
    assert str(v) == "type 2 (STRUCT 'foo'): member 'bar' at bit offset 40 is past the " \
                     "struct size 4"


def test_unnamed_member_is_named_by_its_index():
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    inner = b.struct("", 4, [("x", i, 0)], union=True)
    b.struct("foo", 8, [("a", i, 0), ("", inner, 36)])
    [v] = validate(reader.parse(writer.write(b.build())))
    assert str(v) == "type 3 (STRUCT 'foo'): member #1 at bit offset 36 is not byte-aligned"


@pytest.mark.parametrize("kind", [0, f.MAX_KIND + 1, 31])
def test_unknown_kind_in_memory_is_a_finding_as_the_reader_words_it(kind):
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    odd = b.add(kind, "", 0)
    b.typedef("t", odd)
    b.struct("s", 8, [("a", i, 0), ("p", b.ptr(odd), 32)])
    btf = b.build()
    violations = validate(btf)
    assert str(violations[0]) == f"type 2 ({f.kind_name(kind)}): unknown kind {kind}"
    assert {v.rule for v in violations} <= set(RULES)
    with pytest.raises(InputError, match=f"unknown kind {kind}"):
        reader.parse(writer.write(btf))
    verdict = kernel_verdict(btf, writer.write(btf))
    assert not verdict.accepted


def test_header_with_layout_fields_is_flagged_like_the_kernel():
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    plain = writer.write(b.build())
    hdr = list(struct.unpack_from("<HBBIIIII", plain))
    layout = bytes([12, 0, 0, 0])
    hdr[3] = 32
    body = plain[24:]
    blob = struct.pack("<HBBIIIII", *hdr) + struct.pack("<II", len(body), len(layout))
    blob += body + layout
    btf = reader.parse(blob, "layout")
    assert {v.rule for v in validate(btf)} == {"header"}
    verdict = kernel_verdict(btf, blob)
    assert not verdict.accepted


def test_no_types():
    btf = BtfBuilder().build()
    assert {v.rule for v in validate(btf)} == {"no-types"}
    verdict = kernel_verdict(btf, writer.write(btf))
    assert not verdict.accepted


# -- split BTF: own types checked, references into the base resolved ------------------


def split_pair(bad: bool) -> Btf:
    base = BtfBuilder()
    i = base.int("int", 4, f.INT_SIGNED)
    s = base.struct("base_s", 8, [("a", i, 0), ("b", i, 32)])
    t = base.typedef("base_t", s)
    base_btf = reader.parse(writer.write(base.build()), "base")
    mod = BtfBuilder(base_btf)
    mod.struct("mod_s", 8 if not bad else 4, [("inner", t, 0)])
    mod.ptr(s)
    return reader.parse(writer.write(mod.build()), "mod", base_btf)


@pytest.mark.parametrize("bad", [False, True], ids=["valid", "member-past-size"])
def test_split_btf_checked_against_its_base(bad):
    btf = split_pair(bad)
    violations = validate(btf)
    assert [v.type_id for v in violations] == ([4] if bad else [])
    assert all(v.type_id >= btf.first_id for v in violations)
    verdict = kernel_verdict(btf)
    assert verdict.accepted == (not bad), verdict.log_tail
    assert "merged" in verdict.note



def over_base(make_base: Callable[[BtfBuilder], object],
              make_module: Callable[[BtfBuilder], object]) -> tuple[Btf, Btf]:
    """A module over a base the validator never checks (base types count as valid): the
    module read twice, each time over its own copy of the base (the compiled pass reads
    a base whose types the reference has not decoded)."""
    base = BtfBuilder()
    make_base(base)
    base_blob = writer.write(base.build())
    mod = BtfBuilder(reader.parse(base_blob))
    make_module(mod)
    blob = writer.write(mod.build())
    return tuple(reader.parse(blob, "mod", reader.parse(base_blob, "base")) for _ in range(2))


def _float_and_int(b: BtfBuilder) -> None:
    b.float("f0", 0)
    b.int("int", 4, f.INT_SIGNED)


# Split BTF over base types the kernel would never have taken as a base, which the
# validator takes as they are: (base, module, the rule `check` reports or None).
ODD_BASES = {
    "member-of-float-size-0": (lambda b: b.float("f0", 0),
                               lambda m: m.struct("s", 8, [("x", 1, 0)]), "member-type"),
    "typedef-of-float-size-0": (lambda b: b.typedef("t", b.float("f0", 0)),
                                lambda m: m.struct("s", 8, [("x", 2, 0)]), "member-type"),
    "kflag-member-of-float-size-0": (_float_and_int, lambda m: m.struct(
        "s", 8, [("x", 1, 0, 0), ("b", 2, 32, 3)]), "member-type"),
    "tag-on-parameter-of-func-of-type-0": (lambda b: b.func("f", 0),
                                           lambda m: m.decl_tag("t", 1, 0), "decl-tag"),
    "tag-on-func-of-type-0": (lambda b: b.func("f", 0), lambda m: m.decl_tag("t", 1, -1),
                              None),
}


@pytest.mark.parametrize("name", list(ODD_BASES))
def test_odd_base_types_give_findings_not_tracebacks(name):
    """A base FLOAT of size 0 as a member (the validator divided by zero) and a DECL_TAG on
    a parameter of a base FUNC of type 0 (it read void's items): findings, as a kernel
    walking the same types would refuse them (btf_decl_tag_resolve takes void's vlen, 0)."""
    make_base, make_module, rule = ODD_BASES[name]
    btf = over_base(make_base, make_module)[0]
    violations = validate(btf)
    assert [v.rule for v in violations] == ([rule] if rule else [])
    assert all(v.type_id == btf.last_id for v in violations)


# -- random type graphs: the resolve walk's order-dependent verdicts -------------------


def random_btf(rnd) -> bytes:
    """A small BTF of random kinds whose references go anywhere, forward or back."""
    b = BtfBuilder()
    count = rnd.randrange(3, 14)

    def ref() -> int:
        return rnd.randrange(0, count + 1)

    for i in range(count):
        kind = rnd.choice([f.INT, f.INT, f.PTR, f.PTR, f.STRUCT, f.STRUCT, f.UNION, f.ARRAY,
                           f.TYPEDEF, f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG, f.FUNC,
                           f.FUNC_PROTO, f.VAR, f.DATASEC, f.FWD, f.ENUM, f.ENUM64, f.FLOAT,
                           f.DECL_TAG])
        if kind == f.INT:
            b.int(f"i{i}", rnd.choice([1, 2, 4, 8]), rnd.choice([0, 1, 4]),
                  bits=rnd.choice([None, None, 3, 16]))
        elif kind in (f.PTR, f.CONST, f.VOLATILE, f.RESTRICT):
            b.modifier(kind, ref())
        elif kind == f.TYPEDEF:
            b.typedef(f"t{i}", ref())
        elif kind == f.TYPE_TAG:
            b.type_tag("tag", ref())
        elif kind in (f.STRUCT, f.UNION):
            members, offset = [], 0
            for j in range(rnd.randrange(0, 4)):
                union = kind == f.UNION
                members.append((f"m{j}", ref() or 1, 0 if union else offset,
                                rnd.choice([0, 0, 0, 0, 3])))
                offset += rnd.choice([0, 8, 32, 64])
            b.struct(f"s{i}", rnd.choice([4, 16, 64, 64]), members, union=kind == f.UNION)
        elif kind == f.ARRAY:
            b.array(ref() or 1, ref() or 1, rnd.choice([0, 1, 4, 100]))
        elif kind == f.FUNC:
            b.func(f"f{i}", ref(), linkage=rnd.choice([0, 1]))
        elif kind == f.FUNC_PROTO:
            b.func_proto(ref(), [(rnd.choice(["", "p"]), ref()) for _ in range(rnd.randrange(3))])
        elif kind == f.VAR:
            b.var(f"v{i}", ref() or 1)
        elif kind == f.DATASEC:
            entries = [(ref() or 1, 8 * j, rnd.choice([1, 4, 8])) for j in range(rnd.randrange(3))]
            b.datasec(".d", max(8 * len(entries), 8), entries)
        elif kind == f.FWD:
            b.fwd(f"fw{i}", union=rnd.random() < 0.5)
        elif kind == f.ENUM:
            b.enum(f"e{i}", rnd.choice([1, 2, 4]), [("A", 1)])
        elif kind == f.ENUM64:
            b.enum(f"e{i}", 8, [("A", 1 << 40)])
        elif kind == f.FLOAT:
            b.float(f"fl{i}", rnd.choice([4, 8, 16]))
        else:
            b.decl_tag("dt", ref(), rnd.choice([-1, -1, 0, 1]))
    return writer.write(b.build())


def test_random_type_graphs_agree_with_the_kernel():
    import random

    rnd = random.Random(20260)
    verdicts = {True: 0, False: 0}
    for n in range(3000):
        blob = random_btf(rnd)
        btf = reader.parse(blob, f"random-{n}")
        violations = validate(btf)
        verdict = kernel.load_btf(blob)
        if verdict.accepted is None:
            pytest.skip(f"the kernel cannot be asked: {verdict.reason}")
        assert verdict.accepted == (not violations), (n, [str(v) for v in violations],
                                                      verdict.log_tail)
        verdicts[verdict.accepted] += 1
    assert verdicts[True] > 100 and verdicts[False] > 100, verdicts


def test_check_kernel_says_when_it_cannot_ask():
    """As an unprivileged user BPF_BTF_LOAD is refused: `check --kernel` says so, exit 2."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the check as an unprivileged user")
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:  # readable by the unprivileged user
        os.chmod(tmp, 0o755)
        blob = os.path.join(tmp, "ok.btf")
        with open(blob, "wb") as fh:
            fh.write(writer.write(b.build()))
        os.chmod(blob, 0o644)
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             sys.executable, "-m", "canonbtf", "check", blob, "--kernel"],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": repo}, cwd="/",
            timeout=120,
        )
    if proc.returncode == 126 or "No module named" in proc.stderr:
        pytest.skip(f"the unprivileged user cannot run this Python: {proc.stderr.strip()}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "kernel: could not ask: not permitted" in proc.stdout


def test_every_message_belongs_to_a_rule():
    """check_words words every finding; each message's rule is one RULES explains."""
    assert {rule for rule, _, _ in check_words.MESSAGES.values()} == set(RULES)


def test_every_message_is_reported_somewhere():
    """Each key of the table (which the compiled pass also reads, as generated C) is one a
    Python pass reports: the table holds no message nobody says."""
    python = "".join((REPO / "canonbtf/check" / name).read_text() for name in
                     ("validator.py", "env.py", "records.py", "resolve.py"))
    unused = [key for key in check_words.MESSAGES if f'"{key}"' not in python]
    assert not unused
