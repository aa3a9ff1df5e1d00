"""pahole 1.31's safety rules for FUNCs, and `canonbtf-pahole --verbose`.

fentry, fexit and kprobe-multi attach by name: a FUNC whose name stands for code at
several addresses lets a program attach where it should not. Judges: readelf and nm (the
symbol addresses), pyelftools (the DWARF prototypes), gcc -O2 fixtures compiled here,
pahole 1.31 (../shared/tools/pahole-1.31) when present, and the checks of pahole's own
tests/btf_functions.sh, redone with our code: every function a `--verbose` skip line
names is absent from the BTF, a "return type mismatch" has definitions with different
return types in the DWARF, an "ambiguous address" has symbols at two addresses.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from canonbtf.btf import format as f
from canonbtf.btf import reader
from canonbtf.dwarf.symbols import NOT_A_FUNCTION_SUFFIXES, read_symbols

from .conftest import FETCHED_KERNEL, REPO, fetched_kernel, need_tool, pahole_131

# Two units with static functions of one name: dup_fn disagrees in its prototype,
# same_fn agrees; both sit at two addresses once linked.
UNIT_A = """\
static __attribute__((noinline)) int dup_fn(int x) { return x * 3 + 1; }
static __attribute__((noinline)) int same_fn(int v) { return v + 9; }
int use_a(int x) { return dup_fn(x) + same_fn(x); }
"""
UNIT_B = """\
static __attribute__((noinline)) long dup_fn(long y, int z) { return y * z - 7; }
static __attribute__((noinline)) int same_fn(int v) { return v ^ 0x55; }
int use_a(int x);
int use_b(long y, int z) { return dup_fn(y, z) + same_fn(z); }
int main(int argc, char **argv) { (void)argv; return use_a(argc) + use_b(argc, 3); }
"""
# make_big returns a struct through a hidden pointer in rdi, so its x arrives in rsi:
# its DWARF prototype does not say where the code reads x. from_pair takes a struct in
# two registers (its registers do not follow the parameters one for one: pahole 1.31
# holds nothing against it); plain is as the calling convention says.
MOVED = """\
struct big { long a, b, c; };
struct pair { long a, b; };
__attribute__((noinline)) struct big make_big(long x, long y)
{ struct big r = {x, y + 1, x * y}; return r; }
__attribute__((noinline)) long plain(long x, long y) { return x * 3 + y; }
__attribute__((noinline)) struct big from_pair(struct pair p, long z)
{ struct big r = {p.a, p.b, z}; return r; }
int main(int argc, char **argv)
{ (void)argv; struct pair p = {argc, 2};
  return (int)(make_big(argc, 2).c + plain(argc, 1) + from_pair(p, argc).b); }
