"""The ELF symbol table as the encoder reads it (canonbtf/dwarf/symbols.py), judged by
binutils: what `readelf -s` lists for objects gcc compiled and linked here, and .BTF_ids
set8s written the way include/linux/btf_ids.h writes them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from canonbtf.dwarf.symbols import read_symbols
from canonbtf.errors import InputError

from .conftest import need_tool

SOURCE = r"""
int global_counter = 3;
static long static_table[4] = {1};
__attribute__((section(".data..percpu"))) int cpu_var = 1;
__attribute__((section(".data..percpu"))) static long cpu_static = 2;
int global_fn(int x) { return x + global_counter; }
static int static_fn(int x) { return x * (int)static_table[0]; }
int use(void) { return static_fn(1) + (int)cpu_static; }
int kf_one(void) { return 1; }
int kf_two(void) { return 2; }
int not_kf(void) { return 3; }
int main(void) { return use() + global_fn(0) + kf_one() + kf_two() + not_kf(); }
"""
# BTF_SET8_START(name) / BTF_ID_FLAGS(func, f) / BTF_SET8_END(name), flags word 1
# (BTF_SET8_KFUNCS) on the first set only.
BTF_IDS = """
asm(".pushsection .BTF_ids,\\"a\\"\\n.balign 4\\n"
{sets}
    ".popsection\\n");
"""


def set8(name: str, flags: int, funcs: list[str]) -> str:
    lines = [f".global __BTF_ID__set8__{name}", f"__BTF_ID__set8__{name}:", ".zero 4",
             f".long {flags}"]
    for n, func in enumerate(funcs):
        symbol = f"__BTF_ID__func__{func}__{n + 1}"
        lines += [f".local {symbol}", f".type {symbol}, STT_OBJECT", f".size {symbol}, 4",
                  f"{symbol}:", ".zero 4", ".long 0"]
    lines.append(f".size __BTF_ID__set8__{name}, .-__BTF_ID__set8__{name}")
    return "".join(f'    "{line}\\n"\n' for line in lines)


# Linked the way a kernel is: absolute addresses, the per-CPU section kept apart.
LINKER_SCRIPT = """\
SECTIONS {
  . = 0x400000;
  .text : { *(.text*) }
  . = 0x600000;
  .data : { *(.data) }
  . = 0x700000;
  .data..percpu : { *(.data..percpu) }
  .BTF_ids : { *(.BTF_ids) }
  .bss : { *(.bss*) }
  /DISCARD/ : { *(.note*) *(.eh_frame*) *(.comment) }
}
"""


def build(tmp_path: Path, link: bool) -> Path:
    source = tmp_path / "sym.c"
    sets = set8("kfunc_set", 1, ["kf_one", "kf_two"]) + set8("other_set", 0, ["not_kf"])
    source.write_text(SOURCE + BTF_IDS.format(sets=sets))
    out = tmp_path / ("sym" if link else "sym.o")
    if link:
        script = tmp_path / "link.ld"
        script.write_text(LINKER_SCRIPT)
        how = ["-nostdlib", "-static", "-no-pie", f"-Wl,-T,{script}", "-Wl,-e,main",
               "-Wl,--build-id=none"]
    else:
        how = ["-c"]
    subprocess.run([need_tool("gcc"), *how, "-O0", "-o", str(out), str(source)], check=True)
    return out


def readelf_symbols(path: Path) -> list[tuple[int, int, str, str, str]]:
    """(value, size, type, section index, name) of every symbol, as readelf prints them."""
    out = subprocess.run([need_tool("readelf"), "-sW", str(path)], capture_output=True,
                         text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 8 and re.fullmatch(r"\d+:", fields[0]):
            size = int(fields[2], 16) if fields[2].startswith("0x") else int(fields[2])
            rows.append((int(fields[1], 16), size, fields[3], fields[6], fields[7]))
    return rows


@pytest.mark.parametrize("link", [False, True], ids=["relocatable", "linked"])
def test_functions_and_objects_are_readelfs(tmp_path, link):
    path = build(tmp_path, link)
    symbols = read_symbols(str(path))
    assert symbols.relocatable is not link
    rows = readelf_symbols(path)
    functions: dict[str, set[int]] = {}
    objects: dict[tuple[str, int], list] = {}
    for value, size, kind, section, name in rows:
        if not section.isdigit():
            continue
        if kind == "FUNC":
            functions.setdefault(name, set()).add(value)
        elif kind == "OBJECT" and size and int(section) in symbols.sections:
            objects.setdefault((name, value), []).append((int(section), size))
    assert {n: set(a) for n, a in symbols.functions.items()} == functions
    assert symbols.objects == objects
    for name in ("global_fn", "static_fn", "kf_one", "main"):
        assert name in functions
    assert symbols.sections[symbols.percpu_index].name == ".data..percpu"


@pytest.mark.parametrize("link", [False, True], ids=["relocatable", "linked"])
def test_variables_are_placed_by_their_symbols(tmp_path, link):
    path = build(tmp_path, link)
    symbols = read_symbols(str(path))
    by_name = {name: (value, size) for value, size, kind, _, name in readelf_symbols(path)
               if kind == "OBJECT"}
    percpu = symbols.sections[symbols.percpu_index]
    value, size = by_name["cpu_static"]
    assert symbols.place_variable("cpu_static", value, False) == (
        ".data..percpu", value - percpu.address, size)
    value, size = by_name["global_counter"]
    assert symbols.place_variable("global_counter", value, False) is None
    section, offset, found_size = symbols.place_variable("global_counter", value, True)
    assert (section, found_size) == (".data", size)
    assert symbols.place_variable("global_counter", value + 4, True) is None
    assert symbols.place_variable("no_such_variable", value, True) is None


@pytest.mark.parametrize("link", [False, True], ids=["relocatable", "linked"])
def test_kfuncs_are_the_flagged_set8s_functions(tmp_path, link):
    symbols = read_symbols(str(build(tmp_path, link)))
    assert symbols.kfuncs == {"kf_one", "kf_two"}


def test_no_set8_no_kfuncs(tmp_path):
    source = tmp_path / "plain.c"
    source.write_text(SOURCE)
    obj = tmp_path / "plain.o"
    subprocess.run([need_tool("gcc"), "-c", "-o", str(obj), str(source)], check=True)
    assert read_symbols(str(obj)).kfuncs == frozenset()


def test_without_a_symbol_table_there_is_nothing_to_read(tmp_path):
    path = build(tmp_path, False)
    subprocess.run([need_tool("strip"), "--strip-all", str(path)], check=True)
    assert read_symbols(str(path)) is None


def test_a_broken_symbol_table_is_an_input_error(tmp_path):
    path = build(tmp_path, False)
    data = bytearray(path.read_bytes())
    # e_shoff (section headers' offset) past the end of the file.
    data[0x28:0x30] = (len(data) + 4096).to_bytes(8, "little")
    broken = tmp_path / "broken.o"
    broken.write_bytes(bytes(data))
    with pytest.raises(InputError):
        read_symbols(str(broken))
    missing = tmp_path / "missing.o"
    with pytest.raises(InputError, match="cannot read the symbol table"):
        read_symbols(str(missing))
