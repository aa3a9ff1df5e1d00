"""The ELF symbol table as the encoder reads it (canonbtf/dwarf/symbols.py), judged by
binutils: what `readelf -s` lists for objects gcc compiled and linked here, and .BTF_ids
set8s written the way include/linux/btf_ids.h writes them. The compiled core's
`scan_symbols` must give what the pure `scan_symbols` gives, on real tables and on
random and damaged ones."""

from __future__ import annotations

import random
import re
import struct
import subprocess
from pathlib import Path

import pytest

from canonbtf.dwarf import symbols as symbols_module
from canonbtf.dwarf.core import compiled_module
from canonbtf.dwarf.symbols import read_symbols, scan_symbols
from canonbtf.errors import InputError

from .conftest import FETCHED_DEBUG, FETCHED_KERNEL, REPO, need_tool

GOLDEN = sorted((REPO / "golden" / "obj").glob("*.o"))
VIRTIO = (FETCHED_DEBUG / "lib" / "modules" / "6.1.0-56-cloud-amd64" / "kernel" / "drivers"
          / "net" / "virtio_net.ko")

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


def _core():
    core = compiled_module()
    if core is None:
        pytest.skip("the compiled core is not built or CANONBTF_PURE is set")
    return core


def _pure_read(path, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(symbols_module, "compiled_module", lambda: None)
        return read_symbols(str(path))


@pytest.mark.parametrize("path", GOLDEN + [VIRTIO, FETCHED_KERNEL], ids=lambda p: p.name)
def test_the_core_reads_what_the_reference_reads(path, monkeypatch):
    _core()
    if not path.exists():
        pytest.skip(f"{path} not fetched (../shared/tools/fetch-kernel-dbg)")
    fast = read_symbols(str(path))
    pure = _pure_read(path, monkeypatch)
    assert fast == pure
    # Same insertion order too: the workers walk these dicts.
    assert list(fast.functions.items()) == list(pure.functions.items())
    assert list(fast.objects.items()) == list(pure.objects.items())


def _random_table(rng: random.Random, elf64: bool, little: bool) -> tuple[bytes, bytes]:
    """A symbol table whose fields are drawn near the values that matter (kinds, section
    indexes around the reserved range, name offsets past the string table), cut short
    at a random length."""
    order = "<" if little else ">"
    strtab = b"\0" + b"\0".join(rng.choice([b"f", b"g", b"obj", b"\xe9t\xe9", b""])
                                  for _ in range(rng.randrange(1, 8)))
    if rng.random() < 0.3:
        strtab = strtab.rstrip(b"\0")  # a last name without its NUL
    rows = []
    for _ in range(rng.randrange(0, 40)):
        name = rng.choice([0, 1, 3, max(len(strtab) - 1, 0), len(strtab), len(strtab) + 7,
                           rng.randrange(0, 1 << 32)])
        info = rng.choice([0, 1, 2, 3, 0x11, 0x12, 0x21, rng.randrange(256)])
        shndx = rng.choice([0, 1, 2, 3, 5, 0xFEFF, 0xFF00, 0xFFF1, rng.randrange(1 << 16)])
        value = rng.choice([0, 8, 0x400000, (1 << (64 if elf64 else 32)) - 1])
        size = rng.choice([0, 4, 8, (1 << (64 if elf64 else 32)) - 1])
        if elf64:
            rows.append(struct.pack(order + "IBBHQQ", name, info, 0, shndx, value, size))
        else:
            rows.append(struct.pack(order + "IIIBBH", name, value, size, info, 0, shndx))
    data = b"".join(rows)
    return data[:rng.randrange(0, len(data) + 1)] if rng.random() < 0.3 else data, strtab


@pytest.mark.parametrize("elf64", [True, False], ids=["elf64", "elf32"])
@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
def test_random_and_damaged_tables_read_alike(elf64, little):
    core = _core()
    rng = random.Random(f"symbols {elf64} {little}")
    for _ in range(500):
        data, strtab = _random_table(rng, elf64, little)
        btf_ids_index = rng.choice([-1, 2, 5])
        alloc = bytes(rng.randrange(2) for _ in range(rng.randrange(0, 7)))
        args = (data, strtab, elf64, little, btf_ids_index, alloc)
        fast, pure = core.scan_symbols(*args), scan_symbols(*args)
        assert fast == pure
        assert [list(d.items()) for d in fast[:2]] == [list(d.items()) for d in pure[:2]]
