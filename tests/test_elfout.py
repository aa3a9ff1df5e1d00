"""Writing sections into a copy of an ELF file (canonbtf/elf/write.py, relayout.py), judged
by binutils and LLVM: `objcopy --dump-section` gives back what was written, `readelf -S`
shows how, the linker still links a relocatable file laid out again, and readelf reads
every other section as it was, for each ELF class and byte order."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from canonbtf.elf import write as elfout
from canonbtf.elf.relayout import Extent, planned
from canonbtf.errors import InputError
from canonbtf.output import TEMP_PREFIX

from .conftest import need_tool


def compiled(tmp_path: Path, *flags: str, compiler: str = "gcc") -> Path:
    """A relocatable file (ET_REL, as a kernel module is) with a function, data, debug
    information and their relocations."""
    source = tmp_path / "unit.c"
    source.write_text("int answer(void) { return 42; }\nint counter = 7;\n"
                      "int *where(void) { return &counter; }\n")
    obj = tmp_path / f"unit{len(list(tmp_path.glob('unit*.o')))}.o"
    subprocess.run([need_tool(compiler), "-g", "-c", *flags, "-o", str(obj), str(source)],
                   check=True)
    return obj


def linked(tmp_path: Path) -> Path:
    """An executable (not ET_REL): objcopy writes its sections."""
    source = tmp_path / "main.c"
    source.write_text("int main(void) { return 0; }\n")
    out = tmp_path / "main"
    subprocess.run([need_tool("gcc"), "-o", str(out), str(source)], check=True)
    return out


def relaid(image: bytes, sections: dict[str, bytes]) -> list[bytes | memoryview] | None:
    """relayout.planned over the bytes of a whole file, its Extents as views of them."""
    pieces = planned(lambda offset, size: image[offset:offset + size], len(image), sections)
    if pieces is None:
        return None
    view = memoryview(image)
    return [view[p.offset:p.offset + p.size] if isinstance(p, Extent) else p for p in pieces]


def never() -> list[str]:
    raise AssertionError("objcopy was looked for, for a file laid out in-process")


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
    messages = elfout.write_elf_with_sections(never, str(source), sections, str(out))
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
    elfout.write_elf_with_btf(never, str(source), b"first", str(first))
    second = tmp_path / "second.o"
    elfout.write_elf_with_btf(never, str(first), b"the second, longer", str(second))
    assert dumped(second, ".BTF", tmp_path) == b"the second, longer"
    out = subprocess.run([need_tool("readelf"), "-SW", str(second)], capture_output=True,
                         text=True, check=True).stdout
    assert out.count(" .BTF ") == 1


def test_the_output_keeps_the_inputs_mode(tmp_path):
    source = compiled(tmp_path)
    os.chmod(source, 0o751)
    out = tmp_path / "out.o"
    elfout.write_elf_with_btf(never, str(source), b"x", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o751
    program = linked(tmp_path)
    os.chmod(program, 0o750)
    elfout.write_elf_with_btf(elfout.find_objcopy, str(program), b"x", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o750


def test_a_failing_objcopy_leaves_nothing(tmp_path):
    source = linked(tmp_path)
    out = tmp_path / "out"
    # objcopy refuses a section name that is not a name=file pair it can read.
    broken = [need_tool("objcopy"), "--add-section", ".other=/nonexistent/file"]
    with pytest.raises(InputError, match="objcopy could not write .BTF: .*nonexistent"):
        elfout.write_elf_with_sections(lambda: broken, str(source), {".BTF": b"x"}, str(out))
    assert not out.exists() and leftovers(tmp_path) == []


def test_a_directory_is_no_output(tmp_path):
    with pytest.raises(InputError, match="output is a directory"):
        elfout.write_elf_with_btf(never, str(compiled(tmp_path)), b"x", str(tmp_path))


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


def section_contents(path: Path) -> dict[str, bytes]:
    """Every section's name -> its bytes (empty for NOBITS), as pyelftools reads them;
    the section names' own section (.shstrtab, or clang's .strtab) as "<names>"."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        names = elf["e_shstrndx"]
        return {"<names>" if i == names else s.name: s.data()
                for i, s in enumerate(elf.iter_sections())}


@pytest.mark.parametrize("target", [None, "i386-linux-gnu", "powerpc64-linux-gnu",
                                    "powerpc-linux-gnu"])
