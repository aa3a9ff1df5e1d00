#!/usr/bin/env python3
"""Benchmark `canonbtf encode` beside pahole on the same file, in the same run.

    python tools/bench_encode.py [--elf VMLINUX] [--jobs 1 2] [--modules virtio_net xfs]
                                 [--runs 2] [--pure] [--python PY ...] [--skip-ours]

Runs `canonbtf encode -jN` and `pahole -jN --btf_encode_detached` for each N, one after
the other, and prints wall time, the peak RSS of the largest process and of all the
run's processes together (sampled from /proc every 50 ms), the CPU time of the command
and its workers (a fairer comparison when other jobs share the cores), our time split
into phases (units: the parallel per-unit work until the last worker answered; merge:
the parent's merge, global dedup and canonical order; rest: start-up, reading the ELF
and symbols, writing the output), the sequential share (everything but the units
phase) and the ratios to pahole at the same -j, then how the issue's targets stand.
`--python` runs this checkout's canonbtf under other interpreters too (say the python of
a PyPy virtual environment with the dependencies installed; docs/ENCODE.md "Speed");
`--pure` adds rows for the pure-Python core (CANONBTF_PURE=1) beside the compiled one.
`--modules` encodes kernel modules over the kernel (`--base`) beside `pahole --btf_base`,
taken from that kernel's module directory (`--modules-dir`; by default lib/modules/VER/kernel
beside a -dbg package's boot/vmlinux-VER).
From the -j2 phases it projects 8 and 16 cores (Amdahl: the sequential part stays, the
units' work divides). `--runs N` repeats everything N times (the machine is shared).
Default input: the 6.1 cloud kernel from ../shared/tools/fetch-kernel-dbg, and its
modules fetched with MODULES="drivers/net/virtio_net.ko fs/xfs/xfs.ko".
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
# The targets of the compiled-core issue: ratio to pahole at -j1 and -j2 (modules too),
# peak RSS (MB) of the largest process and of all together, and the sequential share of
# the -j2 wall time.
TARGET_RATIO = {1: 1.0, 2: 1.0}
TARGET_MODULE_RATIO = 1.0
TARGET_LARGEST_MB = 512
TARGET_ALL_MB = 1024
TARGET_SEQUENTIAL = 0.15
DEBUG_DIR = ("/root/.cache/canonbtf-corpus/linux-image-6.1.0-56-cloud-amd64-dbg/usr/lib/debug/")
KERNEL = DEBUG_DIR + "boot/vmlinux-6.1.0-56-cloud-amd64"
MODULE_PATHS = {"virtio_net": "drivers/net/virtio_net.ko", "xfs": "fs/xfs/xfs.ko",
                "bridge": "net/bridge/bridge.ko"}
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def modules_dir(elf: str) -> Path | None:
    """The module directory beside a vmlinux unpacked from a Debian -dbg package
    (.../boot/vmlinux-VER -> .../lib/modules/VER/kernel): a module must be encoded over
    its own kernel, or every type in it becomes the module's own. None for another
    layout (then --modules-dir says where)."""
    path = Path(elf)
    if path.parent.name != "boot" or not path.name.startswith("vmlinux-"):
        return None
    return path.parent.parent / "lib" / "modules" / path.name[len("vmlinux-"):] / "kernel"


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


def measure(command: list[str], env: dict | None = None) -> dict:
    cpu = _children_cpu()
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, cwd=REPO, env=env)
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


def _ours(python: str, argv: list[str], out: str, pure: bool) -> dict:
    env = dict(os.environ)
    if pure:
        env["CANONBTF_PURE"] = "1"
    else:
        env.pop("CANONBTF_PURE", None)
    ours = measure([python, "-m", "canonbtf", *argv, "-o", out], env)
    with open(out, "rb") as fh:
        ours["md5"] = hashlib.md5(fh.read()).hexdigest()
    return ours


def measure_all(args: argparse.Namespace, pahole: str | None, tmp: str) -> list[tuple]:
    """(label, jobs or module, measurement, phase match) for every command of one run."""
    rows = []
    cores = [False, True] if args.pure else [False]
    for jobs in args.jobs:
        if pahole:
            out = os.path.join(tmp, f"pahole-j{jobs}.btf")
            rows.append((f"pahole -j{jobs}", jobs,
                         measure([pahole, f"-j{jobs}", "--btf_gen_floats",
                                  f"--btf_encode_detached={out}", args.elf]), None))
        if args.skip_ours:
            continue
        for python in args.python:
            for pure in cores:
                label = "" if python == sys.executable else f" ({_implementation(python)})"
                label += " pure" if pure else ""
                ours = _ours(python, ["encode", f"-j{jobs}", args.elf],
                             os.path.join(tmp, f"ours-j{jobs}.btf"), pure)
                split = re.search(r"units ([\d.]+)s, merge ([\d.]+)s", ours["stderr"])
                rows.append((f"canonbtf encode -j{jobs}{label}", jobs, ours, split))
    for module in args.modules:
        path = str(args.modules_dir / MODULE_PATHS.get(module, module))
        if not Path(path).exists():
            print(f"bench_encode: {path}: not fetched, skipped", file=sys.stderr)
            continue
        if pahole:
            out = os.path.join(tmp, f"pahole-{module}.btf")
            rows.append((f"pahole -j2 {module}", module,
                         measure([pahole, "-j2", "--btf_gen_floats", "--btf_base", args.elf,
                                  f"--btf_encode_detached={out}", path]), None))
        if not args.skip_ours:
            ours = _ours(sys.executable, ["encode", "-j2", "--base", args.elf, path],
                         os.path.join(tmp, f"ours-{module}.btf"), False)
            rows.append((f"canonbtf encode -j2 {module}", module, ours, None))
    return rows


def report(rows: list[tuple]) -> list[tuple[str, str, bool]]:
    """Prints one run's table; returns its verdicts (what, value, met)."""
    print(f"{'command':<38}{'wall s':>8}{'cpu s':>8}{'largest MB':>12}{'all MB':>8}"
          f"{'vs pahole':>11}{'cpu vs':>8}   phases")
    pahole = {key: m for name, key, m, _ in rows if name.startswith("pahole")}
    verdicts = []
    for name, key, m, split in rows:
        ratio = cpu_ratio = phases = ""
        ours = not name.startswith("pahole")
        if ours and key in pahole:
            value = m["wall"] / pahole[key]["wall"]
            ratio = f"{value:.2f}x"
            if pahole[key]["cpu"]:
                cpu_ratio = f"{m['cpu'] / pahole[key]['cpu']:.2f}x"
            target = TARGET_RATIO.get(key) if isinstance(key, int) else TARGET_MODULE_RATIO
            if target is not None and "pure" not in name:
                verdicts.append((f"{name} <= {target:.1f}x pahole", ratio, value <= target))
        if split:
            units, merge = float(split.group(1)), float(split.group(2))
            rest = max(m["wall"] - units - merge, 0.0)
            sequential = m["wall"] - units
            phases = (f"units {units:.1f}s, merge {merge:.1f}s, rest {rest:.1f}s; "
                      f"sequential {100 * sequential / m['wall']:.0f}%")
            if key == 2:
                share = sequential / m["wall"]
                # Amdahl: the units' work (2 x their -j2 wall time) divides over N cores.
                projected = ", ".join(f"{n} cores {sequential + 2 * units / n:.1f}s"
                                      for n in (8, 16))
                phases += f"; projected {projected}"
                if "pure" not in name:
                    verdicts.append((f"{name}: sequential share <= "
                                     f"{100 * TARGET_SEQUENTIAL:.0f}%", f"{100 * share:.0f}%",
                                     share <= TARGET_SEQUENTIAL))
        if ours and "pure" not in name and isinstance(key, int):
            verdicts.append((f"{name}: largest process <= {TARGET_LARGEST_MB} MB",
                             f"{m['one']:.0f} MB", m["one"] <= TARGET_LARGEST_MB))
            verdicts.append((f"{name}: all processes <= {TARGET_ALL_MB} MB",
                             f"{m['all']:.0f} MB", m["all"] <= TARGET_ALL_MB))
        print(f"{name:<38}{m['wall']:>8.2f}{m['cpu']:>8.1f}{m['one']:>12.0f}{m['all']:>8.0f}"
              f"{ratio:>11}{cpu_ratio:>8}   {phases}")
    digests = {m["md5"] for name, key, m, _ in rows if "md5" in m and isinstance(key, int)}
    if digests:
        print(f"kernel output md5: {', '.join(sorted(digests))}"
              f"{'' if len(digests) == 1 else ' (DIFFERENT between runs or cores!)'}")
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elf", default=KERNEL)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--modules", nargs="*", default=["virtio_net", "xfs"],
                        help=f"modules to encode over --elf (of {', '.join(MODULE_PATHS)}, "
                             "or a path below the kernel's module directory)")
    parser.add_argument("--modules-dir", type=Path,
                        help="where --modules are (default: beside --elf, for a vmlinux "
                             "from a -dbg package: lib/modules/VER/kernel)")
    parser.add_argument("--runs", type=int, default=1, help="repeat everything this often")
    parser.add_argument("--pure", action="store_true", help="also time the pure-Python core")
    parser.add_argument("--python", nargs="+", default=[sys.executable],
                        help="interpreters to run canonbtf with (default: this one)")
    parser.add_argument("--skip-ours", action="store_true", help="only time pahole")
    args = parser.parse_args()
    if not Path(args.elf).exists():
        print(f"bench_encode: {args.elf}: no such file (run ../shared/tools/fetch-kernel-dbg)",
              file=sys.stderr)
        return 2
    if args.modules and args.modules_dir is None:
        args.modules_dir = modules_dir(args.elf)
        if args.modules_dir is None:
            print(f"bench_encode: {args.elf}: where are its modules? (--modules-dir)",
                  file=sys.stderr)
            return 2
    pahole = shutil.which("pahole")
    print(f"input: {args.elf}")
    all_verdicts: dict[str, list[tuple[str, bool]]] = {}
    for run in range(1, args.runs + 1):
        print(f"run {run}:")
        with tempfile.TemporaryDirectory() as tmp:
            rows = measure_all(args, pahole, tmp)
        for what, value, met in report(rows):
            all_verdicts.setdefault(what, []).append((value, met))
    if all_verdicts:
        print(f"targets ({args.runs} run{'s' if args.runs > 1 else ''}):")
        for what, results in all_verdicts.items():
            met = all(ok for _, ok in results)
            values = " / ".join(value for value, _ in results)
            print(f"  {'met ' if met else 'MISS'}  {what}: {values}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