"""
# gcc -O2 splits split_me: callers inline the test of `skip`, the loop becomes
# split_me.part.0, whose DWARF (a subprogram whose DW_AT_abstract_origin is split_me)
# lists the parameters it receives first and `skip` last. pahole 1.31 reads it as one
# more definition of split_me whose parameter types differ, and skips split_me.
PIECE = """\
extern void sink(long);
extern long work(long, long);
int split_me(int skip, long b, long c)
{
	if (skip)
		return 0;
	for (int i = 0; i < 40; i++) {
		sink(work(b + i, c - i));
		sink(work(c * i, b ^ i));
		sink(work(c * i, b ^ i));
	}
	return skip + 1;
}
int use(int s, long b, long c) { return split_me(s, b, c) + split_me(s + 1, c, b); }
int use2(int s, long b, long c) { return split_me(s, b, c) * split_me(s + 3, c, b); }
"""
PIECE_MAIN = """\
volatile long acc;
void sink(long v) { acc += v; }
long work(long a, long b) { return a * 3 + b; }
int use(int s, long b, long c);
int use2(int s, long b, long c);
int main(int argc, char **argv) { (void)argv; return use(argc, 2, 3) + use2(argc, 4, 5); }
"""
SKIP_LINE = re.compile(r"^(\S+) : skipping BTF encoding of function due to (.+)$")


def gcc_o2(work: Path, name: str, sources: dict[str, str]) -> Path:
    """The executable `name` that gcc -O2 -g makes of `sources` (file name -> text)."""
    gcc = need_tool("gcc")
    for file, text in sources.items():
        (work / file).write_text(text)
    out = work / name
    subprocess.run([gcc, "-O2", "-g", *(str(work / file) for file in sources), "-o",
                    str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> Path:
    return gcc_o2(tmp_path_factory.mktemp("twins"), "twins", {"a.c": UNIT_A, "b.c": UNIT_B})


@pytest.fixture(scope="module")
def moved(tmp_path_factory) -> Path:
    return gcc_o2(tmp_path_factory.mktemp("moved"), "moved", {"moved.c": MOVED})


@pytest.fixture(scope="module")
def piece(tmp_path_factory) -> Path:
    return gcc_o2(tmp_path_factory.mktemp("piece"), "piece",
                  {"piece.c": PIECE, "main.c": PIECE_MAIN})


def run_pahole_front(elf: Path, out: Path, *flags: str, pure: str = "0"):
    return subprocess.run(
        [sys.executable, "-c", "from canonbtf.entry import canonbtf_pahole; canonbtf_pahole()",
         "--btf_features=default", f"--btf_encode_detached={out}", *flags, str(elf)],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, "CANONBTF_PURE": pure})


def func_names(path: Path) -> set[str]:
    btf = reader.load(str(path))
    return {btf.name(t.name_off) for _, t in btf.own() if t.kind == f.FUNC}


def symbol_addresses(elf: Path) -> dict[str, set[int]]:
    """readelf's STT_FUNC symbols: name up to the first '.' -> addresses, leaving out
    the pieces of a function (.cold, .part)."""
    listing = subprocess.run([need_tool("readelf"), "-sW", str(elf)], capture_output=True,
                             text=True, check=True).stdout
    out: dict[str, set[int]] = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[3] == "FUNC" and fields[6] != "UND":
            name = fields[7].split("@")[0]
            if "." in name and any(s in name[name.index("."):]
                                   for s in NOT_A_FUNCTION_SUFFIXES):
                continue
            out.setdefault(name.split(".")[0], set()).add(int(fields[1], 16))
    return out


def dwarf_return_types(elf: Path) -> dict[str, set[str]]:
    """pyelftools: function name -> how its definitions' return types are spelled."""
    out: dict[str, set[str]] = {}
    with open(elf, "rb") as fh:
        dwarf = ELFFile(fh).get_dwarf_info()
        for unit in dwarf.iter_CUs():
            for die in unit.iter_DIEs():
                if die.tag != "DW_TAG_subprogram" or "DW_AT_name" not in die.attributes:
                    continue
                returns = "void"
                if "DW_AT_type" in die.attributes:
                    target = die.get_DIE_from_attribute("DW_AT_type")
                    returns = target.attributes["DW_AT_name"].value.decode()
                out.setdefault(die.attributes["DW_AT_name"].value.decode(), set()).add(returns)
    return out


def skip_lines(stdout: str) -> dict[str, str]:
    found = (SKIP_LINE.match(line) for line in stdout.splitlines())
    return {m.group(1): m.group(2) for m in found if m}


