#!/usr/bin/env python3
"""A module's keyed merge against its records merge, over the module's own kernel.

    python3 tools/keyed_modules.py VMLINUX MODULE.ko... [--every N]

Each module is encoded as split BTF over VMLINUX's .BTF twice in this process:
`encode_dwarf(merge="records")`, every unit's records deduplicated against the base (the
reference), and the default keyed merge of the module alone made split over the base
(dwarf/keys.py). One line per module: whether the `.BTF` bytes are the same, both CPU
times, and the names the base was found to define otherwise (dedup.BaseSplitsNames);
then the counts and the CPU sums. Exit status 0 when every module gives the same bytes,
1 when one does not, 2 on bad input. `--every N` takes every N-th module given (a sample
of a directory listing). Not a test: it needs a kernel with DWARF and its modules
(../shared/tools/fetch-kernel-dbg with MODULES=...).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from canonbtf.btf import reader, writer  # noqa: E402
from canonbtf.dwarf.encode import encode_dwarf  # noqa: E402
from canonbtf.dwarf.sections import open_dwarf  # noqa: E402
from canonbtf.errors import InputError  # noqa: E402


def encoded(path: str, base, merge: str) -> tuple[str, float, frozenset]:
    """(md5 of the .BTF bytes, CPU seconds, names split by the base) of one encode."""
    start = time.process_time()
    btf, stats = encode_dwarf(open_dwarf(path), 1, base=base, merge=merge)
    data = writer.write(btf)
    return hashlib.md5(data).hexdigest(), time.process_time() - start, stats.split_names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vmlinux", help="the kernel (an ELF with .BTF, or raw BTF)")
    parser.add_argument("modules", nargs="+", metavar="MODULE.ko")
    parser.add_argument("--every", type=int, default=1, metavar="N",
                        help="every N-th module only (default: all)")
    args = parser.parse_args()
    try:
        base = reader.load(args.vmlinux)
    except InputError as e:
        print(f"keyed_modules: {e}", file=sys.stderr)
        return 2
    modules = args.modules[::max(1, args.every)]
    differ = split = 0
    cpu = {"records": 0.0, "keyed": 0.0}
    for path in modules:
        try:
            records = encoded(path, base, "records")
            keyed = encoded(path, base, "keyed")
        except InputError as e:
            print(f"keyed_modules: {e}", file=sys.stderr)
            return 2
        cpu["records"] += records[1]
        cpu["keyed"] += keyed[1]
        same = records[0] == keyed[0]
        differ += not same
        split += bool(keyed[2])
        names = ", ".join(" ".join(str(part) for part in name[:2]) for name in sorted(keyed[2]))
        print(f"{Path(path).name:28} {'same' if same else 'DIFFERENT':9} records "
              f"{records[1]:.3f} s, keyed {keyed[1]:.3f} s"
              + (f"; split by the base: {names}" if names else ""), flush=True)
    print(f"{len(modules)} modules: {len(modules) - differ} same, {differ} different; the "
          f"base split a name in {split}; CPU records {cpu['records']:.2f} s, keyed "
          f"{cpu['keyed']:.2f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
