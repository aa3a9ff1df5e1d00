"""`dump --format c`: a vmlinux.h that depends on the types only (not on ids), holds every
type, compiles with gcc and clang, has the BTF's exact layout, and spells each type the
way bpftool does (docs/C-HEADER.md)."""

from __future__ import annotations

import io
import random
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf, Type
from canonbtf.btf.strings import StringTable
from canonbtf.cli import main
from canonbtf.emit.c.header import dump_c, header_names
from canonbtf.spec import kinds as spec

from .conftest import BASE_61, corpus_path, load_cached, need_tool, sysfs_vmlinux
from .shuffle import shuffle

VMLINUX_61 = "vmlinux-6.1.0-56-cloud-amd64.btf"
XFS = "mod-6.1.0-56-cloud-xfs.btf"

PROLOGUE = """\
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)
#endif

"""
EPILOGUE = """\
#ifndef BPF_NO_PRESERVE_ACCESS_INDEX
#pragma clang attribute pop
#endif

#endif /* __VMLINUX_H__ */
"""

USE_KERNEL_TYPES = """\
#include "vmlinux.h"

int use(struct task_struct *task, struct sk_buff *skb)
{
	return task->pid + skb->len;
}
"""

# (compiler, arguments): the BPF target the header is for, and the host's gcc.
COMPILERS = [
    pytest.param("gcc", ["-c"], id="gcc"),
    pytest.param("clang", ["-target", "bpf", "-O2", "-c"], id="clang-bpf"),
]


def header(btf: Btf) -> str:
    out = io.StringIO()
    dump_c(btf, out)
    return out.getvalue()


_real_headers: dict[tuple[str, str], str] = {}


def real_header(path: Path, base: Path | None = None) -> str:
    """The header of a corpus or sysfs file, made once per session."""
    key = (str(path), str(base))
    if key not in _real_headers:
        _real_headers[key] = header(load_cached(path, base))
    return _real_headers[key]


def body(text: str) -> str:
    """What lies between bpftool's prologue and epilogue."""
    assert text.startswith(PROLOGUE) and text.endswith(EPILOGUE)
    return text[len(PROLOGUE):-len(EPILOGUE)]


