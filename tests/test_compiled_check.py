"""The compiled validator of `check` (canonbtf/check/csrc/check.c) against the Python one.

The compiled pass reports every finding as a message key and raw values, which
check/words.py words as it words the Python validator's; where it does not take a
BTF, the Python validator runs. What must hold: both give the same lines, in the same
order, on everything (real BTF, every rule fixture, random and damaged BTF, plain and
split). The tallies also count how often both find fault and how often both say clean, so
that agreement cannot come from trivial inputs alone.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable

import pytest

from canonbtf import native
from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.check import validator
from canonbtf.check import words as check_words
from canonbtf.errors import InputError

from . import fuzzing
from . import test_check as rules
from .conftest import BASE_61, MODULE_BLOBS, REPO, VMLINUX_BLOBS, corpus_path
from .test_compiled_order import random_btf as random_types

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "rules_check") is None,
                                reason="the compiled part is not built (or not wanted)")

Lines = list[str]


def compiled_lines(btf: Btf) -> Lines | None:
    """The compiled pass's violations as `check` prints them, or None where it does not
    take `btf`; each finding's values are as many as its message's template takes."""
    found = validator.compiled_findings(btf)
    if found is None:
        return None
    for _, _, _, key, values in found:
        assert len(values) == len(check_words.MESSAGES[key][1]), (key, values)
    return list(validator.violation_lines(btf))


def findings(blob: bytes, base: Btf | None = None, base_twin: Btf | None = None
             ) -> tuple[Lines | None, Lines]:
    """(the C's violations, the reference's) on a freshly read `blob`; the C's are None
    where the reader refuses the blob or the C does not take it. The reference decodes the
    base's types, which the C then no longer takes: it reads over `base_twin` (the same
    base, read apart) when there is one."""
    try:
        btf = reader.parse(blob, "<test>", base)
    except InputError:
        return None, []
    compiled = compiled_lines(btf)
    if base_twin is not None:
        btf = reader.parse(blob, "<test>", base_twin)
    return compiled, [str(v) for v in validator.validate_in_python(btf)]


class Tally:
    """How the findings fell; fails on any difference between the two."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, compiled: Lines | None, reference: Lines, what: object) -> None:
        if compiled is None:
            self.counts["not taken"] += 1
            return
        assert compiled == reference, what
        self.counts["both find fault" if reference else "both clean"] += 1

    def check(self, both_clean: int, both_fault: int) -> None:
        """Enough of each outcome to prove something."""
        counts = self.counts
        assert counts["both clean"] >= both_clean and counts["both find fault"] >= both_fault, \
            counts


def fresh_base() -> Btf:
    return reader.load(str(corpus_path(BASE_61.name)))


# -- real BTF: the same verdict, and it is "clean" -----------------------------------


@pytest.mark.parametrize("name", VMLINUX_BLOBS + MODULE_BLOBS)
def test_corpus_btf_is_clean_by_both(name):
    base = fresh_base() if name in MODULE_BLOBS else None
    blob = reader.btf_bytes(str(corpus_path(name)))
    assert findings(blob, base) == ([], [])


def test_clean_path_never_decodes_the_types():
    base = fresh_base()
    btf = reader.load(str(corpus_path(MODULE_BLOBS[0])), base)
    assert validator.validate(btf) == []
    assert btf.packed is not None and base.packed is not None


def test_golden_objects_btf_is_clean_by_both():
    from .test_encode import OBJECTS, encoded

    tally = Tally()
    for path in OBJECTS:
        tally.add(*findings(encoded(path)), path.name)
    tally.check(len(OBJECTS), 0)


# -- the validator's rule-by-rule fixtures -------------------------------------------


@pytest.mark.parametrize("name", list(rules.CASES))
def test_rule_fixtures_agree(name):
    rule, build = rules.CASES[name]
    b = BtfBuilder()
    build(b)
    compiled, reference = findings(writer.write(b.build()))
    assert compiled == reference
    assert (rule is None) == (not reference)


@pytest.mark.parametrize("bad", [False, True], ids=["valid", "member-past-size"])
def test_split_fixtures_agree(bad):
    btf = rules.split_pair(bad)
    compiled = compiled_lines(btf)
    assert compiled == [str(v) for v in validator.validate_in_python(btf)]
    assert bool(compiled) == bad


def test_header_layout_and_empty_blobs():
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    btf = b.build()
    btf.header_tail = bytes([0, 0, 0, 0, 4, 0, 0, 0])
    btf.layout = bytes(4)
    for blob in (writer.write(btf), writer.write(BtfBuilder().build())):
        compiled, reference = findings(blob)
        assert compiled == reference and reference


