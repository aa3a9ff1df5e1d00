"""The compiled fast pass of `check` (canonbtf/csrc/check.c) against the Python validator.

The fast pass only says "clean" (validate finds nothing) or "maybe not"; on "maybe not"
the reference passes run and word the messages. What must hold: it never says clean
where the reference finds a violation. These tests also hold it to saying clean on real
BTF (a pass that always says "maybe not" would be correct but useless) and count how
often both say clean on damaged input, so that agreement cannot come from one side only.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter

import pytest

from canonbtf import native
from canonbtf.btf import format as f
from canonbtf.btf import reader, validator, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.errors import InputError

from . import fuzzing
from . import test_check as rules
from .conftest import BASE_61, MODULE_BLOBS, REPO, VMLINUX_BLOBS, corpus_path
from .test_compiled_order import random_btf as random_types

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "rules_clean") is None,
                                reason="the compiled part is not built (or not wanted)")


def verdicts(blob: bytes, base: Btf | None = None, base_twin: Btf | None = None
             ) -> tuple[bool | None, list[str]]:
    """(the C's verdict, the reference's violations) on a freshly read `blob`; the C's is
    None where the reader refuses the blob or the C does not take it. The reference
    decodes the base's types, which the C then no longer takes: it reads over
    `base_twin` (the same base, read apart) when there is one."""
    try:
        btf = reader.parse(blob, "<test>", base)
    except InputError:
        return None, []
    clean = validator.compiled_clean(btf)
    if base_twin is not None:
        btf = reader.parse(blob, "<test>", base_twin)
    return clean, [str(v) for v in validator.validate_in_python(btf)]


class Tally:
    """How the two verdicts fell; fails on the C saying clean where Python found fault."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, clean: bool | None, violations: list[str], what: object) -> None:
        if clean is None:
            self.counts["not taken"] += 1
            return
        assert not (clean and violations), (what, violations)
        self.counts["both clean" if clean else "C stricter" if not violations else
                     "both find fault"] += 1

    def check(self, both_clean: int, both_fault: int) -> None:
        """Enough of each verdict to prove something; and none where the C is stricter
        (allowed, but the mirror is exact on all of these inputs)."""
        counts = self.counts
        assert counts["both clean"] >= both_clean and counts["both find fault"] >= both_fault \
            and not counts["C stricter"], counts


def fresh_base() -> Btf:
    return reader.load(str(corpus_path(BASE_61.name)))


# -- real BTF: the same verdict, and it is "clean" -----------------------------------


@pytest.mark.parametrize("name", VMLINUX_BLOBS + MODULE_BLOBS)
def test_corpus_btf_is_clean_by_both(name):
    base = fresh_base() if name in MODULE_BLOBS else None
    blob = reader.btf_bytes(str(corpus_path(name)))
    clean, violations = verdicts(blob, base)
    assert violations == []
    assert clean is True


def test_clean_path_never_decodes_the_types():
    base = fresh_base()
    btf = reader.load(str(corpus_path(MODULE_BLOBS[0])), base)
    assert validator.validate(btf) == []
    assert btf.packed is not None and base.packed is not None


def test_golden_objects_btf_is_clean_by_both():
    from .test_encode import OBJECTS, encoded

    tally = Tally()
    for path in OBJECTS:
        tally.add(*verdicts(encoded(path)), path.name)
    tally.check(len(OBJECTS), 0)


# -- the validator's rule-by-rule fixtures -------------------------------------------


@pytest.mark.parametrize("name", list(rules.CASES))
def test_rule_fixtures_agree(name):
    rule, build = rules.CASES[name]
    b = BtfBuilder()
    build(b)
    clean, violations = verdicts(writer.write(b.build()))
    assert clean is not None
    assert clean == (not violations), violations
    assert clean == (rule is None)


@pytest.mark.parametrize("bad", [False, True], ids=["valid", "member-past-size"])
def test_split_fixtures_agree(bad):
    btf = rules.split_pair(bad)
    clean = validator.compiled_clean(btf)
    assert clean is not None
    assert clean == (not validator.validate_in_python(btf))
    assert clean == (not bad)


def test_header_layout_and_empty_blobs_are_not_clean():
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    btf = b.build()
    btf.header_tail = bytes([0, 0, 0, 0, 4, 0, 0, 0])
    btf.layout = bytes(4)
    assert verdicts(writer.write(btf))[0] is False
    assert verdicts(writer.write(BtfBuilder().build()))[0] is False