def compile_c(tmp_path: Path, compiler: str, args: list[str], files: dict[str, str],
              source: str) -> str:
    """Compile `source` next to `files`; fails the test on an error, returns the warnings."""
    tool = need_tool(compiler)
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="latin-1")
    src = tmp_path / "use.c"
    src.write_text(source, encoding="latin-1")
    done = subprocess.run([tool, *args, str(src), "-o", str(tmp_path / "use.o")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def resolved_size(btf: Btf, type_id: int) -> int | None:
    """The size BTF gives a type (pointers are 8 bytes: x86-64), None when unsized."""
    t = btf.type_by_id(type_id)
    if t is None or t.kind in (f.FUNC_PROTO, f.FWD):
        return None
    if t.kind in (f.INT, f.FLOAT, f.STRUCT, f.UNION, f.ENUM, f.ENUM64):
        return t.size_or_type
    if t.kind == f.PTR:
        return 8
    if t.kind == f.ARRAY:
        elem = resolved_size(btf, t.extra[0])
        return None if elem is None else elem * t.extra[2]
    return resolved_size(btf, t.size_or_type)


def member_offsets(btf: Btf, type_id: int, base_bits: int = 0):
    """(name, byte offset) of the named non-bit-field members, through anonymous ones."""
    t = btf.type_by_id(type_id)
    for name_off, mtype, word in t.items:
        bits = word >> 24 if t.kflag else 0
        offset = base_bits + (word & 0xFFFFFF if t.kflag else word)
        name = btf.name(name_off)
        member = btf.type_by_id(mtype)
        if name and not bits:
            yield name, offset // 8
        elif not name and member is not None and member.kind in (f.STRUCT, f.UNION):
            yield from member_offsets(btf, mtype, offset)


def layout_asserts(btf: Btf, only: set[int] | None = None) -> tuple[str, int]:
    """`_Static_assert`s of sizeof and offsetof, straight from the BTF, for every named
    struct, union, enum and typedef of the header (of those in `only`, when given: a slim
    header's); and how many there are."""
    lines = ["#include \"vmlinux.h\"",
             # <stddef.h> would clash with the kernel's own typedefs.
             "#define offsetof(t, m) __builtin_offsetof(t, m)"]
    for type_id, name in header_names(btf).items():
        if only is not None and type_id not in only:
            continue
        t = btf.type_by_id(type_id)
        if t.kind == f.FWD:
            continue
        if t.kind in (f.STRUCT, f.UNION):
            spelled = ("struct " if t.kind == f.STRUCT else "union ") + name
            for member, offset in member_offsets(btf, type_id):
                lines.append(f"_Static_assert(offsetof({spelled}, {member}) == {offset}, "
                             f"\"{name}.{member}\");")
        elif t.kind in (f.ENUM, f.ENUM64):
            if not t.items:
                continue
            spelled = "enum " + name
        else:
            spelled = name
        size = resolved_size(btf, type_id)
        if size is not None:
            lines.append(f"_Static_assert(sizeof({spelled}) == {size}, \"{name}\");")
    return "\n".join(lines) + "\n", len(lines) - 2


def definitions(text: str) -> str:
    """The definitions of a header: after the prologue (and the kfunc macros, if any),
    before the epilogue."""
    start = text.index("#endif\n\n") + len("#endif\n\n")
    if text.startswith("#ifndef __ksym", start):
        end_of_macros = "#define __bpf_fastcall\n#endif\n#endif\n\n"
        start = text.index(end_of_macros, start) + len(end_of_macros)
    return text[start:text.rindex("#ifndef BPF_NO_PRESERVE_ACCESS_INDEX")]


def blocks(text: str) -> list[str]:
    return [block for block in definitions(text).split("\n\n") if block]


# ---- hand-built BTFs, one C feature each, with the exact text expected ----

def base_ints(b: BtfBuilder) -> dict[str, int]:
    return {
        "int": b.int("int", 4, f.INT_SIGNED),
        "uint": b.int("unsigned int", 4),
        "char": b.int("char", 1, f.INT_SIGNED),
        "short": b.int("short int", 2, f.INT_SIGNED),
        "ulong": b.int("long unsigned int", 8),
        "long": b.int("long int", 8, f.INT_SIGNED),
    }


def layout_btf() -> Btf:
    """Bit-fields, padding inside and at the end, packed structs, a memberless union."""
    b = BtfBuilder()
    t = base_ints(b)
    flags = b.struct("flags", 24, [("a", t["uint"], 0, 3), ("b", t["uint"], 3, 5),
                                   ("c", t["uint"], 16, 4), ("d", t["ulong"], 64),
                                   ("e", t["int"], 128)])
    b.struct("cacheline", 128, [("x", t["int"], 0), ("y", flags, 512)])
    b.struct("pk", 8, [("c", t["char"], 0), ("i", t["int"], 8), ("d", t["char"], 40)])
    b.struct("straddle", 5, [("a", t["uint"], 0, 30), ("b", t["uint"], 30, 4)])
    b.typedef("release_pages_arg", b.struct("", 8, [], union=True))
    b.struct("empty", 0, [])
    return b.build()


LAYOUT_TEXT = """\
typedef union {
	long: 64;
} release_pages_arg;

struct empty {};

struct flags {
	unsigned int a: 3;
	unsigned int b: 5;
	char: 8;
	unsigned int c: 4;
	long unsigned int d;
	int e;
};

struct cacheline {
	int x;
""" + "\tlong: 64;\n" * 7 + "\tstruct flags y;\n" + "\tlong: 64;\n" * 5 + """\
};

struct pk {
	char c;
	int i;
	char d;
	short: 16;
} __attribute__((packed));

struct straddle {
	unsigned int a: 30;
	unsigned int b: 4;
} __attribute__((packed));

"""


def declarator_btf() -> Btf:
    """Function pointers, arrays of them, qualifiers, anonymous members, typedef chains,
    a struct that needs a typedef of itself, forward declarations."""
    b = BtfBuilder()
    t = base_ints(b)
    void_ptr = b.ptr(0)
    cstr = b.ptr(b.modifier(f.CONST, t["char"]))
    handler = b.typedef("handler_t", b.ptr(b.func_proto(t["int"], [("a", t["int"]),
                                                                      ("s", cstr)])))
    ops = b.struct("ops", 120, [])
    row = b.array(t["int"], t["int"], 3)
    members = [
        ("reset", b.ptr(b.func_proto(0, [])), 0),
        ("log", b.ptr(b.func_proto(t["int"], [("fmt", cstr), ("", 0)])), 64),
        ("handlers", b.array(handler, t["int"], 4), 128),
        ("table", b.array(b.ptr(b.func_proto(t["int"], [("", void_ptr)])), t["int"], 2), 384),
        ("name", b.ptr(b.func_proto(b.ptr(t["char"]), [("self", b.ptr(ops))])), 512),
        ("matrix", b.ptr(row), 576),
        ("grid", b.array(row, t["int"], 2), 640),
        ("cs", b.modifier(f.CONST, cstr), 832),
        ("v", b.modifier(f.VOLATILE, t["int"]), 896),
        ("data", b.array(t["char"], t["int"], 0), 928),
    ]
    b.types[ops - b.first_id].items = [(b.strings.add(n), ty, off) for n, ty, off in members]
    parts = b.struct("", 4, [("lo", t["short"], 0), ("hi", t["short"], 16)])
    b.struct("outer", 24, [
        ("kind", t["int"], 0),
        ("", b.struct("", 4, [("i", t["int"], 0), ("parts", parts, 0)], union=True), 32),
        ("", b.struct("", 8, [("p", void_ptr, 0)]), 64),
        ("ptr_anon", b.ptr(b.struct("", 4, [("x", t["int"], 0)])), 128)])
    u32 = b.typedef("u32", b.typedef("__u32", t["uint"]))
    node = b.struct("node", 16, [])
    node_t = b.typedef("node_t", node)
    b.types[node - b.first_id].items = [(b.strings.add("next"), b.ptr(node_t), 0),
                                        (b.strings.add("v"), u32, 64)]
    b.typedef("cvint", b.modifier(f.CONST, b.modifier(f.VOLATILE, t["int"])))
    b.typedef("rptr", b.modifier(f.RESTRICT, b.ptr(t["int"])))
    b.typedef("fn_t", b.func_proto(t["int"], [("", t["int"])]))
    b.struct("later_user", 8, [("o", b.ptr(b.fwd("opaque")), 0)])
    b.struct("uses_union", 8, [("u", b.ptr(b.fwd("opaque_u", union=True)), 0)])
    return b.build()


DECLARATOR_TEXT = """\
struct node;

struct opaque;

union opaque_u;

typedef unsigned int __u32;

typedef volatile const int cvint;

typedef int fn_t(int);

typedef int (*handler_t)(int a, const char *s);

typedef struct node node_t;

typedef int * restrict rptr;

typedef __u32 u32;

struct later_user {
	struct opaque *o;
};

struct uses_union {
	union opaque_u *u;
};

struct node {
	node_t *next;
	u32 v;
};

struct ops {
	void (*reset)(void);
	int (*log)(const char *fmt, ...);
	handler_t handlers[4];
	int (*table[2])(void *);
	char * (*name)(struct ops *self);
	int (*matrix)[3];
	int grid[2][3];
	const char * const cs;
	volatile int v;
	char data[0];
};

struct outer {
	int kind;
	union {
		int i;
		struct {
			short int lo;
			short int hi;
		} parts;
	};
	struct {
		void *p;
	};
	struct {
		int x;
	} *ptr_anon;
};

"""


def enum_btf() -> Btf:
    """Enum sizes the compiler would not pick by itself, signedness, 64-bit values,
    anonymous enums at top level and inline, an enum forward declaration."""
    b = BtfBuilder()
    t = base_ints(b)
    b.enum("small", 1, [("S_A", 0), ("S_B", 255)])
    b.enum("half", 2, [("H_A", 1)])
    b.enum("sig", 4, [("N", -1), ("P", 1)], signed=True)
    b.enum("big", 8, [("BIG", 1 << 40), ("SMALL", 1)])
    wide = b.enum("wide", 8, [("W", 1)])
    b.types[wide - b.first_id].kind = f.ENUM64
    b.add(f.ENUM, "word", 8, items=[("WORD", 2)])
    b.enum("neg64", 8, [("NEG", -(1 << 40))], signed=True)
    b.enum("", 4, [("ANON_A", 0), ("ANON_B", 1)])
    b.enum("fwd_e", 4, [])
    b.struct("holder", 8, [("e", b.enum("", 4, [("IN_X", 7)]), 0), ("s", t["int"], 32)])
    return b.build()


ENUM_TEXT = """\
enum {
	ANON_A = 0,
	ANON_B = 1,
};

enum big {
	BIG = 1099511627776ULL,
	SMALL = 1ULL,
};

enum fwd_e;

enum half {
	H_A = 1,
} __attribute__((mode(HI)));

enum neg64 {
	NEG = -1099511627776LL,
};

enum sig {
	N = -1,
	P = 1,
};

enum small {
	S_A = 0,
	S_B = 255,
} __attribute__((mode(byte)));

enum wide {
	W = 1ULL,
} __attribute__((mode(word)));

enum word {
	WORD = 2,
} __attribute__((mode(word)));

struct holder {
	enum {
		IN_X = 7,
	} e;
	int s;
};

"""


def names_btf(reverse: bool = False) -> Btf:
    """Same-name structs, typedefs and enumerators, added in either order."""
    b = BtfBuilder()
    t = base_ints(b)
    steps = [
        lambda: b.struct("dup", 4, [("a", t["int"], 0)]),
        lambda: b.struct("dup", 8, [("b", t["long"], 0)]),
        lambda: b.enum("a_e", 4, [("X", 1)]),
        lambda: b.enum("b_e", 4, [("X", 2)]),
        lambda: b.typedef("t", t["int"]),
        lambda: b.typedef("t", t["long"]),
    ]
    if reverse:
        ids = [step() for step in reversed(steps)][::-1]
    else:
        ids = [step() for step in steps]
    b.struct("use_int", 4, [("x", ids[0], 0)])
    b.struct("use_long", 8, [("y", ids[1], 0)])
    b.struct("use_t", 16, [("p", ids[4], 0), ("q", ids[5], 64)])
    return b.build()


NAMES_TEXT = """\
enum a_e {
	X = 1,
};

enum b_e {
	X___2 = 2,
};

typedef int t;

typedef long int t___2;

struct dup {
	int a;
};

struct dup___2 {
	long int b;
};

struct use_int {
	struct dup x;
};

struct use_long {
	struct dup___2 y;
};

struct use_t {
	t p;
	t___2 q;
};

"""


def kfunc_btf() -> Btf:
    """kfunc prototypes (one also bpf_fastcall), a type tag; FUNC, VAR, DATASEC unprinted."""
    b = BtfBuilder()
    t = base_ints(b)
    tagged = b.struct("tagged", 8, [("up", b.ptr(b.type_tag("user", t["int"])), 0)])
    do = b.func("bpf_do", b.func_proto(t["int"], [("t", b.ptr(tagged)), ("p", b.ptr(0))]))
    b.decl_tag("bpf_kfunc", do)
    fast = b.func("bpf_fast", b.func_proto(0, []))
    b.decl_tag("bpf_fastcall", fast)
    b.decl_tag("bpf_kfunc", fast)
    b.func("not_a_kfunc", b.func_proto(0, []))
    var = b.var("my_var", t["int"])
    b.datasec(".data..percpu", 4, [(var, 0, 4)])
    return b.build()


KFUNC_TEXT = PROLOGUE + """\
#ifndef __ksym
#define __ksym __attribute__((section(".ksyms")))
#endif

#ifndef __weak
#define __weak __attribute__((weak))
#endif

#ifndef __bpf_fastcall
#if __has_attribute(bpf_fastcall)
#define __bpf_fastcall __attribute__((bpf_fastcall))
#else
#define __bpf_fastcall
#endif
#endif

struct tagged {
	int __attribute__((btf_type_tag("user"))) *up;
};

/* BPF kfuncs */
#ifndef BPF_NO_KFUNC_PROTOTYPES
extern int bpf_do(struct tagged *t, void *p) __weak __ksym;
extern __bpf_fastcall void bpf_fast(void) __weak __ksym;
#endif

""" + EPILOGUE

HAND_BUILT = [
    pytest.param(layout_btf, LAYOUT_TEXT, id="layout"),
    pytest.param(declarator_btf, DECLARATOR_TEXT, id="declarators"),
    pytest.param(enum_btf, ENUM_TEXT, id="enums"),
    pytest.param(names_btf, NAMES_TEXT, id="same-names"),
]


@pytest.mark.parametrize(("build", "expected"), HAND_BUILT)
def test_hand_built_text(build, expected):
    assert body(header(build())) == expected


def test_kfuncs_and_type_tags_text():
    assert header(kfunc_btf()) == KFUNC_TEXT


def test_same_names_do_not_depend_on_insertion_order():
    assert header(names_btf()) == header(names_btf(reverse=True))


def twins_btf(reverse: bool) -> Btf:
    """Identical same-name structs told apart only by who uses them, and a pair of
    identical users of identical structs, which nothing tells apart."""
    b = BtfBuilder()
    t = base_ints(b)
    first, second = [b.struct("foo", 4, [("a", t["int"], 0)]) for _ in range(2)]
    if reverse:
        first, second = second, first
    b.struct("x", 4, [("f", first, 0)])
    b.struct("y", 4, [("g", second, 0)])
    bars = [b.struct("bar", 4, [("a", t["int"], 0)]) for _ in range(2)]
    for bar in bars:
        b.struct("z", 8, [("p", b.ptr(bar), 0)])
    return b.build()


def test_alike_same_name_types_do_not_depend_on_ids():
    texts = {header(shuffle(twins_btf(reverse), seed))
             for reverse in (False, True) for seed in range(6)}
    assert len(texts) == 1
    text = texts.pop()
    assert "struct x {\n\tstruct foo f;\n};" in text
    assert "struct y {\n\tstruct foo___2 g;\n};" in text
    assert "struct z {\n\tstruct bar *p;\n};" in text
    assert "struct z___2 {\n\tstruct bar___2 *p;\n};" in text


@pytest.mark.parametrize(("compiler", "args"), COMPILERS)
@pytest.mark.parametrize("build", [layout_btf, declarator_btf, enum_btf, names_btf,
                                   kfunc_btf])
def test_hand_built_compiles_with_exact_layout(tmp_path, compiler, args, build):
    btf = build()
    asserts, count = layout_asserts(btf)
    assert count > 0
    warnings = compile_c(tmp_path, compiler, args, {"vmlinux.h": header(btf)}, asserts)
    # gcc knows no btf_type_tag; nothing else may warn.
    assert all("btf_type_tag" in line or "In file included" in line or line.startswith(" ")
               for line in warnings.splitlines() if "warning" in line), warnings


def test_hand_built_text_matches_bpftool(tmp_path):
    """bpftool prints these definitions the same way (order and padding style aside)."""
    bpftool = need_tool("bpftool")
    from canonbtf.btf import writer

    path = tmp_path / "decl.btf"
    path.write_bytes(writer.write(declarator_btf()))
    theirs = subprocess.run([bpftool, "btf", "dump", "file", str(path), "format", "c"],
                            capture_output=True, check=True).stdout.decode("latin-1")
    assert Counter(normalized_blocks(theirs)) == Counter(normalized_blocks(header(
        declarator_btf())))



def builtin_named_btf(kind: int) -> Btf:
    """A struct, union, enum, fwd or typedef named `__builtin_va_list`, a struct that
    points to it and gcc's typedef `__gnuc_va_list` of it."""
    b = BtfBuilder()
    t = base_ints(b)
    if kind == f.TYPEDEF:
        named = b.typedef("__builtin_va_list", b.ptr(t["char"]))
    elif kind == f.ENUM:
        named = b.enum("__builtin_va_list", 4, [("A", 1)])
    elif kind == f.FWD:
        named = b.fwd("__builtin_va_list")
    else:
        named = b.struct("__builtin_va_list", 8, [("x", t["int"], 0)], union=kind == f.UNION)
    b.struct("user", 16, [("p", b.ptr(named), 0), ("y", t["int"], 64)])
    b.typedef("__gnuc_va_list", named)
    return b.build()


BUILTIN_NAMED_KINDS = [pytest.param(kind, id=spec.KIND_NAMES[kind].lower())
                       for kind in (f.STRUCT, f.UNION, f.ENUM, f.FWD, f.TYPEDEF)]


@pytest.mark.parametrize("kind", BUILTIN_NAMED_KINDS)
def test_only_a_typedef_named_builtin_va_list_is_left_out(tmp_path, kind):
    """Only the typedef is the compiler's own (bpftool leaves it out); a struct, union,
    enum or fwd of that name is defined like any other, and the header compiles for BPF.
    The Python emitter raised KeyError on an enum or fwd of that name and, like the
    compiled one, left a struct or union of that name undefined."""
    bpftool = need_tool("bpftool")
    from canonbtf.btf import writer

    btf = builtin_named_btf(kind)
    text = header(btf)
    path = tmp_path / "builtin.btf"
    path.write_bytes(writer.write(btf))
    theirs = subprocess.run([bpftool, "btf", "dump", "file", str(path), "format", "c"],
                            capture_output=True, check=True).stdout.decode("latin-1")
    assert Counter(normalized_blocks(theirs)) == Counter(normalized_blocks(text))
    assert ("typedef __builtin_va_list __gnuc_va_list;" in text) == (kind == f.TYPEDEF)
    compile_c(tmp_path, "clang", ["-target", "bpf", "-O2", "-c"], {"vmlinux.h": text},
              '#include "vmlinux.h"\nint use(struct user *u) { return u->y; }\n')


# ---- the property the order is for ----

def random_structs(seed: int, count: int, extra: bool) -> Btf:
    """`count` structs holding earlier ones by value and any by pointer, plus typedefs;
    with `extra`, one more struct, added in the middle of the ids."""
    rng = random.Random(seed)
    b = BtfBuilder()
    t = base_ints(b)
    names = [f"s{rng.randrange(10**6):06d}_{i}" for i in range(count)]
    ids = [b.struct(name, 0, []) for name in names]
    typedefs = [b.typedef(f"{name}_t", sid) for name, sid in zip(names, ids)]
    sizes = {}
    for i, sid in enumerate(ids):
        members = [("n", t["int"], 0)]
        offset = 64
        for j in rng.sample(range(count), k=min(count, 4)):
            if j < i and rng.random() < 0.5:
                members.append((f"m{j}", rng.choice((ids[j], typedefs[j])), offset))
                offset += 8 * sizes[ids[j]]
            else:
                members.append((f"p{j}", b.ptr(rng.choice((ids[j], typedefs[j]))), offset))
                offset += 64
        sizes[sid] = offset // 8
        b.types[sid - b.first_id].size_or_type = offset // 8
        b.types[sid - b.first_id].items = [(b.strings.add(n), ty, off)
                                           for n, ty, off in members]
        if extra and i == count // 2:
            b.struct("inserted", 16 + sizes[sid], [("k", t["long"], 0), ("held", sid, 64),
                                                   ("ref", b.ptr(ids[0]), 64 + 8 * sizes[sid])])
    return b.build()


@pytest.mark.parametrize("seed", range(5))
def test_adding_a_struct_moves_nothing_else(seed):
    before = blocks(header(random_structs(seed, 40, extra=False)))
    after = blocks(header(random_structs(seed, 40, extra=True)))
    for found in (before, after):
        assert all(re.fullmatch(r"struct \w+;", line) for line in found[0].split("\n"))
    inserted = [blk for blk in after if blk.startswith("struct inserted {")]
    assert len(inserted) == 1
    # The forward declarations are one block; everything else keeps its place.
    assert [blk for blk in after if blk not in inserted][1:] == before[1:]


# ---- real kernels ----

def real_inputs_c() -> list:
    return [pytest.param("corpus", id=VMLINUX_61), pytest.param("sysfs", id="sysfs-vmlinux")]


def resolve(name: str) -> Path:
    return corpus_path(VMLINUX_61) if name == "corpus" else sysfs_vmlinux()


@pytest.mark.parametrize("name", real_inputs_c())
def test_shuffled_ids_and_strings_give_the_same_bytes(name):
    path = resolve(name)
    btf = load_cached(path)
    expected = real_header(path)
    assert re.search(r"\bstruct \w+___2 \{", expected), "no same-name structs exercised"
    for seed in (1, 2):
        assert header(shuffle(btf, seed)) == expected


def test_module_header_is_shuffle_proof():
    path, base = corpus_path(XFS), corpus_path(BASE_61.name)
    btf = load_cached(path, base)
    assert header(shuffle(btf, 3)) == real_header(path, base)


def test_dumped_modules_are_not_kept_alive():
    """The analysis of a base is reused for its modules, but a dumped module itself must
    be freed (a long-running caller dumping many modules otherwise grows without end:
    the fuzz campaign's worker reached 2.2 GB)."""
    import gc
    import weakref

    base = BtfBuilder()
    int_ = base.int("int", 4, f.INT_SIGNED)
    base_btf = base.build()
    dumped = []
    for n in range(3):
        strings = StringTable(b"", base_btf.strings.end)
        typedef = Type(f.TYPEDEF, strings.add(f"count{n}_t"), 0, int_, 0, ())
        module = Btf([typedef], strings, base_btf)
        assert f"typedef int count{n}_t;" in header(module)
        dumped.append(weakref.ref(module))
        del module
    gc.collect()
    assert [ref() for ref in dumped] == [None, None, None]


def definition_counts(text: str) -> Counter:
    """How many definitions of each kind the header holds (the forward declarations
    block, the first one, left out)."""
    counts: Counter = Counter()
    found = blocks(text)
    assert found[0].count("\n") > 0 and all(
        re.fullmatch(r"(struct|union) \w+;", line) for line in found[0].split("\n"))
    for block in found[1:]:
        first = block.split("\n", 1)[0]
        if first.startswith("typedef "):
            counts["TYPEDEF"] += 1
        elif m := re.fullmatch(r"(struct|union|enum) \w+ \{(\};)?", first):
            counts[{"struct": "STRUCT", "union": "UNION", "enum": "ENUM"}[m[1]]] += 1
        elif m := re.fullmatch(r"(struct|union|enum) \w+;", first):
            counts["ENUM FWD" if m[1] == "enum" else "FWD"] += 1
        elif first == "enum {":
            counts["anonymous ENUM"] += 1
    return counts


@pytest.mark.parametrize("name", real_inputs_c())
def test_every_type_appears(name):
    path = resolve(name)
    btf = load_cached(path)
    text = real_header(path)
    expected: Counter = Counter()
    enumerators = set()
    for _, t in btf.own():
        named = bool(t.name_off)
        if t.kind in (f.ENUM, f.ENUM64):
            enumerators.update(btf.name(n) for n, _ in t.items)
            if named:
                expected["ENUM" if t.items else "ENUM FWD"] += 1
        elif named and t.kind in (f.STRUCT, f.UNION, f.FWD):
            expected[f.kind_name(t.kind)] += 1
        elif named and t.kind == f.TYPEDEF and btf.type_name(t) != "__builtin_va_list":
            expected["TYPEDEF"] += 1
    counts = definition_counts(text)
    anonymous = counts.pop("anonymous ENUM")
    assert counts == expected
    assert anonymous > 100
    printed = set(re.findall(r"^\t+(\w+?)(?:___\d+)? = ", text, re.M))
    assert enumerators <= printed, sorted(enumerators - printed)[:10]


@pytest.mark.parametrize(("compiler", "args"), COMPILERS)
@pytest.mark.parametrize("name", real_inputs_c())
def test_compiles_with_kernel_types(tmp_path, compiler, args, name):
    text = real_header(resolve(name))
    warnings = compile_c(tmp_path, compiler, args, {"vmlinux.h": text}, USE_KERNEL_TYPES)
    if name == "corpus":
        assert warnings == ""


@pytest.mark.parametrize(("compiler", "args"), COMPILERS)
def test_module_header_compiles_after_base(tmp_path, compiler, args):
    base, path = corpus_path(BASE_61.name), corpus_path(XFS)
    files = {"vmlinux.h": real_header(base), "xfs.h": real_header(path, base)}
    source = ('#include "vmlinux.h"\n#include "xfs.h"\n'
              "int use(struct xfs_inode *ip, struct task_struct *task)\n"
              "{\n\treturn ip->i_ino + task->pid;\n}\n")
    assert compile_c(tmp_path, compiler, args, files, source) == ""


@pytest.mark.parametrize("name", real_inputs_c())
def test_layout_is_exact(tmp_path, name):
    """sizeof and offsetof from the BTF itself, checked by the host's gcc (x86-64 BTF)."""
    path = resolve(name)
    asserts, count = layout_asserts(load_cached(path))
    assert count > 10_000
    compile_c(tmp_path, "gcc", ["-c"], {"vmlinux.h": real_header(path)}, asserts)


PADDING = re.compile(r"^\t+(long|int|short|char): \d+;$", re.M)


def normalized_blocks(text: str) -> list[str]:
    """Definitions with what we spell differently on purpose taken out: padding lines,
    `mode` attributes, `___N` suffixes; forward declarations, which bpftool scatters."""
    out = []
    for block in text.split("\n\n"):
        block = PADDING.sub("", block)
        block = re.sub(r"\n+", "\n", block).strip("\n")
        block = re.sub(r"___\d+\b", "", block)
        block = re.sub(r" __attribute__\(\(mode\(\w+\)\)\)", "", block)
        if block and not re.fullmatch(r"((struct|union) \w+;\n?)+", block) \
                and not block.startswith("#"):
            out.append(block)
    return out


@pytest.mark.parametrize("name", real_inputs_c())
def test_text_matches_bpftool(name):
    """Every definition reads as bpftool 7.1 writes it (order and padding style aside)."""
    bpftool = need_tool("bpftool")
    path = resolve(name)
    theirs = subprocess.run([bpftool, "btf", "dump", "file", str(path), "format", "c"],
                            capture_output=True, check=True).stdout.decode("latin-1")
    ours = normalized_blocks(definitions(real_header(path)))
    ours = [block for block in ours if not block.startswith(("/* BPF kfuncs */", "extern "))]
    missing = Counter(normalized_blocks(theirs)) - Counter(ours)
    extra = Counter(ours) - Counter(normalized_blocks(theirs))
    # bpftool drops anonymous enums that only functions or variables use; we print them.
    assert all(block.startswith("enum {") for block in extra), list(extra)[:3]
    assert not missing, list(missing)[:3]


def test_cli_writes_the_same_header(tmp_path):
    path, base = corpus_path(XFS), corpus_path(BASE_61.name)
    out = tmp_path / "xfs.h"
    assert main(["dump", str(path), "--base", str(base), "--format", "c", "-o", str(out)]) == 0
    text = out.read_text(encoding="latin-1")
    assert text == real_header(path, base)
    note, guard = text.split("\n", 2)[:2]
    assert note.startswith("/* Split BTF:") and "base" in note
    assert re.fullmatch(r"#ifndef __VMLINUX_SPLIT_[0-9A-F]{16}_H__", guard)
    assert text.count("\nstruct xfs_inode {\n") == 1
