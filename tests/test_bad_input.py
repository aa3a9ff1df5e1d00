"""Bad input through the real command line: one line on stderr naming the file and the
problem, exit status 2, no traceback, no output file left behind.

Each case is a file made by hand from a small valid blob (or a real module's split BTF, or
an object file from gcc), run as `python3 -m canonbtf check FILE`.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.canon import canonicalize
from canonbtf.emit.c.header import dump_c, header_names
from canonbtf.emit.c.shape import MAX_PADDING, c_shape_problem
from canonbtf.errors import InputError

from .conftest import BASE_61, REPO, corpus_path

HEADER = struct.Struct("<HBBIIIII")  # magic, version, flags, hdr_len, type/str off/len
TYPE_OFF, TYPE_LEN, STR_OFF, STR_LEN = 4, 5, 6, 7


def good_blob() -> bytes:
    """int, a pointer to it, a struct holding both: 3 types, 24-byte header, little-endian."""
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    p = b.ptr(i)
    b.struct("s", 16, [("a", i, 0), ("p", p, 64)])
    return writer.write(b.build())


def with_header(**fields: int) -> bytes:
    blob = good_blob()
    hdr = list(HEADER.unpack_from(blob))
    names = ("magic", "version", "flags", "hdr_len", "type_off", "type_len", "str_off",
             "str_len")
    for name, value in fields.items():
        hdr[names.index(name)] = value
    return HEADER.pack(*hdr) + blob[HEADER.size:]


def patched(offset: int, word: int) -> bytes:
    blob = bytearray(good_blob())
    struct.pack_into("<I", blob, offset, word)
    return bytes(blob)


def header_fields() -> tuple[int, ...]:
    return HEADER.unpack_from(good_blob())


def int_info_offset() -> int:
    """Byte offset of type 1's info word (the header is 24 bytes, types start at 0)."""
    return HEADER.size + 4


def ptr_target_offset() -> int:
    """Byte offset of type 2's (the PTR's) type field: type 1 (INT) takes 16 bytes."""
    return HEADER.size + 16 + 8


def last_record_cut_short() -> bytes:
    """The type section loses its last 8 bytes (half a member); the strings stay intact."""
    blob = good_blob()
    hdr = list(HEADER.unpack_from(blob))
    types_end = HEADER.size + hdr[TYPE_OFF] + hdr[TYPE_LEN]
    hdr[TYPE_LEN] -= 8
    hdr[STR_OFF] -= 8
    return HEADER.pack(*hdr) + blob[HEADER.size : types_end - 8] + blob[types_end:]


def string_section_end_nul() -> bytes:
    blob = bytearray(good_blob())
    blob[-1] = ord("x")
    return bytes(blob)


def elf_without_btf(tmp: Path) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    src = tmp / "tiny.c"
    src.write_text("int answer(void) { return 42; }\n")
    obj = tmp / "tiny.o"
    subprocess.run([gcc, "-c", str(src), "-o", str(obj)], check=True, timeout=120)
    return obj


def elf_truncated(tmp: Path) -> Path:
    """An object file cut off before its section headers (which ELF keeps at the end)."""
    obj = elf_without_btf(tmp)
    cut = tmp / "cut.o"
    cut.write_bytes(obj.read_bytes()[:300])
    return cut


def make(data: bytes | Callable[[], bytes]) -> Callable[[Path], Path]:
    def write(tmp: Path) -> Path:
        path = tmp / "input.btf"
        path.write_bytes(data() if callable(data) else data)
        return path

    return write


def split_module(tmp: Path) -> Path:
    return corpus_path("mod-6.1.0-56-cloud-virtio_net.btf")


