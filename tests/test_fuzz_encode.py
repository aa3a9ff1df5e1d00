"""Fuzzing `encode` with damaged object files: valid BTF out, or exit 2 with one line.

The inputs are golden objects (golden/obj, gcc and clang, DWARF 4 and 5) with their ELF
or DWARF damaged: bits flipped in .debug_info, .debug_abbrev and the string sections,
unit lengths and abbreviation offsets pointing anywhere, words of .debug_info (among
them the references between DIEs) set to values outside the unit, section headers
pointing past the end, the file cut at every section boundary. tests/test_encode.py
covers the hand-made cases with their exact messages; this is the seeded random part.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import fuzzing
from .conftest import REPO

LIMIT = 30.0  # seconds per run: no hang, with room for a loaded CI machine


@pytest.fixture(scope="module")
def seeds() -> dict[str, fuzzing.ElfSeed]:
    paths = [REPO / "golden" / "obj" / name for name in fuzzing.GOLDEN_OBJECTS]
    present = {p.name: fuzzing.ElfSeed(p) for p in paths if p.exists()}
    if not present:
        pytest.skip("golden objects are not present")
    return present


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz-encode")


def encode_case(seed: fuzzing.ElfSeed, rnd: random.Random, directory: Path, jobs: str,
                subprocess: bool) -> None:
    data, mutation = fuzzing.mutate_object(seed, rnd)
    path = directory / "input.o"
    out = directory / "out.btf"
    for old in directory.iterdir():
        old.unlink()
    path.write_bytes(data)
    argv = ["encode", "-j", jobs, str(path), "-o", str(out)]
    if subprocess:
        outcome = fuzzing.run_subprocess(argv, LIMIT * 3)
    else:
        outcome = fuzzing.run_in_process(argv, LIMIT)
    problems = fuzzing.judge_encode(outcome, out, directory, LIMIT)
    assert not problems, f"{seed.name}, {mutation}: {problems}\n{outcome.error or outcome.stderr}"


@settings(max_examples=150, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck), print_blob=False)
@given(seed_name=st.sampled_from(fuzzing.GOLDEN_OBJECTS), rnd=st.randoms(use_true_random=False))
def test_damaged_object_files_encode_or_fail_cleanly(seed_name, rnd, seeds, work_dir):
    seed = seeds.get(seed_name) or next(iter(seeds.values()))
    encode_case(seed, rnd, work_dir, "1", subprocess=False)


@pytest.mark.parametrize("index", range(4))
def test_damaged_object_files_with_workers(index, seeds, work_dir):
    """Two worker processes, as a user runs it: a failing worker ends the run cleanly."""
    seed = seeds.get("multi.gcc-dwarf5.o") or next(iter(seeds.values()))
    encode_case(seed, random.Random(index), work_dir, "2", subprocess=True)
