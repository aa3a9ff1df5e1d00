#!/usr/bin/env python3
"""Compare `canonbtf encode` of a kernel's DWARF with the BTF its build made with pahole.

    python tools/compare_pahole.py [--elf VMLINUX] [--btf VMLINUX.btf] [-j N] [--ours OURS]
    python tools/compare_pahole.py --module virtio_net|bridge|nf_tables|xfs [-j N]
    python tools/compare_pahole.py --elf MOD.ko --btf MOD.btf --base VMLINUX.btf
    python tools/compare_pahole.py --elf VMLINUX --pahole PATH [--btf_features LIST]

Defaults: the 6.1 cloud kernel fetched by ../shared/tools/fetch-kernel-dbg and its .BTF
from ../shared/corpus; `--module` takes a corpus module (split BTF over that kernel's).
Prints the type counts by kind side by side, then every named STRUCT, UNION, ENUM,
ENUM64 and TYPEDEF whose layout differs (members, bit offsets, bitfield sizes, sizes,
member types written out as C-like type expressions, enum values) or that only one side
has, whether the types are byte-identical once both are in canonical order, then the
functions (names on each side, every name one side lacks with its cause, prototypes whose
types differ) and the variables (VAR names, DATASEC placement).
`--pahole PATH` runs that pahole on the same ELF with `--btf_features=LIST` (default:
`default`) and `--verbose` instead of reading `--btf`, encodes ours with the features
canonbtf-pahole takes from that list, and sorts every FUNC and VAR name one side lacks
into a class (`--table` prints the counts per class as one Markdown row).
Exit status 0 when no named type differs and every function and variable difference has
a known cause, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from canonbtf.btf import format as f  # noqa: E402
from canonbtf.btf import reader, writer  # noqa: E402
from canonbtf.btf.declarator import ReferenceSpeller  # noqa: E402
from canonbtf.btf.model import Btf, Type  # noqa: E402
from canonbtf.errors import InputError  # noqa: E402
from canonbtf.spec import kinds as spec  # noqa: E402

DEBUG = "/root/.cache/canonbtf-corpus/linux-image-6.1.0-56-cloud-amd64-dbg/usr/lib/debug/"
KERNEL = DEBUG + "boot/vmlinux-6.1.0-56-cloud-amd64"
MODULES = {
    "virtio_net": "drivers/net/virtio_net.ko",
    "bridge": "net/bridge/bridge.ko",
    "nf_tables": "net/netfilter/nf_tables.ko",
    "xfs": "fs/xfs/xfs.ko",
}
CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
CORPUS_BTF = CORPUS / "vmlinux-6.1.0-56-cloud-amd64.btf"
NAMED_KINDS = (f.STRUCT, f.UNION, f.ENUM, f.ENUM64, f.TYPEDEF)
FUNCTIONS_AND_VARIABLES = (f.FUNC, f.VAR, f.DATASEC)


class Describer(ReferenceSpeller):
    """Id-free descriptions of types, what a layout comparison compares: member types
    spelled as C declarators (btf/declarator.py), anonymous aggregates written out."""

    def __init__(self, btf: Btf):
        super().__init__(btf)
        self.btf = btf
        self._open: set[int] = set()  # anonymous aggregates being written out

    def label(self, type_id: int) -> str:
        """A named type by name; an anonymous struct, union or enum with what it holds
        (`struct {...}` inside itself)."""
        t = self.types[type_id]
        if t.name_off or t.kind not in (f.STRUCT, f.UNION, f.ENUM, f.ENUM64) \
                or type_id in self._open:
            return super().label(type_id)
        self._open.add(type_id)
        if t.kind in (f.ENUM, f.ENUM64):
            text = f"enum {{{self.values(t)}}}"
        else:
            text = f"{'union' if t.kind == f.UNION else 'struct'} {{{self.members(t)}}}"
        self._open.discard(type_id)
        return text

    def members(self, t: Type) -> str:
        parts = []
        for name_off, member_type, offset in t.items:
            bits = offset & 0xFFFFFF if t.kflag else offset
            size = offset >> 24 if t.kflag else 0
            field = f"{self.btf.name(name_off)}@{bits}" + (f":{size}" if size else "")
            parts.append(f"{field} {self.expr(member_type)}")
        return f"size {t.size_or_type}; " + "; ".join(parts)

    def values(self, t: Type) -> str:
        sign = "signed" if t.kflag else "unsigned"
        values = ", ".join(f"{self.btf.name(n)}={v}" for n, v in t.items)
        return f"size {t.size_or_type} {sign}: {values}"

    def layout(self, t: Type) -> str:
        if t.kind in (f.STRUCT, f.UNION):
            return self.members(t)
        if t.kind in (f.ENUM, f.ENUM64):
            return self.values(t)
        return self.expr(t.size_or_type)


def named_layouts(btf: Btf) -> dict[tuple[str, str], Counter]:
    """(kind, name) -> multiset of layouts: a name may have several definitions."""
    describer = Describer(btf)
    out: dict[tuple[str, str], Counter] = {}
    for _, t in btf.own():
        if t.kind in NAMED_KINDS and t.name_off:
            key = (f.kind_name(t.kind), btf.name(t.name_off))
            out.setdefault(key, Counter())[describer.layout(t)] += 1
    return out


def without_functions(btf: Btf) -> Btf:
    """`btf` minus FUNC, VAR, DATASEC, the decl tags on them and the FUNC_PROTOs only FUNCs
    use: its types."""
    all_types = btf.all_types()
    dropped = {i for i, t in btf.own() if t.kind in FUNCTIONS_AND_VARIABLES}
    dropped |= {i for i, t in btf.own() if t.kind == f.DECL_TAG and t.size_or_type in dropped}
    used = {r for i, t in btf.own() if i not in dropped for r in t.refs()}
    dropped |= {t.size_or_type for i, t in btf.own()
                if t.kind == f.FUNC and t.size_or_type not in used}
    kept = [i for i, _ in btf.own() if i not in dropped]
    new_id = list(range(len(all_types)))
    for position, i in enumerate(kept, btf.first_id):
        new_id[i] = position
    return Btf([all_types[i].remap(new_id) for i in kept], btf.strings, btf.base)


def prototypes(btf: Btf) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """FUNC name -> [(prototype with types only, parameter names)], one per FUNC."""
    describer = Describer(btf)
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for _, t in btf.own():
        if t.kind == f.FUNC:
            proto = btf.type_by_id(t.size_or_type)
            names = tuple(btf.name(n) for n, _ in proto.items)
            out.setdefault(btf.name(t.name_off), []).append(
                (describer.expr(t.size_or_type), names))
    return out


def placed_variables(btf: Btf) -> dict[str, tuple[str, int, int, int]]:
    """VAR name -> (DATASEC, offset, size, linkage)."""
    out = {}
    for _, t in btf.own():
        if t.kind == f.DATASEC:
            for var, offset, size in t.items:
                v = btf.type_by_id(var)
                out[btf.name(v.name_off)] = (btf.name(t.name_off), offset, size, v.extra)
    return out


# Classes of names one side lacks; "UNEXPLAINED" ones fail the comparison.
CLONE_ONLY = ("only in pahole: the code exists only as .isra/.constprop/.part clones "
              "(pahole's optimized_func names the clone after the function; ours makes no "
              "FUNC without a symbol of the exact name)")
PAHOLE_SILENT = ("UNEXPLAINED (only in ours): pahole drops it without a --verbose line "
                 "(pahole 1.31 says nothing of parameters in unexpected registers)")
AMBIGUOUS = ("UNEXPLAINED (only in ours): its code sits at several addresses "
             "(pahole 1.31's ambiguous_addr)")


def clone_symbols(symbols) -> dict[str, set[str]]:
    """Function name up to its first '.' -> the suffixed STT_FUNC names of that prefix."""
    out: dict[str, set[str]] = {}
    for name in symbols.functions if symbols is not None else ():
        dot = name.find(".")
        if dot > 0:
            out.setdefault(name[:dot], set()).add(name)
    return out


def class_label(cause: str) -> str:
    """A cause's short name for the table."""
    for label, words in CLASS_WORDS:
        if words in cause:
            return label
    return cause.split(":")[0]


