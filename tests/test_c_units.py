"""The Python-free C without an interpreter, under ASan/UBSan: tests/c's unit tests, the
validator's verdicts against check/validator.py, and the libFuzzer targets for a short
budget.

tests/c/Makefile builds the runtime (native/csrc/grow.c, hash.c, intern.c), the BTF view
(btf/csrc/types.c), the validator (check/csrc/check.c), canon/csrc/, the C header's
emitter (emit/c/csrc/cdump.c), the keyed merge (dwarf/csrc/merge.c) and the DWARF core's
other plain parts (dwarf/csrc/reloc.c, symtab.c, pool.c; fuzz_encoder: the encoder's
read.c, convert.c, keys.c) into plain C programs with gcc -fsanitize=address,undefined (a
report stops the program). Judges: the kernel, which
loaded the corpus and /sys/kernel/btf/vmlinux (test_check: no finding);
check/validator.py, the reference, whose
verdict on every real, handmade and damaged blob check_verdicts must give (the same
findings, type by type, or the same refusal); docs/ORDER.md taken literally (test_canon's
known orders, and the same bytes for every permutation of the input's ids); and
emit/c/spell.py, whose definitions (text, mentions, enumerators) test_cdump must give on
its handmade BTF, the golden objects and a corpus vmlinux; keys.py's rules for the keyed
merge (test_merge's unsafe keys and folded declarations) and the BTF format (its words);
for test_dwarf, the ELF layouts of relocations and symbols worked by hand, and the
components and cycle classes of its graphs as fragment._strongly_connected and
canon/refine.py's Partition give them.
"""

from __future__ import annotations

import functools
import os
import random
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from canonbtf.btf import reader, writer
from canonbtf.btf.model import Btf
from canonbtf.check import validator
from canonbtf.dwarf.encode import encode_file
from canonbtf.dwarf.sections import open_dwarf
from canonbtf.emit.c import header as c_header
from canonbtf.emit.c.shape import c_shape_problem
from canonbtf.errors import InputError
from canonbtf.spec.messages import MESSAGES

from . import fuzzing
from .conftest import (
    BASE_61,
    MODULE_BLOBS,
    REPO,
    VMLINUX_BLOBS,
    corpus_path,
    real_inputs,
    resolve_input,
)

C_TESTS = REPO / "tests" / "c"
FUZZ_TARGETS = ["fuzz_view", "fuzz_check", "fuzz_canon", "fuzz_diff", "fuzz_cdump",
                "fuzz_dwarf", "fuzz_encoder"]
FUZZ_SECONDS = 5          # per target: about 35 s for the seven
# Small golden objects whose encoded BTF seeds the fuzz targets and the verdicts.
GOLDEN_SEEDS = ["all.gcc-dwarf5", "arrays.clang-dwarf5", "bitfields.gcc-dwarf4",
                "enums.clang-dwarf5", "funcptr.gcc-dwarf5", "kfuncs.gcc-dwarf5"]


def own_sanitizers() -> dict[str, str]:
    """The environment without a preloaded sanitizer runtime (.ci/run preloads gcc's for
    the extension's tests): these programs link their own, and clang's would clash."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def make(out: Path, *goals: str, **variables: str) -> subprocess.CompletedProcess:
    """tests/c/Makefile's `goals` built into `out`."""
    make_path = shutil.which("make")
    if make_path is None:
        pytest.skip("make is not installed")
    args = [make_path, "-s", "-C", str(C_TESTS), f"OUT={out}", *goals]
    args += [f"{name}={value}" for name, value in variables.items()]
    return subprocess.run(args, capture_output=True, text=True, timeout=600,
                          env=own_sanitizers())


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The unit tests and check_verdicts, built with gcc and the sanitizers."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    out = tmp_path_factory.mktemp("c-units")
    done = make(out, "-j2", "all", CC="gcc")
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def run(program: Path, *args: str, timeout: int = 300) -> str:
    """`program`'s output; it must exit 0 (a failed CHECK or a sanitizer report does not)."""
    done = subprocess.run([str(program), *args], capture_output=True, text=True,
                          timeout=timeout, env=own_sanitizers())
    assert done.returncode == 0, f"{program.name} {args}: {done.stdout}{done.stderr}"
    return done.stdout