# name -> (makes the input file, words the one stderr line must contain)
CASES: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "missing-file": (lambda tmp: tmp / "no-such.btf", ("no such file",)),
    "directory": (lambda tmp: tmp, ("is a directory",)),
    "not-btf": (make(b"this is a text file, not BTF at all\n"), ("not BTF", "magic")),
    "empty-file": (make(b""), ("truncated header", "0 bytes")),
    "truncated-header": (make(lambda: good_blob()[:10]), ("truncated header", "10 bytes")),
    "truncated-types": (make(lambda: good_blob()[:HEADER.size + 20]),
                        ("type section", "past the end")),
    "truncated-strings": (make(lambda: good_blob()[:-3]), ("string section", "past the end")),
    "section-offset-out-of-range": (make(lambda: with_header(str_off=1000)),
                                    ("string section", "offset 1000", "past the end")),
    "section-length-huge": (make(lambda: with_header(type_len=0xFFFFFFF0)),
                            ("type section", "past the end")),
    "header-length-out-of-range": (make(lambda: with_header(hdr_len=0xFFFFFFFF)),
                                   ("header length", "out of range")),
    "sections-overlap": (make(lambda: with_header(str_off=header_fields()[STR_OFF] - 8,
                                                  str_len=header_fields()[STR_LEN] + 8)),
                         ("overlap",)),
    "type-section-misaligned": (make(lambda: with_header(type_len=header_fields()[TYPE_LEN]
                                                         - 2)),
                                ("not 4-byte aligned",)),
    "unknown-kind": (make(lambda: patched(int_info_offset(), 25 << 24)),
                     ("type 1", "unknown kind 25")),
    "record-truncated": (make(last_record_cut_short),
                         ("type 3", "past the end of the type section")),
    "string-not-nul-terminated": (make(string_section_end_nul), ("not NUL-terminated",)),
    "reference-past-last-type": (make(lambda: patched(ptr_target_offset(), 99)),
                                 ("type 2", "type 99", "past the last type id 3")),
    "split-btf-without-base": (split_module, ("split", "--base")),
    "elf-without-btf": (elf_without_btf, ("no .BTF section",)),
    "elf-truncated": (elf_truncated, ("ELF file",)),
}


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "canonbtf", *args], capture_output=True,
                          text=True, env=env, timeout=300, cwd=cwd)


def assert_one_clean_error_line(proc: subprocess.CompletedProcess, path: Path,
                                words: tuple[str, ...]) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    line = lines[0]
    assert line.startswith(f"canonbtf: {path}: "), line
    for word in words:
        assert word in line, line


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_and_exit_2(name, tmp_path):
    make_input, words = CASES[name]
    path = make_input(tmp_path)
    proc = run_cli("check", str(path))
    assert_one_clean_error_line(proc, path, words)
    assert proc.stdout == ""


def test_bad_base_names_the_base(tmp_path):
    base = tmp_path / "base.btf"
    base.write_bytes(good_blob()[:10])
    module = corpus_path("mod-6.1.0-56-cloud-virtio_net.btf")
    proc = run_cli("check", str(module), "--base", str(base))
    assert_one_clean_error_line(proc, base, ("truncated header",))


def test_split_btf_with_its_base_is_fine():
    module = corpus_path("mod-6.1.0-56-cloud-virtio_net.btf")
    proc = run_cli("check", str(module), "--base", str(corpus_path(BASE_61.name)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_bad_input_leaves_no_output_file(tmp_path):
    path = tmp_path / "input.btf"
    path.write_bytes(good_blob()[:-3])
    out = tmp_path / "out.txt"
    proc = run_cli("dump", str(path), "--format", "raw", "-o", str(out))
    assert_one_clean_error_line(proc, path, ("string section",))
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.btf"]


# -- library entry points own their preconditions -------------------------------------


def holds_itself() -> Btf:
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    b.add(f.STRUCT, "loop", 8, items=[("x", i, 0), ("self", 2, 32)])
    return b.build()


def points_at_func() -> Btf:
    b = BtfBuilder()
    i = b.int("int", 4, f.INT_SIGNED)
    func = b.func("f", b.func_proto(i, []))
    b.typedef("fp", b.ptr(func))
    return b.build()


def test_library_c_header_refuses_what_c_cannot_spell():
    btf = holds_itself()
    for call in (lambda: dump_c(btf, io.StringIO()), lambda: header_names(btf)):
        with pytest.raises(InputError, match="type 2 .* contains itself by value"):
            call()


def test_library_canonicalize_refuses_a_pointer_to_a_func():
    with pytest.raises(InputError, match="refers to FUNC 'f'"):
        canonicalize(points_at_func())


@pytest.mark.parametrize(("command", "btf", "words"), [
    (("dump", "--format", "c"), holds_itself, ("cannot be written as C",)),
    (("sort", "-o", "out.btf"), points_at_func, ("refers to FUNC", "canonical order")),
])
def test_cli_names_the_input_of_a_library_refusal(command, btf, words, tmp_path):
    path = tmp_path / "input.btf"
    path.write_bytes(writer.write(btf()))
    proc = run_cli(command[0], str(path), *command[1:], cwd=tmp_path)
    assert_one_clean_error_line(proc, path, words)


@pytest.mark.parametrize("long_size", [4, 8])
def test_padding_limit_counts_pointers_at_the_targets_size(long_size):
    """A struct whose one pointer leaves exactly MAX_PADDING bytes when pointers are 8
    bytes: with a 4-byte `long` (a 32-bit target) the gap is 4 bytes more."""
    b = BtfBuilder()
    b.int("long int", long_size, f.INT_SIGNED)
    b.struct("big", MAX_PADDING + 8, [("p", b.ptr(0), 0)])
    problem = c_shape_problem(b.build())
    if long_size == 8:
        assert problem is None
    else:
        assert f"would need {MAX_PADDING + 4} bytes of padding" in problem
