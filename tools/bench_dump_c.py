#!/usr/bin/env python3
"""Benchmark `canonbtf dump --format c` of the 6.12 corpus vmlinux BTF against
`bpftool btf dump file X format c` of the same file, in the same run.

Both write vmlinux.h to a file, as a build does. Target (issue 15): ours <= 2 x bpftool
(best wall time of the whole command over N alternating runs; tools/bench_all.py judges
it on both corpus kernels).
Usage: tools/bench_dump_c.py [--repeat N] [BTF]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CORPUS, canonbtf_argv, need, run_measured  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("btf", nargs="?", type=Path,
                    default=CORPUS / "vmlinux-6.12.113-cloud-amd64.btf")
    args = ap.parse_args()
    if not args.btf.exists():
        sys.exit(f"benchmark: {args.btf} not found")
    bpftool = need("bpftool")
    # Alternate the two so that both see the same machine load.
    ours = theirs = (float("inf"), 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        header = str(Path(tmp) / "vmlinux.h")
        bpftool_argv = ["sh", "-c", '"$0" btf dump file "$1" format c > "$2"', bpftool,
                        str(args.btf), header]
        ours_argv = canonbtf_argv("dump", str(args.btf), "--format", "c", "-o", header)
        for _ in range(args.repeat):
            theirs = min(theirs, run_measured(bpftool_argv))
            ours = min(ours, run_measured(ours_argv))
    print(f"input: {args.btf}")
    print(f"{'command':42} {'wall s':>8} {'peak MiB':>9} {'x bpftool':>10}")
    for name, (t, mem) in (("bpftool btf dump file X format c", theirs),
                           ("canonbtf dump X --format c", ours)):
        print(f"{name:42} {t:8.2f} {mem:9.0f} {t / theirs[0]:10.2f}")


if __name__ == "__main__":
    main()
