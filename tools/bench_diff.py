#!/usr/bin/env python3
"""Time `canonbtf diff` of the two corpus vmlinux BTFs beside bpftool's raw dump of both.

Not a test: speed depends on the machine, so the figures are printed side by side with a
reference measured in the same run. The target is a diff (both reads included) within
3 s on the 2-core machines here.

    python3 tools/bench_diff.py [OLD NEW] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from canonbtf.btf import reader  # noqa: E402
from canonbtf.diff import diff_btfs  # noqa: E402
from canonbtf.gcpause import paused_gc  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_OLD = CORPUS / "vmlinux-6.1.0-56-cloud-amd64.btf"
DEFAULT_NEW = CORPUS / "vmlinux-6.12.113-cloud-amd64.btf"


def best_of(repeat: int, run, before=None) -> tuple[float, float]:
    """Best wall time and best CPU time (this process and its children) of `repeat` runs.

    The machines are shared, so CPU time is printed too: wall time grows with the load
    average, CPU time much less.
    """
    walls, cpus = [], []
    for _ in range(repeat):
        if before is not None:
            before()
        cpu0 = _cpu()
        start = time.perf_counter()
        run()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu0)
    return min(walls), min(cpus)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _line(label: str, times: tuple[float, float], note: str = "") -> str:
    wall, cpu = times
    return f"{label:<28}{wall:7.3f} s wall {cpu:7.3f} s cpu   {note}".rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", nargs="?", default=str(DEFAULT_OLD))
    parser.add_argument("new", nargs="?", default=str(DEFAULT_NEW))
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best)")
    args = parser.parse_args()
    for path in (args.old, args.new):
        if not Path(path).exists():
            print(f"bench_diff: {path} not found", file=sys.stderr)
            return 2

    loaded = {}

    def load_both() -> None:
        with paused_gc():
            loaded["old"] = reader.load(args.old)
            loaded["new"] = reader.load(args.new)

    def diff_only() -> None:
        loaded["result"] = diff_btfs(loaded["old"], loaded["new"])

    def load_and_diff() -> None:
        load_both()
        diff_only()

    t_read = best_of(args.repeat, load_both)
    t_diff = best_of(args.repeat, diff_only)
    # Freeing the previous run's objects is not part of the next run.
    t_total = best_of(args.repeat, load_and_diff, before=loaded.clear)
    totals = loaded["result"].totals()
    old_types, new_types = len(loaded["old"]), len(loaded["new"])
    print(f"inputs: {args.old} ({old_types} types), {args.new} ({new_types} types)")
    print(f"result: {totals['changed']} changed, {totals['added']} added, "
          f"{totals['removed']} removed")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs)")
    print(_line("canonbtf read both", t_read))
    print(_line("canonbtf diff (read done)", t_diff))
    print(_line("canonbtf read both + diff", t_total, "(target <= 3 s)"))

    bpftool = shutil.which("bpftool")
    if bpftool is None:
        print("bpftool not installed: no reference measured")
        return 0

    def bpftool_both() -> None:
        for path in (args.old, args.new):
            subprocess.run([bpftool, "btf", "dump", "file", path, "format", "raw"],
                           stdout=subprocess.DEVNULL, check=True)

    t_bpftool = best_of(args.repeat, bpftool_both)
    print(_line("bpftool raw dump of both", t_bpftool,
                f"(read + diff is {t_total[0] / t_bpftool[0]:.1f}x that in wall time, "
                f"{t_total[1] / t_bpftool[1]:.1f}x in cpu time)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