@pytest.mark.parametrize("pure", ["0", "1"])
def test_verbose_skips_pass_the_checks_of_btf_functions_sh(twins, tmp_path, pure):
    out = tmp_path / "twins.btf"
    result = run_pahole_front(twins, out, "--verbose", pure=pure)
    assert result.returncode == 0, result.stderr
    skipped = skip_lines(result.stdout)
    assert set(skipped) == {"dup_fn", "same_fn"}
    assert skipped["same_fn"] == "ambiguous address"
    assert skipped["dup_fn"] == "return type mismatch"
    funcs = func_names(out)
    assert funcs == {"use_a", "use_b", "main"}
    assert not set(skipped) & funcs  # "was added incorrectly to BTF"
    returns = dwarf_return_types(twins)
    assert all(len(returns[name]) >= 2 for name, why in skipped.items()
               if "return type mismatch" in why)
    addresses = symbol_addresses(twins)
    assert all(len(addresses[name]) >= 2 for name in skipped)
    assert all(len(addresses[name]) == 1 for name in funcs)
    assert "units" in result.stdout and "merge" in result.stdout  # the phases' times


def test_without_verbose_no_skip_lines(twins, tmp_path):
    result = run_pahole_front(twins, tmp_path / "twins.btf", "-j1")
    assert result.returncode == 0, result.stderr
    assert "skipping" not in result.stdout + result.stderr


def test_same_functions_as_pahole_131(twins, tmp_path):
    ours = tmp_path / "ours.btf"
    theirs = tmp_path / "theirs.btf"
    assert run_pahole_front(twins, ours, "-V").returncode == 0
    verbose = subprocess.run([pahole_131(), "--btf_features=default", "--verbose",
                              f"--btf_encode_detached={theirs}", str(twins)],
                             capture_output=True, text=True, check=True)
    assert func_names(ours) == func_names(theirs)
    # pahole 1.31 names the mismatch it met first; the ambiguous name goes silently.
    assert set(skip_lines(verbose.stdout)) <= {"dup_fn", "same_fn"}


@pytest.mark.parametrize("pure", ["0", "1"])
def test_parameter_in_an_unexpected_register_drops_the_function(moved, tmp_path, pure):
    if os.uname().machine != "x86_64":
        pytest.skip("the fixture's registers are x86-64's")
    out = tmp_path / "moved.btf"
    result = run_pahole_front(moved, out, "--verbose", pure=pure)
    assert result.returncode == 0, result.stderr
    assert skip_lines(result.stdout) == {"make_big": "unexpected register usage for parameter"}
    assert func_names(out) == {"plain", "from_pair", "main"}
    theirs = tmp_path / "theirs.btf"
    subprocess.run([pahole_131(), "--btf_features=default", f"--btf_encode_detached={theirs}",
                    str(moved)], check=True, capture_output=True)
    assert func_names(theirs) == func_names(out)


def parameter_locations(elf: Path):
    """pyelftools: (unit, DIE, location descriptions) of every parameter with a location,
    each description its operations as pyelftools parses them (names and arguments)."""
    from elftools.dwarf.dwarf_expr import DWARFExprParser
    from elftools.dwarf.locationlists import LocationParser

    with open(elf, "rb") as fh:
        dwarf = ELFFile(fh).get_dwarf_info()
        parser = LocationParser(dwarf.location_lists())
        for unit in dwarf.iter_CUs():
            ops = DWARFExprParser(unit.structs)
            for die in unit.iter_DIEs():
                attr = die.attributes.get("DW_AT_location")
                if die.tag != "DW_TAG_formal_parameter" or attr is None:
                    continue
                parsed = parser.parse_from_attribute(attr, unit.header.version, die)
                entries = (parsed if isinstance(parsed, list) else [parsed])
                exprs = [getattr(e, "loc_expr", None) for e in entries]
                yield unit, die, [ops.parse_expr(x) for x in exprs if x is not None]


def pyelftools_summary(descriptions) -> tuple[int | None, set[int]]:
    """pahole's reading of a parameter's descriptions from pyelftools' operations: the
    first one's register if it is one DW_OP_regN, the registers of entry values."""
    first, entries = None, set()
    for number, description in enumerate(descriptions):
        if len(description) > 1 and description[-1].op_name == "DW_OP_stack_value":
            description = description[:-1]
        if len(description) != 1:
            continue
        op = description[0]
        if number == 0 and re.fullmatch(r"DW_OP_reg\d+", op.op_name):
            first = int(op.op_name[9:])
        if op.op_name in ("DW_OP_entry_value", "DW_OP_GNU_entry_value"):
            inner = op.args[0]
            if len(inner) == 1 and re.fullmatch(r"DW_OP_reg\d+", inner[0].op_name):
                entries.add(int(inner[0].op_name[9:]))
    return first, entries