@pytest.mark.parametrize("name", list(rules.ODD_BASES))
def test_odd_bases_give_the_same_findings(name, tmp_path):
    """A base FLOAT of size 0 as a member, a DECL_TAG on a parameter of a base FUNC of type
    0: the reference reports them (it raised before), the C the same, and `check` prints
    the same finding line compiled and pure."""
    make_base, make_module, _ = rules.ODD_BASES[name]
    for_c, for_python = rules.over_base(make_base, make_module)
    violations = validator.validate_in_python(for_python)
    assert compiled_lines(for_c) == [str(v) for v in violations]
    mod, base = tmp_path / "mod.btf", tmp_path / "base.btf"
    mod.write_bytes(writer.write(for_python))
    base.write_bytes(writer.write(for_python.base))
    compiled = run_check(str(mod), "--base", str(base), pure=False)
    assert compiled == run_check(str(mod), "--base", str(base), pure=True)
    assert compiled[0] == (1 if violations else 0)
    assert b"Traceback" not in compiled[1]
    assert len(compiled[1].splitlines()) == 1, compiled[1]


def _datasec(size: int, offset: int, vsize: int) -> Callable[[BtfBuilder], object]:
    def build(b: BtfBuilder) -> None:
        b.datasec(".data", size, [(b.var("v", b.int("int", 4, f.INT_SIGNED)), offset, vsize)])
    return build


def _int_member(bits: int, bit_offset: int, struct_size: int, word: int
                ) -> Callable[[BtfBuilder], object]:
    def build(b: BtfBuilder) -> None:
        i = b.int("i", 16, 0, bits, bit_offset)
        b.struct("s", struct_size, [("m", i, word)])
    return build


def _long_names(b: BtfBuilder) -> None:
    """Names whose offsets lie past the kernel's 16 MiB of strings."""
    i = b.int("x" * (1 << 24), 4, f.INT_SIGNED)
    b.struct("s", 4, [("m", i, 0)])
    b.add(f.STRUCT, "", 4, items=[("m", i, 0)])
    b.add(f.ENUM, "", 4, items=[("A", 0)])


# Findings no rule fixture or random BTF gives: (module, base or None, the message key).
RARE = {
    "datasec-size": (_datasec(0, 0, 4), None),
    "datasec-end": (_datasec(4, 2, 4), None),
    "member-128": (_int_member(128, 0, 32, 1), None),
    "member-overflow": (_int_member(7, 1, 1 << 29, 0xFFFFFFFF), None),
    "name-offset": (_long_names, None),
    "datasec-unsized": (lambda m: m.datasec(".d", 4, [(2, 0, 4)]),
                        lambda b: b.var("v", b.func_proto(0, []))),
    "member-kind": (lambda m: m.struct("s", 8, [("x", 4, 0)]),
                    lambda b: b.typedef("t", b.datasec(".d", 4, [(b.var(
                        "v", b.int("int", 4, f.INT_SIGNED)), 0, 4)]))),
}


@pytest.mark.parametrize("key", list(RARE))
def test_rare_findings(key):
    make_module, make_base = RARE[key]
    if make_base is None:
        b = BtfBuilder()
        make_module(b)
        compiled, reference = findings(writer.write(b.build()))
    else:
        for_c, for_python = rules.over_base(make_base, make_module)
        compiled = compiled_lines(for_c)
        reference = [str(v) for v in validator.validate_in_python(for_python)]
    assert compiled == reference
    template = check_words.MESSAGES[key][2]
    pattern = ".*: " + re.sub("%(08)?[sx]", ".*", re.escape(template))
    assert any(re.fullmatch(pattern, line) for line in reference), reference


def test_findings_past_one_chunk():
    """More findings than the C hands over at once, all of them, in order."""
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    for n in range(9000):
        b.add(f.PTR, f"p{n}", i)
    compiled, reference = findings(writer.write(b.build()))
    assert compiled == reference and len(reference) == 9000


@pytest.mark.parametrize("depth", [10, 64, 65, 200])
def test_deep_base_chains(depth):
    """A base typedef chain is resolved on demand, recursively, as the reference does; past
    64 the C gives up (the reference runs) rather than recurse further."""
    def base(b):
        target = b.int("int", 4, f.INT_SIGNED)
        for n in range(depth):
            target = b.typedef(f"t{n}", target)

    for_c, for_python = rules.over_base(base, lambda m: m.struct("s", 4, [("x", depth + 1, 0)]))
    assert validator.validate_in_python(for_python) == []
    assert compiled_lines(for_c) == ([] if depth <= 64 else None)


# -- random and damaged BTF: the same findings ------------------------------------------


def test_random_type_graphs():
    rnd = random.Random(1515)
    tally = Tally()
    for n in range(4000):
        tally.add(*findings(rules.random_btf(rnd)), n)
    tally.check(200, 1000)