def test_a_relocatable_file_is_laid_out_again_with_everything_else_kept(tmp_path, target):
    """Every other section's bytes and header fields, for both classes and byte orders;
    the table grows by one row and no section is renumbered (symbols and relocations
    name sections by index). On the host, the result still links and runs."""
    if target is None:
        source = compiled(tmp_path)
    else:
        source = compiled(tmp_path, f"--target={target}", compiler="clang")
    out = tmp_path / "out.o"
    assert elfout.write_elf_with_btf(never, str(source), b"BTF bytes", str(out)) == []
    before, after = section_contents(source), section_contents(out)
    assert after.pop(".BTF") == b"BTF bytes"
    assert after.pop("<names>") == before.pop("<names>") + b".BTF\0"
    assert after == before
    readelf = need_tool("llvm-readelf")
    rows = [subprocess.run([readelf, "-SW", str(p)], capture_output=True, text=True,
                           check=True) for p in (source, out)]
    assert rows[1].stderr == ""

    names = ".shstrtab" if target is None else ".strtab"

    def table(text: str) -> list[list[str]]:
        """Per row: name, type, address, size, flags...; not the file offset, nor the
        size of the section names, which grew by one name."""
        lines = [line.split("]", 1)[1].split() for line in text.splitlines()
                 if line.lstrip().startswith("[") and "Nr]" not in line]
        return [f[:3] + (["names"] if f[0] == names else f[4:5]) + f[5:] for f in lines]


    assert table(rows[1].stdout)[:-1] == table(rows[0].stdout)
    name, kind, _address, size, _entsize, *rest = table(rows[1].stdout)[-1]
    assert (name, kind, int(size, 16), rest) == (".BTF", "PROGBITS", 9, ["0", "0", "1"])
    if target is None:
        main = tmp_path / "main.c"
        main.write_text("int answer(void); int *where(void);\n"
                        "int main(void) { return answer() + *where(); }\n")
        program = tmp_path / "program"
        subprocess.run([need_tool("gcc"), "-o", str(program), str(main), str(out)],
                       check=True)
        assert subprocess.run([str(program)]).returncode == 49


def test_a_file_relayout_does_not_take_whole_goes_to_objcopy(tmp_path):
    """An executable has segments that fix its sections' file offsets: objcopy's."""
    program = linked(tmp_path)
    asked = []

    def objcopy() -> list[str]:
        asked.append(True)
        return elfout.find_objcopy()

    out = tmp_path / "out"
    assert not elfout.laid_out_here(str(program))
    elfout.write_elf_with_btf(objcopy, str(program), b"BTF bytes", str(out))
    assert asked and dumped(out, ".BTF", tmp_path) == b"BTF bytes"
    assert subprocess.run([str(out)]).returncode == 0


def test_relayout_refuses_what_it_does_not_take_whole(tmp_path):
    """None (objcopy's turn) for a file whose section table is cut off or which is not
    relocatable; never an exception."""
    image = compiled(tmp_path).read_bytes()
    assert b"".join(relaid(image, {".BTF": b"x"}))[:4] == b"\x7fELF"
    assert relaid(image[:len(image) // 2], {".BTF": b"x"}) is None
    assert relaid(linked(tmp_path).read_bytes(), {".BTF": b"x"}) is None
    assert relaid(b"\x7fELF" + bytes(60), {".BTF": b"x"}) is None
    for cut in range(0, 64, 7):
        assert relaid(image[:cut], {".BTF": b"x"}) is None


def test_relayout_never_raises_on_a_damaged_header(tmp_path):
    """Every 8 bytes of a relocatable file's header and section table set to large values
    in turn: relaid gives pieces that add up to an ELF file, or None; nothing raises and
    nothing is padded without bound (an alignment of 2**40 is refused, not written)."""
    import struct

    image = compiled(tmp_path).read_bytes()
    shoff = struct.unpack_from("<Q", image, 40)[0]
    places = [*range(16, 64, 2), *range(shoff, len(image) - 8, 4)]
    for at in places:
        for value in (0, 1 << 40, 0xFFFFFFFF, 3):
            damaged = bytearray(image)
            damaged[at:at + 8] = value.to_bytes(8, "little")
            pieces = relaid(bytes(damaged), {".BTF": b"x"})
            if pieces is not None:
                assert sum(len(p) for p in pieces) < 2 * len(image) + (1 << 17)


@pytest.mark.parametrize("copy", ["kernel", "fails", "absent"])
def test_kept_sections_are_copied_the_same_whichever_way(tmp_path, monkeypatch, copy):
    """The sections kept are copied from the source by copy_file_range, or read and
    written where it fails (another file system, an old kernel) or does not exist: the
    same file each way, as relaid lays it out from the bytes."""
    source = compiled(tmp_path)
    if copy == "fails":
        def refuse(*args: object) -> int:
            raise OSError(18, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", refuse, raising=False)
    elif copy == "absent":
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    out = tmp_path / "out.o"
    assert elfout.write_elf_with_btf(never, str(source), b"BTF bytes", str(out)) == []
    assert out.read_bytes() == b"".join(relaid(source.read_bytes(), {".BTF": b"BTF bytes"}))


@pytest.mark.parametrize("copy", ["kernel", "absent"])
def test_a_source_shorter_than_its_table_says_is_an_input_error(tmp_path, monkeypatch,
                                                                 copy):
    """A file cut short after its section table was read (a second writer): one clean
    InputError naming it, and no output left behind."""
    source = compiled(tmp_path)
    if copy == "absent":
        monkeypatch.delattr(os, "copy_file_range", raising=False)

    def then_cut(read, size, sections):
        pieces = planned(read, size, sections)
        os.truncate(source, size // 2)
        return pieces

    monkeypatch.setattr(elfout, "planned", then_cut)
    out = tmp_path / "out.o"
    with pytest.raises(InputError, match="changed while it was read"):
        elfout.write_elf_with_btf(never, str(source), b"BTF bytes", str(out))
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)]