@pytest.mark.parametrize("unit", ["test_runtime", "test_view", "test_check", "test_canon",
                                  "test_cdump", "test_merge", "test_dwarf"])
def test_unit(built, unit):
    """Each program's own cases (handmade blobs, known answers); it prints one line per
    case and the count of checks."""
    out = run(built / unit)
    assert re.search(r": [1-9]\d* checks, 0 failed$", out.strip()), out


@pytest.mark.parametrize("name", real_inputs())
def test_real_blob(built, name):
    """BTF the kernel loaded: indexed, every reference and name in bounds, no finding;
    cut and damaged copies refused or indexed in bounds, with well-formed findings."""
    path, base = resolve_input(name)
    arg = f"{path}:{base}" if base else str(path)
    for unit in ("test_view", "test_check"):
        out = run(built / unit, arg)
        assert f"ok   real_blob {path}" in out, out


# ---- the validator's verdicts, C against the reference ------------------------------


def reference_verdict(blob: bytes, base: Btf | None) -> list[tuple] | str:
    """check/validator.py's findings on the blob's types as (id, kind, rule), or "refused"
    when the reader refuses the blob (the blob's own checks are not the C's)."""
    try:
        btf = reader.parse(blob, "<test>", base)
    except InputError:
        return "refused"
    return [(v.type_id, v.kind, v.rule) for v in validator.validate_in_python(btf)
            if v.type_id is not None]


def c_verdicts(built: Path, paths: list[Path], base: Path | None) -> list[list[tuple] | str]:
    """check_verdicts' verdict on each of `paths`, worded as reference_verdict words it:
    "not-btf" and "refused" are both "refused"; "unsure" stays."""
    out = run(built / "check_verdicts", str(base) if base else "-", *map(str, paths))
    verdicts: list[list[tuple] | str] = []
    for line in out.splitlines():
        if line.startswith("# "):
            verdicts.append([])
        elif line in ("not-btf", "refused", "unsure"):
            verdicts[-1] = "unsure" if line == "unsure" else "refused"
        else:
            type_id, kind, key = line.split()
            verdicts[-1].append((int(type_id), int(kind), MESSAGES[key][0]))
    assert len(verdicts) == len(paths), out
    return verdicts


def agree(built: Path, tmp_path: Path, blobs: list[bytes], base_path: Path | None,
          base: Btf | None) -> Counter:
    """Both verdicts on every blob, which must be the same (unless the C is unsure);
    returns how they fell."""
    paths = []
    for n, blob in enumerate(blobs):
        paths.append(tmp_path / f"blob{n}.btf")
        paths[-1].write_bytes(blob)
    tally: Counter[str] = Counter()
    for path, blob, compiled in zip(paths, blobs, c_verdicts(built, paths, base_path)):
        if compiled == "unsure":
            tally["unsure"] += 1
            continue
        assert compiled == reference_verdict(blob, base), path
        tally["refused" if compiled == "refused" else "findings" if compiled else "clean"] += 1
    return tally


@functools.cache
def golden_blobs() -> dict[str, bytes]:
    """Small real BTF: golden objects encoded, and the handmade blob of every kind in both
    byte orders and with the 2026 layout header (made once: the verdicts and the seeds)."""
    blobs = {name: writer.write(encode_file(str(REPO / "golden" / "obj" / f"{name}.o"), 1)[0])
             for name in GOLDEN_SEEDS}
    blobs["handmade"] = fuzzing.handmade_seed().blob
    blobs["handmade-be"] = fuzzing.handmade_seed(">").blob
    blobs["handmade-layout"] = fuzzing.layout_seed().blob
    return blobs


def test_verdicts_on_small_real_btf(built, tmp_path):
    blobs = golden_blobs()
    tally = agree(built, tmp_path, list(blobs.values()), None, None)
    # The layout header is a blob finding only: every one of these has clean types.
    assert tally == Counter(clean=len(blobs)), tally


