#!/usr/bin/env python3
"""Compare `canonbtf encode` of a kernel's DWARF with the BTF its build made with pahole.

    python tools/compare_pahole.py [--elf VMLINUX] [--btf VMLINUX.btf] [-j N] [--ours OURS]

Defaults: the 6.1 cloud kernel fetched by ../shared/tools/fetch-kernel-dbg and its .BTF
from ../shared/corpus. Prints the type counts by kind side by side, then every named
STRUCT, UNION, ENUM, ENUM64 and TYPEDEF whose layout differs (members, bit offsets,
bitfield sizes, sizes, member types written out as C-like type expressions, enum values)
or that only one side has, then whether the two are byte-identical once pahole's
functions and variables (not encoded yet) are left out and both are in canonical order.
Exit status 0 when no named type differs, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from canonbtf.btf import format as f  # noqa: E402
from canonbtf.btf import reader, writer  # noqa: E402
from canonbtf.btf.model import Btf  # noqa: E402
from canonbtf.errors import InputError  # noqa: E402

KERNEL = ("/root/.cache/canonbtf-corpus/linux-image-6.1.0-56-cloud-amd64-dbg/usr/lib/debug/"
          "boot/vmlinux-6.1.0-56-cloud-amd64")
CORPUS_BTF = (Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
              / "vmlinux-6.1.0-56-cloud-amd64.btf")
NAMED_KINDS = (f.STRUCT, f.UNION, f.ENUM, f.ENUM64, f.TYPEDEF)
NOT_ENCODED_YET = (f.FUNC, f.VAR, f.DATASEC)


class Describer:
    """Id-free descriptions of types: what a layout comparison can compare."""

    def __init__(self, btf: Btf):
        self.btf = btf
        self.types = btf.all_types()

    def name(self, t) -> str:
        return self.btf.name(t.name_off)

    def ref(self, type_id: int, depth: int = 0) -> str:
        """A type as a member type: named types by name, anonymous ones spelled out."""
        t = self.types[type_id]
        if t is None:
            return "void"
        kind = t.kind
        name = self.name(t)
        if kind in (f.INT, f.FLOAT):
            return name
        if kind in (f.STRUCT, f.UNION, f.FWD):
            keyword = "union" if kind == f.UNION or (kind == f.FWD and t.kflag) else "struct"
            if name:
                return f"{keyword} {name}"
            return f"{keyword} {{{self.members(t, depth + 1)}}}" if depth < 8 else keyword
        if kind in (f.ENUM, f.ENUM64):
            return f"enum {name}" if name else f"enum {{{self.values(t)}}}"
        if kind == f.TYPEDEF:
            return name
        if kind == f.PTR:
            return self.ref(t.size_or_type, depth) + " *"
        if kind in (f.CONST, f.VOLATILE, f.RESTRICT, f.TYPE_TAG):
            word = {f.CONST: "const", f.VOLATILE: "volatile", f.RESTRICT: "restrict",
                    f.TYPE_TAG: f"tag({name})"}[kind]
            return f"{word} {self.ref(t.size_or_type, depth)}"
        if kind == f.ARRAY:
            elem, _, nelems = t.extra
            return f"{self.ref(elem, depth)}[{nelems}]"
        if kind == f.FUNC_PROTO:
            params = ", ".join(self.ref(p, depth) if p or n else "..." for n, p in t.items)
            return f"fn({params}) -> {self.ref(t.size_or_type, depth)}"
        return f"{f.kind_name(kind)} {name}"

    def members(self, t, depth: int = 0) -> str:
        parts = []
        for name_off, member_type, offset in t.items:
            bits = offset & 0xFFFFFF if t.kflag else offset
            size = offset >> 24 if t.kflag else 0
            field = f"{self.btf.name(name_off)}@{bits}" + (f":{size}" if size else "")
            parts.append(f"{field} {self.ref(member_type, depth)}")
        return f"size {t.size_or_type}; " + "; ".join(parts)

    def values(self, t) -> str:
        sign = "signed" if t.kflag else "unsigned"
        values = ", ".join(f"{self.btf.name(n)}={v}" for n, v in t.items)
        return f"size {t.size_or_type} {sign}: {values}"

    def layout(self, t) -> str:
        if t.kind in (f.STRUCT, f.UNION):
            return self.members(t)
        if t.kind in (f.ENUM, f.ENUM64):
            return self.values(t)
        return self.ref(t.size_or_type)


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
    """`btf` minus FUNC, VAR, DATASEC and the FUNC_PROTOs only FUNCs use."""
    all_types = btf.all_types()
    dropped = {i for i, t in btf.own() if t.kind in NOT_ENCODED_YET}
    used = {r for i, t in btf.own() if i not in dropped for r in t.refs()}
    dropped |= {t.size_or_type for i, t in btf.own()
                if t.kind == f.FUNC and t.size_or_type not in used}
    kept = [i for i, _ in btf.own() if i not in dropped]
    new_id = [0] * len(all_types)
    for position, i in enumerate(kept, 1):
        new_id[i] = position
    return Btf([all_types[i].remap(new_id) for i in kept], btf.strings)


def kind_counts(btf: Btf) -> Counter:
    return Counter(f.kind_name(t.kind) for t in btf.types)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elf", default=KERNEL, help="ELF with DWARF to encode")
    parser.add_argument("--btf", default=str(CORPUS_BTF), help="pahole's BTF for it")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="encode with N workers")
    parser.add_argument("--ours", help="an already encoded BTF instead of encoding --elf")
    args = parser.parse_args()
    from canonbtf.canon import canonicalize

    try:
        theirs = reader.load(args.btf)
        if args.ours:
            ours = reader.load(args.ours)
            print(f"ours: {args.ours}")
        else:
            from canonbtf.dwarf.encode import encode_file

            start = time.monotonic()
            ours, stats = encode_file(args.elf, args.jobs)
            print(f"ours: canonbtf encode -j{args.jobs or 'auto'} {args.elf}: "
                  f"{time.monotonic() - start:.1f}s, {stats.units} units, "
                  f"{stats.merged_records} records merged in the parent")
    except InputError as e:
        print(f"compare_pahole: {e}", file=sys.stderr)
        return 2
    print(f"theirs: {args.btf}")

    stripped = without_functions(theirs)
    ours_counts, theirs_counts, stripped_counts = (kind_counts(b) for b in
                                                   (ours, theirs, stripped))
    print(f"\n{'kind':<12}{'ours':>10}{'pahole':>10}{'pahole w/o funcs/vars':>24}")
    for kind in f.KIND_NAMES[1:]:
        row = (ours_counts[kind], theirs_counts[kind], stripped_counts[kind])
        if any(row):
            print(f"{kind:<12}{row[0]:>10}{row[1]:>10}{row[2]:>24}")
    print(f"{'total':<12}{len(ours):>10}{len(theirs):>10}{len(stripped):>24}")

    mine, their = named_layouts(ours), named_layouts(theirs)
    missing = sorted(set(their) - set(mine))
    extra = sorted(set(mine) - set(their))
    different = sorted(k for k in set(mine) & set(their) if mine[k] != their[k])
    print(f"\nnamed STRUCT/UNION/ENUM/ENUM64/TYPEDEF: {len(their)} names in pahole's, "
          f"{len(mine)} in ours; {len(missing)} missing, {len(extra)} extra, "
          f"{len(different)} with a different layout")
    for kind, name in missing:
        print(f"  missing: {kind} {name}")
    for kind, name in extra:
        print(f"  extra:   {kind} {name}")
    for key in different:
        print(f"  differs: {key[0]} {key[1]}")
        for layout in sorted(set(their[key]) | set(mine[key])):
            print(f"    pahole x{their[key][layout]} / ours x{mine[key][layout]}: {layout}")

    same = writer.write(canonicalize(stripped, dedup=True)) == writer.write(ours)
    print(f"\nbyte-identical to pahole's BTF without functions and variables, both in "
          f"canonical order: {'yes' if same else 'no'}")
    return 0 if not (missing or extra or different) else 1


if __name__ == "__main__":
    sys.exit(main())