CLASS_WORDS = (
    ("only in pahole: clone only", "exists only as .isra"),
    ("only in ours: pahole silent (unexpected register)", "without a --verbose line"),
    ("only in ours: ambiguous address", "pahole 1.31's ambiguous_addr"),
    ("only in pahole: prototypes differ (ours drops)", "prototypes differ between units"),
    ("only in pahole: DW_CC_nocall (ours drops)", "DW_CC_nocall"),
    ("only in ours: address 0 per-CPU (pahole 1.24 drops)", "pahole 1.24 compares"),
)


def cause_only_in_ours(name: str, skipped: dict[str, str] | None, symbols) -> str:
    """Why pahole (run by us, with --verbose) has no FUNC `name` that ours has."""
    if symbols is not None and name in symbols.ambiguous:
        return AMBIGUOUS
    if skipped is None:
        return "UNEXPLAINED (only in ours)"
    if name in skipped:
        # Ours drops what pahole 1.31 skips with a reason, .part pieces included.
        return f"UNEXPLAINED (only in ours): pahole: {skipped[name]}"
    return PAHOLE_SILENT


def compare_functions(ours: Btf, theirs: Btf, stats, skipped: dict[str, str] | None = None,
                      symbols=None, classes: Counter | None = None) -> int:
    """Print the function comparison; returns how many differences have no known cause.
    `skipped`: the names pahole's --verbose said it skipped, with why; `classes` counts
    the names per cause."""
    mine, their = prototypes(ours), prototypes(theirs)
    clones = clone_symbols(symbols)
    common = set(mine) & set(their)
    share = len(common) / len(their) if their else 1.0
    print(f"\nfunctions: {len(their)} names in pahole's ({sum(map(len, their.values()))} "
          f"FUNCs), {len(mine)} in ours; {len(common)} common = {share:.2%} of pahole's")
    inconsistent = set(stats.functions.inconsistent) if stats else None
    nocall = set(stats.functions.nocall) if stats else set()
    unexplained = 0
    causes: dict[str, list[str]] = {}
    ambiguous = set(stats.functions.ambiguous) if stats else set()
    for name in sorted(set(their) - set(mine)):
        kinds = {types for types, _ in their[name]}
        if symbols is not None and name not in symbols.functions and name in clones:
            cause = CLONE_ONLY
        elif name in ambiguous:
            cause = "UNEXPLAINED: ambiguous address: dropped by ours, kept by pahole"
            unexplained += 1
        elif name in nocall:
            cause = "marked DW_CC_nocall (ABI changed): dropped by ours"
        elif inconsistent is not None and name in inconsistent:
            cause = ("prototypes differ between units: dropped by ours (consistent_func); "
                     "pahole 1.24 keeps the first it meets in each thread, here "
                     + ("several" if len(their[name]) > 1 else "one"))
        elif inconsistent is None and len(kinds) > 1:
            cause = "pahole has several prototypes for it (consistent_func drops such names)"
        else:
            cause = "UNEXPLAINED"
            unexplained += 1
        causes.setdefault(cause, []).append(name)
    for name in sorted(set(mine) - set(their)):
        cause = cause_only_in_ours(name, skipped, symbols)
        causes.setdefault(cause, []).append(name)
        unexplained += cause.startswith("UNEXPLAINED")
    for cause, names in sorted(causes.items()):
        if classes is not None:
            classes[class_label(cause)] += len(names)
        print(f"  {len(names)} names, {cause}:")
        for chunk in range(0, len(names), 6):
            print("    " + ", ".join(names[chunk:chunk + 6]))
    several = sorted(n for n in common if len(their[n]) > 1)
    print(f"  {len(several)} common names have several FUNCs in pahole's (one in ours): "
          f"prototypes that differ only in parameter names or const (a __weak definition "
          f"and its override, syscall stubs); ours takes the definition at the symbol's "
          f"address")
    changed = sorted(n for n in common
                     if not {p for p, _ in mine[n]} <= {p for p, _ in their[n]})
    const_only = [n for n in changed
                  if {_unconst(p) for p, _ in mine[n]} <= {_unconst(p) for p, _ in their[n]}]
    type_changes = [n for n in changed if n not in const_only]
    names_only = sorted(n for n in common if n not in changed
                        and {a for _, a in mine[n]} - {a for _, a in their[n]})
    print(f"  {len(names_only)} common names with other parameter names than pahole's only "
          f"FUNC (ours prefers the linked definition, pahole the first it meets)")
    print(f"  {len(const_only)} common names whose prototypes differ only in const (pahole "
          f"met a const-qualified definition first, e.g. a fortify inline wrapper; ours "
          f"takes the one at the symbol's address): {', '.join(const_only)}")
    print(f"  {len(type_changes)} common names whose prototype types differ otherwise:")
    for name in type_changes:
        print(f"    {name}: pahole {sorted(p for p, _ in their[name])} / ours "
              f"{sorted(p for p, _ in mine[name])}")
    return unexplained + len(type_changes)


