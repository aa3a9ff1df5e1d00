"""Fuzzing every command with mutated BTF: valid output, or exit 2 with one clean line.

Mutations come from tests/fuzzing.py (bit flips, truncation at every boundary, header
fields, huge vlen, kinds out of range, by-value cycles, self-references, ids past the end,
strings without NUL, and type-level changes that keep the BTF valid). Hypothesis draws
them with a fixed seed (derandomize), so CI runs the same few hundred inputs every time;
tools/fuzz_campaign.py runs tens of thousands. Commands run in-process through
canonbtf.cli.main (fast), a few as subprocesses to show no traceback reaches a user.
tests/test_bad_input.py covers the reader's error messages one by one; this file covers
what the other layers do with everything the reader lets through.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.canon import canonicalize
from canonbtf.check.validator import validate
from canonbtf.errors import InputError

from . import fuzzing
from .conftest import BASE_61, corpus_path, load_cached

LIMIT = 30.0  # seconds per command run: no hang, with room for a loaded CI machine
SPLIT_COMMANDS = [c for c in fuzzing.COMMANDS if c != "sort-dedup"]


def seeded(examples: int):
    """Hypothesis settings for CI: the same inputs every run, none kept between runs."""
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), print_blob=False)


STANDALONE = {
    "handmade": fuzzing.handmade_seed(),
    "handmade-be": fuzzing.handmade_seed(">"),
    "handmade-elf": fuzzing.elf_seed(),
    "handmade-layout": fuzzing.layout_seed(),
}


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def module_seed() -> fuzzing.Seed:
    """virtio_net's split BTF on its 6.1 base: real kernel types, 167 of them."""
    module = corpus_path("mod-6.1.0-56-cloud-virtio_net.btf")
    base_path = corpus_path(BASE_61.name)
    return fuzzing.split_seed("virtio_net", module, base_path, load_cached(base_path))


def bases_of(seed: fuzzing.Seed) -> dict[str, Btf]:
    return {seed.base_path: seed.base} if seed.base is not None else {}


def run_all(seed: fuzzing.Seed, blob: bytes, mutations: list[str], commands: list[str],
            directory: Path, subprocess: bool = False) -> dict[str, fuzzing.Outcome]:
    """Every command on one input; fails on the first broken rule, with the reproducer."""
    case = fuzzing.Case(seed, blob, directory, mutations)
    case.write()
    outcomes = {}
    for command in commands:
        case.clean()
        argv = case.argv(command)
        if subprocess:
            outcome = fuzzing.run_subprocess(argv, LIMIT * 3)
        else:
            outcome = fuzzing.run_in_process(argv, LIMIT, bases_of(seed))
        problems = fuzzing.judge(command, case, outcome, LIMIT * 3 if subprocess else LIMIT)
        assert not problems, (f"{seed.name} {mutations}: canonbtf {' '.join(argv)}: "
                              f"{problems}\n{outcome.error or outcome.stderr}")
        outcomes[command] = outcome
    case.clean()
    return outcomes


def test_seeds_are_valid_btf():
    for seed in STANDALONE.values():
        case = fuzzing.Case(seed, seed.file_bytes, Path("."))
        assert case.parsed() is not None
        assert len(seed.layout.records) == len(case.parsed())
    assert not validate(reader.parse(STANDALONE["handmade"].blob))


@seeded(400)
@given(seed_name=st.sampled_from(sorted(STANDALONE)), rnd=st.randoms(use_true_random=False))
def test_mutated_btf_never_crashes_any_command(seed_name, rnd, work_dir):
    seed = STANDALONE[seed_name]
    blob, mutations = fuzzing.mutate(seed, rnd)
    run_all(seed, blob, mutations, list(fuzzing.COMMANDS), work_dir)


@seeded(40)
@given(rnd=st.randoms(use_true_random=False))
def test_mutated_module_btf_never_crashes_any_command(rnd, module_seed, work_dir):
    blob, mutations = fuzzing.mutate(module_seed, rnd)
    run_all(module_seed, blob, mutations, SPLIT_COMMANDS, work_dir)


