"""Writing sections into a copy of an ELF file (canonbtf/elf/write.py), judged by binutils:
`objcopy --dump-section` gives back what was written, `readelf -S` shows how."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from canonbtf.elf import write as elfout
from canonbtf.errors import InputError
from canonbtf.output import TEMP_PREFIX

from .conftest import need_tool


def compiled(tmp_path: Path) -> Path:
    source = tmp_path / "unit.c"
    source.write_text("int answer(void) { return 42; }\n")
    obj = tmp_path / "unit.o"
    subprocess.run([need_tool("gcc"), "-c", "-o", str(obj), str(source)], check=True)
    return obj


def dumped(path: Path, name: str, tmp_path: Path) -> bytes:
    out = tmp_path / "dumped.bin"
    subprocess.run([need_tool("objcopy"), f"--dump-section={name}={out}", str(path),
                    str(tmp_path / "scratch.o")], check=True, capture_output=True)
    return out.read_bytes()


def section_row(path: Path, name: str) -> list[str]:
    """The fields of `readelf -SW`'s row for section `name` after its name."""
    out = subprocess.run([need_tool("readelf"), "-SW", str(path)], capture_output=True,
                         text=True, check=True).stdout
    line = next(line for line in out.splitlines() if f" {name} " in line)
    return line.split("]", 1)[1].split()[1:]


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_sections_are_added_in_one_run_and_read_back(tmp_path):
    source = compiled(tmp_path)
    before = source.read_bytes()
    out = tmp_path / "out.o"
    sections = {".BTF": b"\x9f\xeb\x01\x00types", ".BTF.base": b"base bytes"}
    messages = elfout.write_elf_with_sections(elfout.find_objcopy(), str(source), sections,
                                              str(out))
    assert messages == []
    assert source.read_bytes() == before
    for name, data in sections.items():
        assert elfout.has_section(str(out), name)
        assert dumped(out, name, tmp_path) == data
        kind, _address, _offset, _size, _entsize, *flags = section_row(out, name)
        assert kind == "PROGBITS"
        assert "A" not in "".join(flags[:-3])  # not allocated, as pahole adds .BTF
    assert not elfout.has_section(str(source))
    assert leftovers(tmp_path) == []


def test_an_existing_section_is_replaced_not_added_again(tmp_path):
    source = compiled(tmp_path)
    first = tmp_path / "first.o"
    objcopy = elfout.find_objcopy()
    elfout.write_elf_with_btf(objcopy, str(source), b"first", str(first))
    second = tmp_path / "second.o"
    elfout.write_elf_with_btf(objcopy, str(first), b"the second, longer", str(second))
    assert dumped(second, ".BTF", tmp_path) == b"the second, longer"
    out = subprocess.run([need_tool("readelf"), "-SW", str(second)], capture_output=True,
                         text=True, check=True).stdout
    assert out.count(" .BTF ") == 1


def test_the_output_keeps_the_inputs_mode(tmp_path):
    source = compiled(tmp_path)
    os.chmod(source, 0o751)
    out = tmp_path / "out.o"
    elfout.write_elf_with_btf(elfout.find_objcopy(), str(source), b"x", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o751


def test_a_failing_objcopy_leaves_nothing(tmp_path):
    source = compiled(tmp_path)
    out = tmp_path / "out.o"
    # objcopy refuses a section name that is not a name=file pair it can read.
    broken = [need_tool("objcopy"), "--add-section", ".other=/nonexistent/file"]
    with pytest.raises(InputError, match="objcopy could not write .BTF: .*nonexistent"):
        elfout.write_elf_with_sections(broken, str(source), {".BTF": b"x"}, str(out))
    assert not out.exists() and leftovers(tmp_path) == []


def test_a_directory_is_no_output(tmp_path):
    with pytest.raises(InputError, match="output is a directory"):
        elfout.write_elf_with_btf(["objcopy"], str(compiled(tmp_path)), b"x", str(tmp_path))


def test_which_objcopy(tmp_path, monkeypatch):
    monkeypatch.setenv(elfout.OBJCOPY_ENV, "objcopy --verbose")
    assert elfout.find_objcopy() == [need_tool("objcopy"), "--verbose"]
    monkeypatch.setenv(elfout.OBJCOPY_ENV, "no-such-objcopy")
    with pytest.raises(InputError, match="is not a command found in PATH"):
        elfout.find_objcopy()
    monkeypatch.delenv(elfout.OBJCOPY_ENV)
    only_llvm = tmp_path / "bin"
    only_llvm.mkdir()
    (only_llvm / "llvm-objcopy").symlink_to(need_tool("llvm-objcopy"))
    monkeypatch.setenv("PATH", str(only_llvm))
    assert elfout.find_objcopy() == [str(only_llvm / "llvm-objcopy")]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(InputError, match="needs binutils objcopy"):
        elfout.find_objcopy()


def test_a_source_that_is_no_elf_file_is_an_input_error(tmp_path):
    source = tmp_path / "not-elf.o"
    source.write_bytes(b"\x7fELG" + bytes(60))
    with pytest.raises(InputError, match="not an ELF file"):
        elfout.has_section(str(source))