def _unconst(spelled: str) -> str:
    """A prototype's spelling without its `const`s (on pointers or what they point to)."""
    return " ".join(word for word in re.findall(r"\w+|[^\w\s]", spelled) if word != "const")


def compare_variables(ours: Btf, theirs: Btf, classes: Counter | None = None) -> int:
    mine, their = placed_variables(ours), placed_variables(theirs)
    print(f"\nvariables: {len(their)} VARs in pahole's, {len(mine)} in ours")
    unexplained = 0
    for name in sorted(set(mine) ^ set(their)):
        side = "ours" if name in mine else "pahole's"
        place = (mine if name in mine else their)[name]
        if name in mine and place[1] == 0:
            cause = ("at offset 0, named only through DW_AT_specification: pahole 1.24 "
                     "compares the defining DIE's own (absent) name there and skips it")
        else:
            cause = "UNEXPLAINED"
            unexplained += 1
        if classes is not None:
            classes["VAR " + class_label(cause)] += 1
        print(f"  only in {side}: {name} {place}: {cause}")
    moved = sorted(n for n in set(mine) & set(their) if mine[n] != their[n])
    for name in moved:
        print(f"  placed differently: {name}: pahole {their[name]} / ours {mine[name]}")
    return unexplained + len(moved)


def kind_counts(btf: Btf) -> Counter:
    return Counter(f.kind_name(t.kind) for t in btf.types)