@seeded(6)
@given(rnd=st.randoms(use_true_random=False))
def test_mutated_module_btf_dedup(rnd, module_seed, work_dir):
    """sort --dedup of split BTF works through its 95k-type base: a few inputs only."""
    blob, mutations = fuzzing.mutate(module_seed, rnd)
    run_all(module_seed, blob, mutations, ["sort-dedup"], work_dir)


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-be", "virtio_net"])
def test_truncation_at_every_boundary(seed_name, work_dir, request):
    """Cut at every header field, section and record boundary (and a byte either side):
    the header promises more than is there, so reading fails with one line, exit 2."""
    seed = (request.getfixturevalue("module_seed") if seed_name == "virtio_net"
            else STANDALONE[seed_name])
    cuts = sorted({c + d for c in seed.layout.boundaries() for d in (-1, 0, 1)
                   if 0 <= c + d < len(seed.blob)})
    assert len(cuts) > 3 * len(seed.layout.records) // 2
    for cut in cuts:
        outcomes = run_all(seed, seed.blob[:cut], [f"truncate at {cut}"], ["check", "sort"],
                           work_dir)
        assert outcomes["check"].status == 2, cut


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-layout"])
def test_records_cut_off_with_a_consistent_header(seed_name, work_dir):
    """The first k records only, the header adjusted: well-formed up to the references
    into the part that is gone."""
    seed = STANDALONE[seed_name]
    lay = seed.layout
    for keep in range(len(lay.records)):
        blob = bytes(fuzzing.keep_records(bytearray(seed.blob), lay, keep))
        run_all(seed, blob, [f"first {keep} records"], list(fuzzing.COMMANDS), work_dir)


# ---- valid-but-odd BTF: what each command does with it, decided ---------------------


def odd_btf(shape: str) -> Btf:
    b = BtfBuilder()
    int_ = b.int("int", 4, f.INT_SIGNED)
    next_id = b.first_id + len(b.types)
    if shape == "struct-holds-itself":
        b.struct("node", 8, [("self", next_id, 0)])
    elif shape == "by-value-cycle-through-typedef":
        b.struct("a", 8, [("x", next_id + 1, 0)])
        b.typedef("a_t", next_id)
    elif shape == "typedef-of-itself":
        b.typedef("loop_t", next_id)
        b.struct("user", 8, [("l", next_id, 0)])
    elif shape == "pointer-to-itself":
        b.ptr(next_id)
        b.struct("user", 8, [("p", next_id, 0)])
    elif shape == "anonymous-struct-points-to-itself":
        b.ptr(next_id + 1)
        b.struct("", 16, [("next", next_id, 0), ("value", int_, 64)])
        b.typedef("node_t", next_id + 1)
    elif shape == "prototype-takes-itself":
        b.func("f", b.func_proto(int_, [("p", next_id)]))
    elif shape == "huge-padding":
        b.struct("sparse", 0x10000000, [("a", int_, 0), ("b", int_, 8 * 0x0FFFFFF0)])
    elif shape == "nested-1000-deep":
        b.struct("top", 4, [("m", next_id + 1, 0)])
        for level in range(1, 1000):
            b.struct("", 4, [("m", next_id + level + 1, 0)])
        b.struct("", 4, [("m", int_, 0)])
    elif shape == "5000-duplicates":
        for _ in range(2500):
            b.int("int", 4, f.INT_SIGNED)
            b.ptr(int_)
    return b.build()


# shape -> (rule `check` reports, or None if the kernel accepts it; does `dump -f c` refuse)
ODD_SHAPES = {
    "struct-holds-itself": ("loop", True),
    "by-value-cycle-through-typedef": ("loop", True),
    "typedef-of-itself": ("loop", True),
    "pointer-to-itself": ("loop", True),
    "anonymous-struct-points-to-itself": (None, True),
    "prototype-takes-itself": ("func-proto", True),
    "huge-padding": (None, True),
    "nested-1000-deep": ("resolve-depth", True),
    "5000-duplicates": (None, False),
}


