#!/usr/bin/env python3
"""Benchmark `canonbtf encode` beside pahole on the same file, in the same run.

    python tools/bench_encode.py [--elf VMLINUX] [--jobs 1 2] [--skip-ours]

Runs `canonbtf encode -jN` and `pahole -jN --btf_encode_detached` for each N, one after
the other, and prints wall time, the peak RSS of the largest process and of all the
run's processes together (sampled from /proc every 50 ms), our time split into the
per-unit work and the parent's merge, and the ratios to pahole at the same -j.
Default input: the 6.1 cloud kernel from ../shared/tools/fetch-kernel-dbg.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KERNEL = ("/root/.cache/canonbtf-corpus/linux-image-6.1.0-56-cloud-amd64-dbg/usr/lib/debug/"
          "boot/vmlinux-6.1.0-56-cloud-amd64")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


class TreeSampler(threading.Thread):
    """Peak RSS of the largest process and of the whole process tree of `pid`."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_one = 0
        self.peak_all = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            pids = [self.pid]
            i = 0
            while i < len(pids):
                pids.extend(_children(pids[i]))
                i += 1
            sizes = [_rss_kb(p) for p in pids]
            self.peak_one = max(self.peak_one, max(sizes, default=0))
            self.peak_all = max(self.peak_all, sum(sizes))
            self.stop.wait(0.05)


def measure(command: list[str]) -> dict:
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, cwd=REPO)
    sampler = TreeSampler(process.pid)
    sampler.start()
    _, stderr = process.communicate()
    wall = time.monotonic() - start
    sampler.stop.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"bench_encode: {' '.join(command)} failed:\n{stderr}")
    return {"wall": wall, "one": sampler.peak_one / 1024, "all": sampler.peak_all / 1024,
            "stderr": stderr}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elf", default=KERNEL)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-ours", action="store_true", help="only time pahole")
    args = parser.parse_args()
    if not Path(args.elf).exists():
        print(f"bench_encode: {args.elf}: no such file (run ../shared/tools/fetch-kernel-dbg)",
              file=sys.stderr)
        return 2
    pahole = shutil.which("pahole")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in args.jobs:
            if pahole:
                out = os.path.join(tmp, f"pahole-j{jobs}.btf")
                theirs = measure([pahole, f"-j{jobs}", "--btf_gen_floats",
                                  f"--btf_encode_detached={out}", args.elf])
                rows.append((f"pahole -j{jobs}", jobs, theirs, None))
            if args.skip_ours:
                continue
            out = os.path.join(tmp, f"ours-j{jobs}.btf")
            ours = measure([sys.executable, "-m", "canonbtf", "encode", f"-j{jobs}", "-o", out,
                            args.elf])
            split = re.search(r"units ([\d.]+)s, merge ([\d.]+)s", ours["stderr"])
            rows.append((f"canonbtf encode -j{jobs}", jobs, ours, split))
    print(f"input: {args.elf}")
    print(f"{'command':<24}{'wall s':>9}{'largest MB':>12}{'all MB':>9}{'vs pahole':>11}"
          f"   split")
    pahole_wall = {jobs: m["wall"] for name, jobs, m, _ in rows if name.startswith("pahole")}
    for name, jobs, m, split in rows:
        ratio = ""
        if not name.startswith("pahole") and jobs in pahole_wall:
            ratio = f"{m['wall'] / pahole_wall[jobs]:.1f}x"
        phases = ""
        if split:
            units, merge = float(split.group(1)), float(split.group(2))
            phases = f"units {units:.1f}s, parent merge {merge:.1f}s " \
                     f"({100 * merge / m['wall']:.0f}% of wall)"
        print(f"{name:<24}{m['wall']:>9.1f}{m['one']:>12.0f}{m['all']:>9.0f}{ratio:>11}"
              f"   {phases}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