SKIP_LINE = re.compile(r"^(\S+) : skipping BTF encoding of function due to (.*)$")


def run_pahole(pahole: str, elf: str, features: str, base: str | None, out: Path,
               jobs: int | None) -> dict[str, str]:
    """Run `pahole` on `elf` as a kernel build would with `--btf_features=features`, into
    `out`; the functions its --verbose says it skipped -> why."""
    command = [pahole, f"--btf_features={features}", f"-j{jobs or 2}", "--verbose",
               f"--btf_encode_detached={out}"]
    if base:
        command.append(f"--btf_base={base}")
    skipped: dict[str, str] = {}
    with subprocess.Popen([*command, elf], stdout=subprocess.PIPE, text=True,
                          errors="replace") as process:
        for line in process.stdout:
            found = SKIP_LINE.match(line.rstrip("\n"))
            if found:
                skipped[found.group(1)] = found.group(2)
    if process.returncode:
        raise InputError(elf, f"{pahole} exited with status {process.returncode}")
    return skipped


def load_sides(args, workdir: Path):
    """(ours, theirs, base, encode stats or None, pahole's skips or None, symbols)."""
    from canonbtf.dwarf.encode import encode_file
    from canonbtf.dwarf.features import DEFAULT as DEFAULT_FEATURES
    from canonbtf.dwarf.symbols import read_symbols
    from canonbtf.pahole.front import parse_args

    stats = skipped = None
    base = reader.load(args.base) if args.base else None
    features = DEFAULT_FEATURES
    if args.pahole:
        out = workdir / "pahole.btf"
        skipped = run_pahole(args.pahole, args.elf, args.btf_features, args.base, out,
                             args.jobs)
        args.btf = f"{args.pahole} --btf_features={args.btf_features}"
        theirs = reader.load(str(out), base)
        features = frozenset(parse_args([f"--btf_features={args.btf_features}", "-J",
                                          args.elf]).features)
    else:
        theirs = reader.load(args.btf, base)
    if args.ours:
        ours = reader.load(args.ours, base)
        print(f"ours: {args.ours}")
    else:
        start = time.monotonic()
        ours, stats = encode_file(args.elf, args.jobs, base=base, features=features)
        print(f"ours: canonbtf encode -j{args.jobs or 'auto'} --features="
              f"{','.join(sorted(features))} {args.elf}: {time.monotonic() - start:.1f}s, "
              f"{stats.units} units, {stats.merged_records} records merged in the parent")
    return ours, theirs, base, stats, skipped, read_symbols(args.elf)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elf", default=KERNEL, help="ELF with DWARF to encode")
    parser.add_argument("--btf", default=str(CORPUS_BTF), help="pahole's BTF for it")
    parser.add_argument("--base", help="base BTF when --btf is a module's split BTF")
    parser.add_argument("--module", choices=sorted(MODULES),
                        help="a corpus module: sets --elf, --btf and --base")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="encode with N workers")
    parser.add_argument("--ours", help="an already encoded BTF instead of encoding --elf")
    parser.add_argument("--pahole", help="run this pahole on --elf instead of reading --btf")
    parser.add_argument("--btf_features", default="default",
                        help="with --pahole: its --btf_features (ours takes the same)")
    parser.add_argument("--table", metavar="LABEL",
                        help="also print the FUNC/VAR counts per class as a Markdown row")
    args = parser.parse_args()
    if args.module:
        args.elf = f"{DEBUG}lib/modules/6.1.0-56-cloud-amd64/kernel/{MODULES[args.module]}"
        args.btf = str(CORPUS / f"mod-6.1.0-56-cloud-{args.module}.btf")
        args.base = str(CORPUS_BTF)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            ours, theirs, base, stats, skipped, symbols = load_sides(args, Path(workdir))
    except InputError as e:
        print(f"compare_pahole: {e}", file=sys.stderr)
        return 2
    print(f"theirs: {args.btf}")
    unexplained = compare_types(ours, theirs, base)
    classes: Counter = Counter()
    unexplained += (compare_functions(ours, theirs, stats, skipped, symbols, classes)
                    + compare_variables(ours, theirs, classes))
    if args.table:
        print_table_row(args.table, ours, theirs, classes)
    return 0 if not unexplained else 1


