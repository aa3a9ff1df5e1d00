"""`canonbtf encode`: DWARF -> canonical BTF, the same bytes for every -j and unit order.

Judges: the golden objects compiled by gcc and clang (golden/rebuild.sh), their expected
dumps (golden/expected), pahole 1.24's BTF for the same objects, pyelftools' own DIE
decoder, the running kernel (BPF_BTF_LOAD) and, when fetched, the 6.1 kernel's DWARF
beside the BTF its build made with pahole.

Regenerate the expected dumps after a deliberate change:
    python -m tests.test_encode --regenerate
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.canon import canonicalize
from canonbtf.dwarf.convert import ConvertContext
from canonbtf.dwarf.core import new_encoder, unit_fields
from canonbtf.dwarf.dies import DieReader, read_sleb, read_uleb
from canonbtf.dwarf.encode import SHUFFLE_ENV, encode_dwarf, encode_file
from canonbtf.dwarf.features import parse_features
from canonbtf.dwarf.reference import ReferenceReader
from canonbtf.dwarf.sections import open_dwarf
from canonbtf.emit.raw import dump_raw

from .conftest import REPO, corpus_path, fetched_kernel, fetched_kernel_sample, need_tool
from .libbpf import libbpf_dedup_count

GOLDEN = REPO / "golden"
OBJECTS = sorted((GOLDEN / "obj").glob("*.o"))
EXPECTED = GOLDEN / "expected"
MULTI_UNIT = GOLDEN / "obj" / "all.gcc-dwarf5.o"
# pahole 1.24 refuses these (_Atomic, complex floats); they test skipping instead.
PAHOLE_REFUSES = ("unsupported.",)
KERNEL_BTF = "vmlinux-6.1.0-56-cloud-amd64.btf"
# Types only: functions and variables are compared with pahole in test_encode_funcs.py.
TYPES_ONLY = parse_features("-func,-var,-decl_tag_kfuncs")

_encoded: dict[str, bytes] = {}


def encoded(path: Path, jobs: int = 1) -> bytes:
    """Our canonical BTF for a golden object (encoded once per session)."""
    key = f"{path}|{jobs}"
    if key not in _encoded:
        btf, _ = encode_file(str(path), jobs)
        _encoded[key] = writer.write(btf)
    return _encoded[key]


def raw_text(blob: bytes) -> str:
    out = io.StringIO()
    dump_raw(reader.parse(blob), out)
    return out.getvalue()


def object_ids(paths: list[Path]) -> list:
    return [pytest.param(p, id=p.name) for p in paths]


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "canonbtf", *args], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, **(env or {})}, timeout=300)


# -- golden objects ------------------------------------------------------------------


def test_golden_objects_are_present():
    assert len(OBJECTS) >= 40, "run golden/rebuild.sh"


@pytest.mark.parametrize("path", object_ids(OBJECTS))
def test_matches_expected_dump(path):
    expected = EXPECTED / (path.stem + ".txt")
    assert raw_text(encoded(path)) == expected.read_text(encoding="latin-1")


@pytest.mark.parametrize("path", object_ids(OBJECTS))
def test_fast_reader_agrees_with_pyelftools(path):
    dwarf = open_dwarf(str(path), for_reference=True)
    fast, reference = DieReader(dwarf), ReferenceReader(dwarf)
    for unit in dwarf.units:
        assert fast.read_unit(unit).types == reference.read_unit(unit).types
    assert fast.skipped_tags == reference.skipped_tags


def test_whole_encode_agrees_with_pyelftools_reader():
    btf, _ = encode_file(str(MULTI_UNIT), 1, reader="pyelftools")
    assert writer.write(btf) == encoded(MULTI_UNIT)


@pytest.mark.parametrize("jobs", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_same_bytes_for_every_jobs_and_unit_order(jobs, seed):
    dwarf = open_dwarf(str(MULTI_UNIT))
    assert len(dwarf.units) >= 10
    btf, stats = encode_dwarf(dwarf, jobs, seed)
    assert writer.write(btf) == encoded(MULTI_UNIT)
    assert stats.units == len(dwarf.units)


def test_declarations_resolve_across_units():
    text = raw_text(encoded(GOLDEN / "obj" / "multi.gcc-dwarf5.o"))
    assert "FWD" not in text  # each unit declares what the other defines
    assert text.count("STRUCT 'private_state'") == 2  # two definitions stay two


def test_never_defined_declarations_stay():
    text = raw_text(encoded(GOLDEN / "obj" / "recursion.gcc-dwarf5.o"))
    for line in ("FWD 'opaque' fwd_kind=struct", "FWD 'opaque_union' fwd_kind=union",
                 "FWD 'never_defined' fwd_kind=struct"):
        assert line in text


def mutual_declarations(second_b_layout: bool) -> Btf:
    """Three units' types side by side: unit 1 defines A and declares B, unit 2 defines B
    and declares A, unit 3 defines both (B with another layout if asked)."""
    b = BtfBuilder()
    i32 = b.int("int", 4, f.INT_SIGNED)
    fwd_b = b.fwd("B")
    b.struct("A", 8, [("b", b.ptr(fwd_b), 0)])
    fwd_a = b.fwd("A")
    b.struct("B", 8, [("a", b.ptr(fwd_a), 0)])
    ptr_a3 = b.ptr(0)
    b3_members = [("a", ptr_a3, 0)] + ([("x", i32, 64)] if second_b_layout else [])
    b3 = b.struct("B", 16 if second_b_layout else 8, b3_members)
    a3 = b.struct("A", 8, [("b", b.ptr(b3), 0)])
    b.types[ptr_a3 - 1].size_or_type = a3
    return b.build()


def test_declarations_resolve_even_when_each_unit_declares_the_other():
    """Dedup resolves a FWD while its name's definitions are one type under
    that same hypothesis (greatest fixpoint); resolving only names already unambiguous
    (least fixpoint) would keep two A and two B here."""
    merged = canonicalize(mutual_declarations(False), dedup=True)
    assert sorted(f.kind_name(t.kind) for t in merged.types) == [
        "INT", "PTR", "PTR", "STRUCT", "STRUCT"]


def test_declarations_of_an_ambiguous_name_resolve_in_context():
    merged = canonicalize(mutual_declarations(True), dedup=True)
    kinds = [(f.kind_name(t.kind), merged.name(t.name_off)) for t in merged.types]
    # Two layouts of B: FWD B cannot resolve by name, but the A holding it has a single
    # twin holding a definition (the third unit's) and merges into it, as libbpf's dedup
    # does (canon/twins.py); then A has one definition and FWD A resolves too.
    assert kinds.count(("STRUCT", "B")) == 2 and kinds.count(("STRUCT", "A")) == 1
    assert not any(kind == "FWD" for kind, _ in kinds)
    assert len(merged.types) <= libbpf_dedup_count(writer.write(mutual_declarations(True)))


def test_progress_goes_to_stderr_when_asked(capsys):
    encode_dwarf(open_dwarf(str(MULTI_UNIT)), 2, progress=True)
    err = capsys.readouterr().err
    assert f"encoding: {len(open_dwarf(str(MULTI_UNIT)).units)}/" in err
    assert err.endswith("\n")


# -- pahole as the judge ---------------------------------------------------------------


def without_functions(btf: Btf) -> Btf:
    """pahole's BTF minus functions and variables (`TYPES_ONLY`): FUNC, VAR, DATASEC, the
    decl tags on them, and the FUNC_PROTOs only FUNCs use."""
    all_types = btf.all_types()
    dropped = {i for i, t in btf.own() if t.kind in (f.FUNC, f.VAR, f.DATASEC)}
    dropped |= {i for i, t in btf.own() if t.kind == f.DECL_TAG and t.size_or_type in dropped}
    used = {r for i, t in btf.own() if i not in dropped for r in t.refs()}
    dropped |= {t.size_or_type for i, t in btf.own()
                if t.kind == f.FUNC and t.size_or_type not in used}
    kept = [i for i, _ in btf.own() if i not in dropped]
    new_id = [0] * len(all_types)
    for position, i in enumerate(kept, 1):
        new_id[i] = position
    return Btf([all_types[i].remap(new_id) for i in kept], btf.strings)


def pahole_btf(path: Path, tmp_path: Path) -> Btf:
    out = tmp_path / (path.stem + ".pahole.btf")
    subprocess.run([need_tool("pahole"), "--btf_gen_floats", f"--btf_encode_detached={out}",
                    str(path)], check=True, capture_output=True, timeout=120)
    return reader.load(str(out))


@pytest.mark.parametrize("path", object_ids(
    [p for p in OBJECTS if not p.name.startswith(PAHOLE_REFUSES)]))
def test_same_types_as_pahole(path, tmp_path):
    theirs = canonicalize(without_functions(pahole_btf(path, tmp_path)), dedup=True)
    ours, _ = encode_file(str(path), 1, features=TYPES_ONLY)
    assert raw_text(writer.write(ours)) == raw_text(writer.write(theirs))


# -- what BTF cannot say, bad input, failing workers -----------------------------------


def test_unsupported_types_are_skipped_and_counted(tmp_path):
    out = tmp_path / "out.btf"
    result = run_cli("encode", "-j1", "-o", str(out),
                     str(GOLDEN / "obj" / "unsupported.gcc-dwarf5.o"))
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert "types (" in lines[0] and "from 1 units" in lines[0]
    assert "skipped:" in lines[1]
    assert "_Atomic qualifier dropped x2" in lines[1]
    assert "complex float base type x1" in lines[1]
    assert "member of a skipped type left out x1" in lines[1]
    text = raw_text(out.read_bytes())
    assert "'counter'" in text and "'after'" in text and "'z'" not in text


def corrupt_copy(tmp_path: Path, patch) -> Path:
    """A copy of a golden object with bytes of its .debug_info or .debug_abbrev changed."""
    from elftools.elf.elffile import ELFFile

    source = GOLDEN / "obj" / "multi.gcc-dwarf5.o"
    data = bytearray(source.read_bytes())
    with open(source, "rb") as fh:
        elf = ELFFile(fh)
        sections = {s.name: (s["sh_offset"], s["sh_size"]) for s in elf.iter_sections()}
    patch(data, sections)
    path = tmp_path / "corrupt.o"
    path.write_bytes(bytes(data))
    return path


def second_unit_offset(data: bytes, info_offset: int) -> int:
    return info_offset + 4 + int.from_bytes(data[info_offset:info_offset + 4], "little")


def bad_version(data: bytearray, sections: dict) -> None:
    info = sections[".debug_info"][0]
    data[info + 4:info + 6] = (7).to_bytes(2, "little")


def bad_abbrev_code(data: bytearray, sections: dict) -> None:
    """The second unit's first DIE uses an abbreviation code no table defines."""
    info = sections[".debug_info"][0]
    second = second_unit_offset(data, info)
    die = second + 12  # DWARF 5 unit header: length, version, unit type, addr size, abbrev
    data[die] = 0x7E