def test_location_summaries_match_pyelftools(moved):
    """Every parameter location of the -O2 fixture (location lists in .debug_loclists)
    and of the golden objects, summed up by our reader as pyelftools reads it."""
    from canonbtf.dwarf.dies import DieReader
    from canonbtf.dwarf.locations import REGISTER_BITS
    from canonbtf.dwarf.sections import open_dwarf

    golden = sorted((REPO / "golden" / "obj").glob("*O2.o"))
    checked = 0
    for path in [moved, *golden]:
        dwarf = open_dwarf(str(path))
        reader_ = DieReader(dwarf)
        ours = {}
        for unit in dwarf.units:
            types = reader_.read_unit(unit)
            for offset, die in types.types.items():
                for tag, fields in die.children if die.tag == 0x2E else ():
                    if tag == 0x05 and fields[2] is not None:
                        ours.setdefault(offset, []).append(types.locations.summary(fields[2]))
        theirs = {}
        for _, die, descriptions in parameter_locations(path):
            parent = die.get_parent()  # not the parameters of an inlined call
            if parent.tag == "DW_TAG_subprogram":
                theirs.setdefault(parent.offset, []).append(pyelftools_summary(descriptions))
        assert ours.keys() == theirs.keys()
        for key, summaries in ours.items():
            decoded = [((s & 63) - 1 if s & 63 else None,
                        {r for r in range(32) if s >> (REGISTER_BITS + r) & 1})
                       for s in summaries]
            assert decoded == theirs[key], key
            checked += len(summaries)
    assert checked >= 6


def test_kernel_names_at_several_addresses_are_ambiguous():
    """The fetched kernel's symbol table: a name is ambiguous exactly when readelf lists
    its code (pieces of a function aside) at more than one address."""
    kernel = fetched_kernel()
    expected = {name for name, at in symbol_addresses(kernel).items() if len(at) > 1}
    symbols = read_symbols(str(kernel))
    assert "find_next_bit" in symbols.ambiguous  # static inline, copies in many units
    assert symbols.ambiguous == expected


def copies_in_another_order(elf: Path, name: str) -> int:
    """pyelftools: how many out-of-line copies of `name` (a subprogram with a low_pc whose
    DW_AT_abstract_origin is `name`) list their parameters in another order than `name`
    itself, or another number of them."""
    found = 0
    with open(elf, "rb") as fh:
        dwarf = ELFFile(fh).get_dwarf_info()
        for unit in dwarf.iter_CUs():
            for die in unit.iter_DIEs():
                if die.tag != "DW_TAG_subprogram" or "DW_AT_low_pc" not in die.attributes \
                        or "DW_AT_abstract_origin" not in die.attributes:
                    continue
                origin = die.get_DIE_from_attribute("DW_AT_abstract_origin")
                if origin.attributes.get("DW_AT_name") is None or \
                        origin.attributes["DW_AT_name"].value.decode() != name:
                    continue
                theirs = [c.offset for c in origin.iter_children()
                          if c.tag == "DW_TAG_formal_parameter"]
                mine = [c.get_DIE_from_attribute("DW_AT_abstract_origin").offset
                        for c in die.iter_children() if c.tag == "DW_TAG_formal_parameter"]
                found += mine != theirs
    return found


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_piece_listing_the_parameters_otherwise_drops_the_function(piece, tmp_path, pure):
    """pahole 1.31's rule for a .part piece whose DWARF parameters differ from the
    function's: the function keeps no FUNC, and `--verbose` says why in its words."""
    if "split_me.part" not in subprocess.run([need_tool("nm"), str(piece)], text=True,
                                             capture_output=True, check=True).stdout:
        pytest.skip("this gcc did not split split_me into a .part piece")
    assert copies_in_another_order(piece, "split_me") >= 1
    out = tmp_path / "piece.btf"
    result = run_pahole_front(piece, out, "--verbose", pure=pure)
    assert result.returncode == 0, result.stderr
    skipped = skip_lines(result.stdout)
    assert set(skipped) == {"split_me"}
    assert re.fullmatch(r"param (type mismatch for param#\d+ \w+ != \w+"
                        r"|count mismatch; \d+ params != \d+ params)", skipped["split_me"])
    assert func_names(out) == {"main", "sink", "work", "use", "use2"}
    theirs = tmp_path / "theirs.btf"
    verbose = subprocess.run([pahole_131(), "--btf_features=default", "--verbose",
                              f"--btf_encode_detached={theirs}", str(piece)],
                             capture_output=True, text=True, check=True)
    assert func_names(theirs) == func_names(out)
    assert skipped["split_me"] in set(skip_lines(verbose.stdout).values())


