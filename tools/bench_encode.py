#!/usr/bin/env python3
"""Benchmark `canonbtf encode` beside pahole on the same file, in the same run.

    python tools/bench_encode.py [--elf VMLINUX] [--jobs 1 2] [--python PY ...] [--skip-ours]

Runs `canonbtf encode -jN` and `pahole -jN --btf_encode_detached` for each N, one after
the other, and prints wall time, the peak RSS of the largest process and of all the
run's processes together (sampled from /proc every 50 ms), the CPU time of the command
and its workers (a fairer comparison when other jobs share the cores), our time split
into phases (units: the parallel per-unit work until the last worker answered; merge:
the parent's merge, global dedup and canonical order; rest: start-up, reading the ELF
and symbols, writing the output), the sequential share (everything but the units
phase) and the ratios to pahole at the same -j, then how the issue's targets stand.
`--python` runs this checkout's canonbtf under other interpreters too (say the python of
a PyPy virtual environment with the dependencies installed; docs/ENCODE.md "Speed").
Default input: the 6.1 cloud kernel from ../shared/tools/fetch-kernel-dbg.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The targets of the speed issue: ratio to pahole at -j1 and -j2, peak RSS (MB) of the
# largest process and of all together, and the sequential share of the -j2 wall time.
TARGET_RATIO = {1: 4.0, 2: 3.0}
TARGET_LARGEST_MB = 1024
TARGET_ALL_MB = 2048
TARGET_SEQUENTIAL = 0.20
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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(command: list[str]) -> dict:
    cpu = _children_cpu()
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, cwd=REPO)
    sampler = TreeSampler(process.pid)
    sampler.start()
    _, stderr = process.communicate()
    wall = time.monotonic() - start
    cpu = _children_cpu() - cpu  # the command and its workers, once all are reaped
    sampler.stop.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"bench_encode: {' '.join(command)} failed:\n{stderr}")
    return {"wall": wall, "cpu": cpu, "one": sampler.peak_one / 1024,
            "all": sampler.peak_all / 1024, "stderr": stderr}


def _implementation(python: str) -> str:
    """'pypy 3.9.16', 'cpython 3.11.7': what an interpreter is, for the row's label."""
    done = subprocess.run([python, "-c", "import platform; print(platform.python_implementation()"
                                         ".lower(), platform.python_version())"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elf", default=KERNEL)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--python", nargs="+", default=[sys.executable],
                        help="interpreters to run canonbtf with (default: this one)")
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
            for python in args.python:
                out = os.path.join(tmp, f"ours-j{jobs}.btf")
                ours = measure([python, "-m", "canonbtf", "encode", f"-j{jobs}", "-o", out,
                                args.elf])
                with open(out, "rb") as fh:
                    ours["md5"] = hashlib.md5(fh.read()).hexdigest()
                split = re.search(r"units ([\d.]+)s, merge ([\d.]+)s", ours["stderr"])
                label = "" if python == sys.executable else f" ({_implementation(python)})"
                rows.append((f"canonbtf encode -j{jobs}{label}", jobs, ours, split))
    print(f"input: {args.elf}")
    print(f"{'command':<34}{'wall s':>8}{'cpu s':>8}{'largest MB':>12}{'all MB':>8}"
          f"{'vs pahole':>11}{'cpu vs':>8}   phases")
    pahole_wall = {jobs: m["wall"] for name, jobs, m, _ in rows if name.startswith("pahole")}
    pahole_cpu = {jobs: m["cpu"] for name, jobs, m, _ in rows if name.startswith("pahole")}
    verdicts = []
    for name, jobs, m, split in rows:
        ratio = cpu_ratio = ""
        if not name.startswith("pahole") and jobs in pahole_cpu and pahole_cpu[jobs]:
            cpu_ratio = f"{m['cpu'] / pahole_cpu[jobs]:.1f}x"
        if not name.startswith("pahole") and jobs in pahole_wall:
            value = m["wall"] / pahole_wall[jobs]
            ratio = f"{value:.1f}x"
            if jobs in TARGET_RATIO:
                verdicts.append((f"{name} <= {TARGET_RATIO[jobs]:.0f}x pahole -j{jobs}",
                                 ratio, value <= TARGET_RATIO[jobs]))
        phases = ""
        if split:
            units, merge = float(split.group(1)), float(split.group(2))
            rest = max(m["wall"] - units - merge, 0.0)
            sequential = (m["wall"] - units) / m["wall"]
            phases = (f"units {units:.1f}s, merge {merge:.1f}s, rest {rest:.1f}s; "
                      f"sequential {100 * sequential:.0f}%")
            if jobs == 2:
                verdicts.append((f"{name}: sequential share <= {100 * TARGET_SEQUENTIAL:.0f}%",
                                 f"{100 * sequential:.0f}%", sequential <= TARGET_SEQUENTIAL))
        if not name.startswith("pahole"):
            verdicts.append((f"{name}: largest process <= {TARGET_LARGEST_MB} MB",
                             f"{m['one']:.0f} MB", m["one"] <= TARGET_LARGEST_MB))
            verdicts.append((f"{name}: all processes <= {TARGET_ALL_MB} MB",
                             f"{m['all']:.0f} MB", m["all"] <= TARGET_ALL_MB))
        print(f"{name:<34}{m['wall']:>8.1f}{m['cpu']:>8.1f}{m['one']:>12.0f}{m['all']:>8.0f}"
              f"{ratio:>11}{cpu_ratio:>8}   {phases}")
    digests = {m["md5"] for _, _, m, _ in rows if "md5" in m}
    if digests:
        print(f"output md5: {', '.join(sorted(digests))}"
              f"{'' if len(digests) == 1 else ' (DIFFERENT for different -j!)'}")
    if verdicts:
        print("targets:")
        for what, value, met in verdicts:
            print(f"  {'met ' if met else 'MISS'}  {what}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