@pytest.mark.parametrize("seed_name", ["handmade", "handmade-be", "handmade-layout"])
def test_verdicts_on_damaged_btf(built, tmp_path, seed_name):
    """tests/fuzzing.py's mutations (header fields, kinds, vlens, ids, names, cycles,
    strings, moved and cut records) of the handmade blob."""
    seed = {"handmade": fuzzing.handmade_seed(), "handmade-be": fuzzing.handmade_seed(">"),
            "handmade-layout": fuzzing.layout_seed()}[seed_name]
    rnd = random.Random(f"c-units-{seed_name}")
    blobs = [fuzzing.mutate(seed, rnd)[0] for _ in range(400)]
    tally = agree(built, tmp_path, blobs, None, None)
    assert min(tally["refused"], tally["findings"], tally["clean"]) >= 20, tally


def test_verdicts_on_a_damaged_module(built, tmp_path):
    """A real split BTF over its real base, and 300 damaged copies of it."""
    module_path = corpus_path(MODULE_BLOBS[0])
    base = reader.load(str(BASE_61))
    seed = fuzzing.split_seed("virtio_net", module_path, BASE_61, base)
    rnd = random.Random(29)
    blobs = [seed.blob] + [fuzzing.mutate(seed, rnd)[0] for _ in range(300)]
    tally = agree(built, tmp_path, blobs, BASE_61, base)
    assert min(tally["refused"], tally["findings"], tally["clean"]) >= 10, tally


# ---- the C header's definitions, C against the reference ------------------------------


class _FirstPass(c_header._Header):
    """The reference's header (compiled=None: emit/c/spell.py) stopped after its first
    pass, whose definitions cdump_definitions gives: no `___N` names yet."""

    def _render_again(self, ids: list[int]) -> None:
        pass


def reference_definitions(path: Path) -> tuple[bool, list[tuple]]:
    """(whether c_shape_problem finds nothing, [(id, text, mentions, enumerators)] of
    every definition in id order) by the Python reference."""
    btf = reader.load(str(path))
    header = _FirstPass(btf, None, None, None)
    spelled = [(d, header.text[d], [tuple(r) for r in header.refs[d]],
                header.enumerators[d]) for d in header.defs]
    return c_shape_problem(btf) is None, spelled


def c_definitions(built: Path, path: Path) -> tuple[int, list[tuple]]:
    """test_cdump --spell's shape check and definitions of `path`."""
    lines = run(built / "test_cdump", "--spell", str(path)).splitlines()
    assert lines[0] == f"# {path}" and lines[1].startswith("shape "), lines[:2]
    spelled = []
    for line in lines[2:]:
        head, enumerators = line.split(" |")
        _, d, text, *mentions = head.split(" ")
        spelled.append((int(d), bytes.fromhex(text).decode("latin-1"),
                        [tuple(map(int, m.split(":"))) for m in mentions],
                        [bytes.fromhex(e).decode("latin-1") for e in enumerators.split()]))
    return int(lines[1].split()[1]), spelled


def assert_same_definitions(built: Path, path: Path) -> int:
    """The C's definitions are the reference's, and its shape check passes only what the
    reference's does; returns how many definitions."""
    shape, spelled = c_definitions(built, path)
    reference_shape, reference = reference_definitions(path)
    assert reference_shape or not shape, path
    assert spelled == reference, path
    return len(spelled)


def test_cdump_definitions_on_small_btf(built, tmp_path):
    """test_cdump's handmade BTF (every kind a header spells: bit-fields, padding, an
    inline anonymous enum, enum sizes, type tags, a kfunc) and the golden objects."""
    run(built / "test_cdump", "--write", str(tmp_path))
    paths = [tmp_path / "handmade-header.btf"]
    for name, blob in golden_blobs().items():
        paths.append(tmp_path / f"{name}.btf")
        paths[-1].write_bytes(blob)
    counts = [assert_same_definitions(built, path) for path in paths]
    assert counts[0] == 11 and sum(counts) > 50, counts