def bad_form(data: bytearray, sections: dict) -> None:
    """The first abbreviation's first attribute gets a form number DWARF does not have."""
    abbrev = sections[".debug_abbrev"][0]
    # code, tag, children flag, then (attribute, form) pairs; all single-byte here.
    data[abbrev + 4] = 0x7D


@pytest.mark.parametrize("patch,message", [
    (bad_version, "DWARF version 7 is not supported"),
    (bad_abbrev_code, "abbreviation code 126"),
    (bad_form, "unknown attribute form 0x7d"),
])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_unreadable_dwarf_is_one_line_and_no_output(tmp_path, patch, message, jobs):
    path = corrupt_copy(tmp_path, patch)
    out = tmp_path / "out.btf"
    result = run_cli("encode", "-j", jobs, "-o", str(out), str(path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert str(path) in result.stderr and message in result.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def compile_c(path: Path, *flags: str) -> None:
    subprocess.run([need_tool("gcc"), "-c", "-x", "c", "-o", str(path), *flags, "-"],
                   input=b"struct s { int a; long b; } v;\n", check=True,
                   capture_output=True)


@pytest.mark.parametrize("make,message", [
    (lambda p: p.write_bytes(b"not an elf at all\n"), "not an ELF file"),
    (lambda p: compile_c(p), "no .debug_info section"),
    (lambda p: compile_c(p, "-g", "-gdwarf-4", "-fdebug-types-section"),
     "has DWARF 4 type units (.debug_types"),
    (lambda p: compile_c(p, "-g", "-gdwarf-5", "-fdebug-types-section"),
     "has several .debug_info sections (COMDAT type units"),
], ids=["not-elf", "no-debug-info", "dwarf4-type-units", "dwarf5-type-units"])
def test_bad_input_files(tmp_path, make, message):
    path = tmp_path / "input"
    make(path)
    out = tmp_path / "out.btf"
    result = run_cli("encode", "-o", str(out), str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(f"canonbtf: {path}: {message}")
    assert result.stderr.count("\n") == 1
    assert not out.exists()


def test_missing_file_and_terminal_refusal(tmp_path):
    result = run_cli("encode", "-o", str(tmp_path / "o"), str(tmp_path / "missing.o"))
    assert result.returncode == 2 and "no such file" in result.stderr
    result = run_cli("encode", "-j", "0", "-o", str(tmp_path / "o"), str(MULTI_UNIT))
    assert result.returncode == 2 and "-j must be at least 1" in result.stderr


def test_failing_worker_stops_the_run_without_orphans(tmp_path):
    import multiprocessing

    path = corrupt_copy(tmp_path, bad_abbrev_code)
    from canonbtf.errors import InputError

    dwarf = open_dwarf(str(path))
    with pytest.raises(InputError, match="abbreviation code 126"):
        encode_dwarf(dwarf, 2)
    assert multiprocessing.active_children() == []


def test_worker_that_dies_stops_the_run_without_orphans(monkeypatch):
    import multiprocessing

    from canonbtf.dwarf import encode
    from canonbtf.errors import InputError

    monkeypatch.setattr(encode._Worker, "encode_batch", lambda *args: os._exit(3))
    with pytest.raises(InputError, match="worker process died unexpectedly"):
        encode_dwarf(open_dwarf(str(MULTI_UNIT)), 2)
    assert multiprocessing.active_children() == []


# Runs the CLI with every worker stuck in its first batch, so that Ctrl-C lands while
# workers are certainly alive (the fork start method gives them the patched method).
_STUCK_WORKERS = """
import sys, time
from canonbtf.dwarf import encode
encode._Worker.encode_batch = lambda *args: time.sleep(600)
from canonbtf.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(child) for child in fh.read().split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_ctrl_c_stops_every_worker_and_leaves_no_output(tmp_path):
    """Ctrl-C at a terminal signals the whole foreground process group: the workers
    ignore it, the parent stops them, prints one line, exits 130 and writes nothing."""
    import signal
    import time

    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("/proc does not list child processes here")
    out = tmp_path / "out.btf"
    # A shell's background job ignores SIGINT, and Python keeps an inherited "ignore":
    # give the command Ctrl-C as a terminal would, however the tests were started.
    proc = subprocess.Popen([sys.executable, "-c", _STUCK_WORKERS, "encode", "-j2",
                             str(MULTI_UNIT), "-o", str(out)], cwd=REPO,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
        workers = _children(proc.pid)
    assert len(workers) == 2, "the workers did not start"
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr == "canonbtf: interrupted\n"
    assert not out.exists() and list(tmp_path.iterdir()) == []
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers)


def test_stdout_output_and_shuffle_variable(tmp_path):
    result = subprocess.run([sys.executable, "-m", "canonbtf", "encode", "-j2",
                             str(MULTI_UNIT)], capture_output=True, cwd=REPO, timeout=300,
                            env={**os.environ, SHUFFLE_ENV: "5"})
    assert result.returncode == 0
    assert result.stdout == encoded(MULTI_UNIT)
    bad = run_cli("encode", str(MULTI_UNIT), env={SHUFFLE_ENV: "x"})
    assert bad.returncode == 2 and SHUFFLE_ENV in bad.stderr


@pytest.mark.parametrize("path", object_ids(OBJECTS))
def test_output_is_valid_and_the_kernel_accepts_it(path):
    from canonbtf.check.validator import validate

    blob = encoded(path)
    assert validate(reader.parse(blob)) == []
    if os.geteuid() != 0:
        pytest.skip("BPF_BTF_LOAD needs root")
    from canonbtf.btf.kernel import load_btf

    verdict = load_btf(blob)
    if verdict.accepted is None:
        pytest.skip(verdict.summary())
    assert verdict.accepted, verdict.summary() + "\n" + verdict.log_tail


# -- the real kernel, sampled ---------------------------------------------------------


def test_kernel_sample_same_bytes_for_jobs_and_order():
    """Every 40th unit of the 6.1 kernel (55 units, 15 s): -j1 == -j2 == shuffled -j2."""
    dwarf = fetched_kernel_sample(40)
    one, _ = encode_dwarf(dwarf, 1)
    two, _ = encode_dwarf(dwarf, 2, seed=11)
    assert writer.write(one) == writer.write(two)


def test_kernel_sample_fast_reader_agrees_with_pyelftools():
    dwarf = fetched_kernel_sample(400)
    reference_dwarf = open_dwarf(str(fetched_kernel()), for_reference=True)
    fast, reference = DieReader(dwarf), ReferenceReader(reference_dwarf)
    for unit in dwarf.units:
        assert fast.read_unit(unit).types == reference.read_unit(unit).types


@pytest.mark.skipif(os.environ.get("CANONBTF_FULL_KERNEL") != "1",
                    reason="full 6.1 kernel encode takes minutes; set CANONBTF_FULL_KERNEL=1")
def test_full_kernel_matches_its_pahole_btf():
    ours, _ = encode_file(str(fetched_kernel()), 2, features=TYPES_ONLY)
    theirs = canonicalize(without_functions(reader.load(str(corpus_path(KERNEL_BTF)))),
                          dedup=True)
    assert writer.write(ours) == writer.write(theirs)


def regenerate() -> None:
    EXPECTED.mkdir(exist_ok=True)
    for path in OBJECTS:
        btf, _ = encode_file(str(path), 1)
        out = io.StringIO()
        dump_raw(btf, out)
        (EXPECTED / (path.stem + ".txt")).write_text(out.getvalue(), encoding="latin-1")
        print(f"{path.name}: {len(btf)} types")


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate"]:
        regenerate()
    else:
        sys.exit("usage: python -m tests.test_encode --regenerate")


@pytest.mark.parametrize("path", object_ids(OBJECTS))
def test_unit_language_agrees_with_pyelftools(path):
    """dies.unit_attribute (canonbtf-pahole's --lang_exclude) and the compiled core's
    `language`, when built, read a unit's own DIE as pyelftools does."""
    from canonbtf.dwarf.dies import unit_attribute
    from canonbtf.spec.dwarf_numbers import AT_language

    dwarf = open_dwarf(str(path), for_reference=True)
    encoder = new_encoder(dwarf, ConvertContext())
    for unit in dwarf.units:
        top = dwarf.dwarfinfo.get_CU_at(unit.offset).get_top_DIE()
        expected = top.attributes.get("DW_AT_language")
        assert unit_attribute(dwarf, unit, AT_language) == (expected and expected.value)
        if encoder is not None:
            assert encoder.language(unit_fields(unit)) == (expected and expected.value)


def test_unit_language_compiled_as_the_reference():
    """Every 10th unit of the fetched 6.1 kernel: the compiled core's `language` is
    dies.unit_attribute's."""
    from canonbtf.dwarf.dies import unit_attribute
    from canonbtf.spec.dwarf_numbers import AT_language

    dwarf = fetched_kernel_sample(10)
    encoder = new_encoder(dwarf, ConvertContext())
    if encoder is None:
        pytest.skip("compiled core not in use")
    for unit in dwarf.units:
        assert encoder.language(unit_fields(unit)) == unit_attribute(dwarf, unit, AT_language)


def test_leb128_as_the_dwarf_standard_gives_it():
    """DWARF 5, figures 7.5.6 and 7.5.7: the examples of unsigned and signed LEB128."""
    unsigned = {2: "02", 127: "7f", 128: "8001", 129: "8101", 130: "8201", 12857: "b964"}
    signed = {2: "02", -2: "7e", 127: "ff00", -127: "817f", 128: "8001", -128: "807f",
              129: "8101", -129: "ff7e"}
    for table, read in ((unsigned, read_uleb), (signed, read_sleb)):
        for value, text in table.items():
            data = b"\xaa" + bytes.fromhex(text) + b"\xbb"
            assert read(data, 1) == (value, len(data) - 1)
