#!/usr/bin/env python3
"""Benchmark `canonbtf sort` of the 6.1 corpus vmlinux BTF against the encode it makes
reproducible: `pahole -j2 --btf_encode_detached` of the same kernel's DWARF, same run.

Target (issue 3): sort <= 0.2 x that pahole run, peak memory <= 1 GB.
Usage: tools/bench_sort.py [--repeat N]   (the kernel comes from ../shared/tools/fetch-kernel-dbg)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CORPUS, FETCHED_VMLINUX, canonbtf_argv, need, run_measured  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    btf = CORPUS / "vmlinux-6.1.0-56-cloud-amd64.btf"
    if not btf.exists():
        sys.exit(f"benchmark: {btf} not found")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sorted.btf"
        rows = []
        for label, extra in (("sort", []), ("sort --dedup", ["--dedup"]),
                             ("sort --order name", ["--order", "name"])):
            t, mem = run_measured(canonbtf_argv("sort", str(btf), "-o", str(out), *extra),
                                  args.repeat)
            rows.append((f"canonbtf {label}", t, mem))
        pahole_time = None
        if FETCHED_VMLINUX.exists():
            pahole = need("pahole")
            t, mem = run_measured([pahole, "-j2", f"--btf_encode_detached={tmp}/p.btf",
                                   str(FETCHED_VMLINUX)], 1)
            rows.append(("pahole -j2 --btf_encode_detached", t, mem))
            pahole_time = t
        else:
            print(f"(no fetched kernel at {FETCHED_VMLINUX}: run ../shared/tools/fetch-kernel-dbg "
                  "for the pahole comparison)")
    print(f"{'command':40} {'wall s':>8} {'peak MiB':>9} {'x pahole':>9}")
    for name, t, mem in rows:
        ratio = f"{t / pahole_time:9.2f}" if pahole_time else f"{'-':>9}"
        print(f"{name:40} {t:8.2f} {mem:9.0f} {ratio}")


if __name__ == "__main__":
    main()
