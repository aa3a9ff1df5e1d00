#!/usr/bin/env python3
"""Check the .BTF_ids section resolve_btfids wrote against the BTF it was given.

    resolve_btfids --btf vmlinux.btf vmlinux      # (Debian: linux-kbuild-6.12*/tools/bpf)
    python3 tools/check_btfids.py vmlinux vmlinux.btf

Every `__BTF_ID__<kind>__<name>__<n>` symbol outside a set must hold the id of the type
`<name>` of that kind in the BTF; every `__BTF_ID__set__`/`set8__` must hold exactly its
members' ids (resolve_btfids sorts them), plus a 0 for each BTF_ID_UNUSED slot. Prints
the counts; exit status 1 when anything does not match. This is how the closing check
of canonbtf-pahole on a real vmlinux was made (docs/PAHOLE.md).
"""

from __future__ import annotations

import struct
import sys

from elftools.elf.elffile import ELFFile

from canonbtf.btf import format as f
from canonbtf.btf import reader

KINDS = {"struct": f.STRUCT, "union": f.UNION, "typedef": f.TYPEDEF, "func": f.FUNC}
SETS = (("__BTF_ID__set8__", 8, 8), ("__BTF_ID__set__", 4, 4))  # prefix, header, slot


def _ids_by_name(path: str) -> dict[tuple[int, str], int]:
    btf = reader.load(path)
    ids: dict[tuple[int, str], int] = {}
    for type_id, t in btf.own():
        ids.setdefault((t.kind, btf.name(t.name_off)), type_id)
    return ids


def _target(symbol: str) -> tuple[int, str] | None:
    kind, _, rest = symbol[len("__BTF_ID__"):].partition("__")
    if kind not in KINDS:
        return None
    return KINDS[kind], rest.rsplit("__", 1)[0]


def check(elf_path: str, btf_path: str) -> tuple[int, int, int, int]:
    """(plain ids right, wrong, sets right, wrong)."""
    ids = _ids_by_name(btf_path)
    with open(elf_path, "rb") as fh:
        elf = ELFFile(fh)
        section = elf.get_section_by_name(".BTF_ids")
        data, base = section.data(), section["sh_addr"]
        symbols = [(s.name, s["st_value"]) for s in elf.get_section_by_name(".symtab")
                   .iter_symbols() if s.name.startswith("__BTF_ID__")]
    sets = []
    for name, addr in symbols:
        for prefix, head, width in SETS:
            if name.startswith(prefix):
                (count,) = struct.unpack_from("<I", data, addr - base)
                sets.append((addr, addr + head + width * count, head, width))
    plain = [0, 0]
    for name, addr in symbols:
        target = _target(name)
        if target is None or any(a < addr < b for a, b, _, _ in sets):
            continue
        (value,) = struct.unpack_from("<I", data, addr - base)
        plain[value != ids.get(target, -1)] += 1
    grouped = [0, 0]
    for a, b, head, width in sets:
        want = [ids.get(t, -1) for n, addr in symbols if a < addr < b
                for t in [_target(n)] if t]
        got = [struct.unpack_from("<I", data, a - base + head + width * k)[0]
               for k in range((b - a - head) // width)]
        want += [0] * (len(got) - len(want))  # BTF_ID_UNUSED slots
        grouped[sorted(want) != sorted(got)] += 1
    return plain[0], plain[1], grouped[0], grouped[1]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: check_btfids.py ELF BTF", file=sys.stderr)
        return 2
    ok, bad, sets_ok, sets_bad = check(sys.argv[1], sys.argv[2])
    print(f"{ok} ids match their names, {bad} do not; {sets_ok} sets hold exactly their "
          f"members' ids, {sets_bad} do not")
    return 1 if bad or sets_bad else 0


if __name__ == "__main__":
    sys.exit(main())