def test_kernel_function_with_a_reordered_piece_is_dropped(monkeypatch):
    """The fetched kernel's irq_domain_alloc_descs: gcc split off
    irq_domain_alloc_descs.part.0, whose DWARF lists `virq` last (llvm-dwarfdump finds
    its unit by the piece's address). Encoded alone, that unit keeps no FUNC for it, by
    both cores, with pahole 1.31's reason; the unit's other functions stay."""
    from canonbtf.dwarf.encode import encode_dwarf
    from canonbtf.dwarf.sections import open_dwarf

    kernel = fetched_kernel()
    listing = subprocess.run([need_tool("nm"), str(kernel)], capture_output=True, text=True,
                             check=True).stdout
    piece_at = next((line.split()[0] for line in listing.splitlines()
                     if line.endswith(" irq_domain_alloc_descs.part.0")), None)
    if piece_at is None:
        pytest.skip("this kernel has no irq_domain_alloc_descs.part.0")
    lookup = subprocess.run([need_tool("llvm-dwarfdump"), f"--lookup=0x{piece_at}",
                             str(kernel)], capture_output=True, text=True, check=True).stdout
    unit_at = int(re.search(r"^(0x[0-9a-f]+): Compile Unit", lookup, re.M).group(1), 16)
    results = []
    for pure in ("0", "1"):
        monkeypatch.setenv("CANONBTF_PURE", pure)
        dwarf = open_dwarf(str(kernel))
        dwarf.units = [u for u in dwarf.units if u.offset == unit_at]
        assert len(dwarf.units) == 1
        btf, stats = encode_dwarf(dwarf, 1)
        names = {btf.name(t.name_off) for _, t in btf.own() if t.kind == f.FUNC}
        reason = stats.functions.reasons.get("irq_domain_alloc_descs", "")
        assert "irq_domain_alloc_descs" not in names
        assert reason.startswith("param type mismatch for param#1 "), reason
        assert {"irq_domain_free_irqs", "irq_domain_alloc_irqs_hierarchy"} <= names
        results.append((sorted(names), reason))
    assert results[0] == results[1]


def test_both_elf_paths_know_the_machine(moved):
    """The calling convention comes from e_machine: the fast ELF path (which a kernel takes)
    must set it as the pyelftools one does, or rule 1b is silently off."""
    from canonbtf.dwarf.sections import open_dwarf

    for path in [moved, *([FETCHED_KERNEL] if FETCHED_KERNEL.exists() else [])]:
        with open(path, "rb") as fh:
            expected = ELFFile(fh)["e_machine"]
        assert open_dwarf(str(path)).machine == expected
        assert open_dwarf(str(path), for_reference=True).machine == expected