@pytest.mark.parametrize("name", list(rules.ODD_BASES))
def test_odd_bases_are_not_clean_where_the_reference_finds_fault(name, tmp_path):
    """A base FLOAT of size 0 as a member, a DECL_TAG on a parameter of a base FUNC of type
    0: the reference reports them (it raised before), the C never says clean, and `check`
    prints the same finding line compiled and pure."""
    make_base, make_module, _ = rules.ODD_BASES[name]
    for_c, for_python = rules.over_base(make_base, make_module)
    violations = validator.validate_in_python(for_python)
    clean = validator.compiled_clean(for_c)
    assert clean is not None
    assert clean == (not violations), violations
    mod, base = tmp_path / "mod.btf", tmp_path / "base.btf"
    mod.write_bytes(writer.write(for_python))
    base.write_bytes(writer.write(for_python.base))
    compiled = run_check(str(mod), "--base", str(base), pure=False)
    assert compiled == run_check(str(mod), "--base", str(base), pure=True)
    assert compiled[0] == (1 if violations else 0)
    assert b"Traceback" not in compiled[1]
    assert len(compiled[1].splitlines()) == 1, compiled[1]


@pytest.mark.parametrize("depth", [10, 64, 65, 200])
def test_deep_base_chains(depth):
    """A base typedef chain is resolved on demand, recursively, as the reference does; past
    64 the C gives up (says "maybe") rather than recurse further: stricter, never wrong."""
    def base(b):
        target = b.int("int", 4, f.INT_SIGNED)
        for n in range(depth):
            target = b.typedef(f"t{n}", target)

    for_c, for_python = rules.over_base(base, lambda m: m.struct("s", 4, [("x", depth + 1, 0)]))
    assert validator.validate_in_python(for_python) == []
    assert validator.compiled_clean(for_c) is (depth <= 64)


# -- random and damaged BTF: clean in C means clean in Python --------------------------


def test_random_type_graphs():
    rnd = random.Random(1515)
    tally = Tally()
    for n in range(4000):
        tally.add(*verdicts(rules.random_btf(rnd)), n)
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
        tally.add(*verdicts(writer.write(btf), base, twin), n)
    tally.check(20, 500)


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-be", "handmade-layout"])
def test_mutated_handmade_btf(seed_name):
    seed = {"handmade": fuzzing.handmade_seed(), "handmade-be": fuzzing.handmade_seed(">"),
            "handmade-layout": fuzzing.layout_seed()}[seed_name]
    rnd = random.Random(f"check-c-{seed_name}")
    tally = Tally()
    for n in range(1500):
        blob, names = fuzzing.mutate(seed, rnd)
        tally.add(*verdicts(blob), (n, names))
    # A layout section is itself a finding ("header"): that seed is never clean.
    tally.check(0 if seed_name == "handmade-layout" else 200, 300)


def test_word_flips_in_a_real_module():
    """A small real BTF over its real base: words of its type section set to odd values."""
    base, twin = fresh_base(), fresh_base()
    seed = fuzzing.split_seed("virtio_net", corpus_path(MODULE_BLOBS[0]), BASE_61, twin)
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
        tally.add(*verdicts(bytes(data), base, twin), n)
    assert base.packed is not None
    tally.check(20, 200)


def test_semantic_mutations_of_a_real_module():
    base, twin = fresh_base(), fresh_base()
    seed = fuzzing.split_seed("virtio_net", corpus_path(MODULE_BLOBS[0]), BASE_61, twin)
    rnd = random.Random(3141)
    tally = Tally()
    for n in range(40):
        blob, names = fuzzing.semantic_mutate(seed, rnd)
        tally.add(*verdicts(blob, base, twin), (n, names))
    tally.check(20, 0)


# -- what the C refuses, and the command's output ------------------------------------


def test_inputs_the_c_does_not_take():
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    in_memory = b.build()
    assert validator.compiled_clean(in_memory) is None     # not packed by the reader
    packed = reader.parse(writer.write(in_memory))
    module = native.compiled("canonbtf._btf", "rules_clean")
    words, sections = packed.packed.words, packed.string_sections()
    assert module.rules_clean(words, 1, sections, [], b"", 0) is True
    for args in ((words, 1, sections, [words], b"", 0),        # a base without strings
                 (words, 2, sections, [], b"", 0),             # ids do not follow
                 (words[:-2], 1, sections, [], b"", 0),        # not whole words
                 (words, 1, sections, [], b"", -1)):
        with pytest.raises(ValueError):
            module.rules_clean(*args)
    two = [sections[0], (len(sections[0][1]), b"\0")]
    with pytest.raises(ValueError):
        module.rules_clean(words, 1, two, [words[:-1]], b"", 0)


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