def print_table_row(label: str, ours: Btf, theirs: Btf, classes: Counter) -> None:
    """One Markdown row: FUNC and VAR counts on both sides, then each class's count."""
    counts = [sum(1 for t in btf.types if t.kind == kind)
              for kind in (f.FUNC, f.VAR) for btf in (ours, theirs)]
    parts = "; ".join(f"{name} {count}" for name, count in sorted(classes.items()))
    print(f"\n| {label} | {counts[0]} / {counts[1]} | {counts[2]} / {counts[3]} | "
          f"{parts or 'none'} |")


def compare_types(ours: Btf, theirs: Btf, base: Btf | None) -> int:
    """Print the type comparison; returns how many named types differ."""
    from canonbtf.canon import canonicalize

    ours_counts, theirs_counts = kind_counts(ours), kind_counts(theirs)
    print(f"\n{'kind':<12}{'ours':>10}{'pahole':>10}")
    for kind in spec.KIND_NAMES[1:]:
        row = (ours_counts[kind], theirs_counts[kind])
        if any(row):
            print(f"{kind:<12}{row[0]:>10}{row[1]:>10}")
    print(f"{'total':<12}{len(ours):>10}{len(theirs):>10}")

    mine, their = named_layouts(ours), named_layouts(theirs)
    missing = sorted(set(their) - set(mine))
    # In split BTF, a copy of a base type that libbpf's dedup left in pahole's module is
    # the base type itself in ours.
    in_base = named_layouts(base) if base is not None else {}
    repeated = [k for k in missing if k in in_base and set(their[k]) <= set(in_base[k])]
    missing = [k for k in missing if k not in repeated]
    extra = sorted(set(mine) - set(their))
    different = sorted(k for k in set(mine) & set(their) if mine[k] != their[k])
    print(f"\nnamed STRUCT/UNION/ENUM/ENUM64/TYPEDEF: {len(their)} names in pahole's, "
          f"{len(mine)} in ours; {len(missing) + len(repeated)} missing "
          f"({len(repeated)} of them base types), {len(extra)} extra, "
          f"{len(different)} with a different layout")
    for kind, name in repeated:
        print(f"  only in pahole's, a copy of the base's (ours refers to the base's): "
              f"{kind} {name}")
    for kind, name in missing:
        print(f"  missing: {kind} {name}")
    for kind, name in extra:
        print(f"  extra:   {kind} {name}")
    for key in different:
        print(f"  differs: {key[0]} {key[1]}")
        for layout in sorted(set(their[key]) | set(mine[key])):
            print(f"    pahole x{their[key][layout]} / ours x{mine[key][layout]}: {layout}")

    same = (writer.write(canonicalize(without_functions(theirs), dedup=True))
            == writer.write(canonicalize(without_functions(ours), dedup=True)))
    print(f"\ntypes (functions and variables left out) byte-identical, both in canonical "
          f"order: {'yes' if same else 'no'}")
    return len(missing) + len(extra) + len(different)


if __name__ == "__main__":
    sys.exit(main())