@pytest.mark.parametrize("split", [False, True], ids=["plain", "split"])
def test_random_records_of_every_kind(split):
    rnd = random.Random(1516 + split)
    base = twin = None
    if split:
        base_blob = writer.write(random_types(random.Random(7), 40))
        base, twin = reader.parse(base_blob, "base"), reader.parse(base_blob, "base")
    tally = Tally()
    for n in range(1500):
        btf = random_types(rnd, rnd.randrange(1, 30), twin)
        tally.add(*findings(writer.write(btf), base, twin), n)
    tally.check(20, 500)


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-be", "handmade-layout"])
def test_mutated_handmade_btf(seed_name):
    seed = {"handmade": fuzzing.handmade_seed(), "handmade-be": fuzzing.handmade_seed(">"),
            "handmade-layout": fuzzing.layout_seed()}[seed_name]
    rnd = random.Random(f"check-c-{seed_name}")
    tally = Tally()
    for n in range(1500):
        blob, names = fuzzing.mutate(seed, rnd)
        tally.add(*findings(blob), (n, names))
    # A layout section is itself a finding ("header"): that seed is never clean.
    tally.check(0 if seed_name == "handmade-layout" else 200, 300)


def virtio_net_seed():
    """(base, its twin, the seed): the 6.1 virtio_net module split over two fresh copies
    of its real base."""
    base, twin = fresh_base(), fresh_base()
    return base, twin, fuzzing.split_seed("virtio_net", corpus_path(MODULE_BLOBS[0]),
                                          BASE_61, twin)


def test_word_flips_in_a_real_module():
    """A small real BTF over its real base: words of its type section set to odd values."""
    base, twin, seed = virtio_net_seed()
    rnd = random.Random(2718)
    tally = Tally()
    for n in range(600):
        data = bytearray(seed.blob)
        for _ in range(rnd.choice((1, 1, 2, 3))):
            mutation = rnd.choice([fuzzing.set_word, fuzzing.set_value, fuzzing.set_type_id,
                                   fuzzing.self_reference, fuzzing.by_value_cycle,
                                   fuzzing.set_kind, fuzzing.flip_kind_flag,
                                   fuzzing.set_name_offset])
            data = mutation(data, seed.layout, rnd)
        tally.add(*findings(bytes(data), base, twin), n)
    assert base.packed is not None
    tally.check(20, 200)


def test_semantic_mutations_of_a_real_module():
    base, twin, seed = virtio_net_seed()
    rnd = random.Random(3141)
    tally = Tally()
    for n in range(40):
        blob, names = fuzzing.semantic_mutate(seed, rnd)
        tally.add(*findings(blob, base, twin), (n, names))
    tally.check(20, 0)


# -- what the C refuses, and the command's output ------------------------------------


def test_inputs_the_c_does_not_take():
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    in_memory = b.build()
    assert validator.compiled_findings(in_memory) is None     # not packed by the reader
    packed = reader.parse(writer.write(in_memory))
    module = native.compiled("canonbtf._btf", "rules_check")
    words, sections = packed.packed.words, packed.string_sections()
    assert list(validator.compiled_findings(packed)) == []
    with pytest.raises(ValueError):
        module.rules_findings(module.rules_check(words, 1, sections, []), -1, 1)
    for args in ((words, 1, sections, [words]),        # a base without strings
                 (words, 2, sections, []),             # ids do not follow
                 (words[:-2], 1, sections, [])):       # not whole words
        with pytest.raises(ValueError):
            module.rules_check(*args)
    two = [sections[0], (len(sections[0][1]), b"\0")]
    with pytest.raises(ValueError):
        module.rules_check(words, 1, two, [words[:-1]])


def run_check(*args: str, pure: bool) -> tuple[int, bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(native.PURE_ENV, None)
    if pure:
        env[native.PURE_ENV] = "1"
    done = subprocess.run([sys.executable, "-m", "canonbtf", "check", *args],
                          capture_output=True, env=env, timeout=300)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("name", VMLINUX_BLOBS + MODULE_BLOBS)
def test_check_output_is_the_same_compiled_and_pure(name):
    args = [str(corpus_path(name))]
    if name in MODULE_BLOBS:
        args += ["--base", str(corpus_path(BASE_61.name))]
    compiled = run_check(*args, pure=False)
    assert compiled == run_check(*args, pure=True)
    assert compiled[0] == 0


def test_check_output_on_broken_btf_is_the_same_compiled_and_pure(tmp_path):
    seed = fuzzing.handmade_seed()
    rnd = random.Random(99)
    found = 0
    for n in range(40):
        blob, _ = fuzzing.mutate(seed, rnd)
        path = tmp_path / f"m{n}.btf"
        path.write_bytes(blob)
        compiled = run_check(str(path), pure=False)
        assert compiled == run_check(str(path), pure=True), n
        found += compiled[0] == 1
    assert found > 5