@pytest.mark.parametrize("shape", list(ODD_SHAPES))
def test_valid_but_odd_btf(shape, work_dir):
    """Loops and absurd sizes that the reader takes: `check` names the broken rule,
    `sort` and the text dumps work, `dump -f c` refuses what C cannot spell (exit 2, one
    line), and nothing hangs."""
    seed = fuzzing.Seed(shape, writer.write(odd_btf(shape)))
    outcomes = run_all(seed, seed.blob, [shape], list(fuzzing.COMMANDS), work_dir)
    rule, c_refuses = ODD_SHAPES[shape]
    violations = validate(reader.parse(seed.blob))
    if rule is None:
        assert not violations
        assert outcomes["check"].status == 0
    else:
        assert rule in {v.rule for v in violations}
        assert outcomes["check"].status == 1
    for command in ("sort", "sort-dedup", "sort-name", "dump-raw", "dump-json"):
        assert outcomes[command].status == 0, command
    c = outcomes["dump-c"]
    if c_refuses:
        assert c.status == 2 and "cannot be written as C" in c.stderr, c.stderr
    else:
        assert c.status == 0, c.stderr


def test_tracebacks_never_reach_the_user(work_dir):
    """The same judge, through `python -m canonbtf`: a rejected blob, a loop the reader
    takes, and a blob that stays valid."""
    seed = STANDALONE["handmade"]
    inputs = []
    for index in range(400):
        blob, mutations = fuzzing.mutate(seed, random.Random(index))
        case = fuzzing.Case(seed, blob, work_dir, mutations)
        kind = "rejected" if case.parsed() is None else "valid" if case.valid() else "odd"
        if kind not in {k for k, _, _ in inputs}:
            inputs.append((kind, blob, mutations))
        if len(inputs) == 3:
            break
    assert len(inputs) == 3
    for _, blob, mutations in inputs:
        run_all(seed, blob, mutations, list(fuzzing.COMMANDS), work_dir, subprocess=True)


# ---- the kernel's verdict survives sorting ---------------------------------------------


def assert_kernel_keeps_accepting(btf: Btf) -> bool:
    """Whether the kernel accepts `btf`; if it does, it must accept sort's and
    sort --dedup's output too."""
    from canonbtf.btf.kernel import check_btf

    before = check_btf(btf)
    if before.accepted is None:
        pytest.skip(f"cannot ask the kernel: {before.summary()}")
    if not before.accepted:
        return False
    for dedup in (False, True):
        out = reader.parse(writer.write(canonicalize(btf, dedup=dedup)), "sorted", btf.base)
        after = check_btf(out)
        assert after.accepted, f"dedup={dedup}: {after.summary()}\n{after.log_tail}"
    return True


def test_kernel_accepts_sorted_fuzzed_btf_when_it_accepts_the_input():
    """Seeded mutations, mostly type-level ones that keep the blob loadable."""
    seed = STANDALONE["handmade"]
    accepted = 0
    for index in range(60):
        rnd = random.Random(index)
        mutate = fuzzing.semantic_mutate if index % 5 else fuzzing.mutate
        blob, _ = mutate(seed, rnd)
        try:
            btf = reader.parse(blob)
        except InputError:
            continue
        accepted += assert_kernel_keeps_accepting(btf)
    assert accepted >= 20


def test_kernel_accepts_sorted_fuzzed_module_when_it_accepts_the_input(module_seed):
    accepted = 0
    for index in range(6):
        blob, _ = fuzzing.semantic_mutate(module_seed, random.Random(index))
        accepted += assert_kernel_keeps_accepting(reader.parse(blob, "module",
                                                               module_seed.base))
    assert accepted >= 2


def test_kernel_accepts_the_seed():
    assert assert_kernel_keeps_accepting(reader.parse(STANDALONE["handmade"].blob))


def test_a_name_read_through_the_middle_of_a_base_string_sorts_like_the_whole_name():
    """Found by the campaign: a module name pointing at the tail of a base string ("bar"
    inside "foo_bar") made sort's string offsets depend on which offsets had been read
    before, so the same types gave different bytes."""
    from canonbtf.btf.model import Type
    from canonbtf.btf.strings import StringTable

    b = BtfBuilder()
    int_ = b.int("int", 4, f.INT_SIGNED)
    b.typedef("foo_bar", int_)
    b.typedef("bar", int_)
    base_blob = writer.write(b.build())
    outputs = set()
    for name_off in (13, 9):  # "bar" as a whole string, and inside "foo_bar"
        base = reader.parse(base_blob)
        assert base.name(name_off) == "bar"
        module = Btf([Type(f.STRUCT, name_off, 0, 4, 0, [(0, int_, 0)])],
                     StringTable(b"", base.strings.end), base)
        blob = writer.write(module)
        outputs.add(writer.write(canonicalize(reader.parse(blob, "module", base))))
    assert len(outputs) == 1