def test_cdump_definitions_on_a_vmlinux(built):
    assert assert_same_definitions(built, corpus_path(VMLINUX_BLOBS[0])) > 10000


# ---- libFuzzer targets ----------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_built(tmp_path_factory) -> Path:
    """The fuzz targets, built with clang's libFuzzer and the sanitizers."""
    clang = shutil.which("clang-14") or shutil.which("clang")
    if clang is None:
        pytest.skip("clang is not installed (libFuzzer targets)")
    out = tmp_path_factory.mktemp("c-fuzz")
    done = make(out, "-j2", "fuzz", FUZZ_CC=clang)
    if done.returncode and "libclang_rt.fuzzer" in done.stderr:
        pytest.skip(f"{clang} cannot link libFuzzer: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def seed_corpus(tmp_path_factory) -> Path:
    """The seeds: the small real blobs; a split one (a golden object encoded over another's
    BTF) written after its base, where the targets look for a split BTF; and pairs of
    blobs, fuzz_diff's two sides."""
    out = tmp_path_factory.mktemp("c-fuzz-seeds")
    blobs = golden_blobs()
    for name, blob in blobs.items():
        (out / f"{name}.btf").write_bytes(blob)
    base = reader.parse(blobs["all.gcc-dwarf5"], "base")
    split, _ = encode_file(str(REPO / "golden" / "obj" / "funcs_a.gcc-dwarf5.o"), 1, base=base)
    (out / "funcs_a-over-all.btf").write_bytes(blobs["all.gcc-dwarf5"] + writer.write(split))
    names = sorted(blobs)
    for old, new in zip(names, names[1:] + names[:1]):
        (out / f"{old}-then-{new}.btf").write_bytes(blobs[old] + blobs[new])
    return out


def write_dwarf_seeds(out: Path) -> None:
    """fuzz_encoder's seeds: the golden objects' DWARF as it takes it (a byte of flags,
    the 16-bit lengths of .debug_abbrev, .debug_str and the blob for the other sections,
    then those and .debug_info), with and without keys, registers and type tags."""
    for path in sorted((REPO / "golden" / "obj").glob("*.o")):
        dwarf = open_dwarf(str(path))
        parts = [dwarf.abbrev, dwarf.str, dwarf.str_offsets or dwarf.line_str]
        if max(map(len, parts)) > 0xFFFF:
            continue
        head = b"".join(len(part).to_bytes(2, "little") for part in parts)
        for flags in (0b01011, 0b11111):  # little-endian, symbols, keys (+registers, tags)
            seed = bytes([flags]) + head + b"".join(parts) + dwarf.info
            if len(seed) <= 8192:
                (out / f"{path.stem}-{flags}.dwarf").write_bytes(seed)


@pytest.mark.parametrize("target", FUZZ_TARGETS)
def test_fuzz_target(fuzz_built, seed_corpus, target, tmp_path):
    """A few seconds of fuzzing from the seeds, then every input of tests/c/crashes/ (what
    longer runs once found) again: no sanitizer report, no failed property."""
    corpus = tmp_path / "corpus"
    shutil.copytree(seed_corpus, corpus)
    if target == "fuzz_encoder":
        write_dwarf_seeds(corpus)
    program = str(fuzz_built / target)
    done = subprocess.run(
        [program, str(corpus), f"-max_total_time={FUZZ_SECONDS}", "-max_len=8192",
         "-timeout=10", "-rss_limit_mb=2048", "-seed=29", "-print_final_stats=1",
         f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, timeout=FUZZ_SECONDS + 120, env=own_sanitizers())
    assert done.returncode == 0, done.stderr[-4000:]
    executed = re.search(r"stat::number_of_executed_units:\s*(\d+)", done.stderr)
    assert executed and int(executed.group(1)) > 1000, done.stderr[-2000:]
    crashes = sorted((C_TESTS / "crashes").glob("*"))
    if crashes:
        replay = subprocess.run([program, *map(str, crashes)], capture_output=True, text=True,
                                timeout=120, env=own_sanitizers())
        assert replay.returncode == 0, replay.stderr[-4000:]
