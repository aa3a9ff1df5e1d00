#!/usr/bin/env python3
"""Time reading and writing the 6.12 corpus vmlinux BTF beside bpftool's raw dump of it.

Not a test: speed depends on the machine, so the figures are printed side by side with
`bpftool btf dump file X format raw > /dev/null`, measured in the same run. Issue 2's
target: read + write within 1 s on the 2-core machines here.

    python3 tools/bench_readwrite.py [BTF] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import CORPUS, REPO, need  # noqa: E402

sys.path.insert(0, str(REPO))
from canonbtf.btf import reader, writer  # noqa: E402

DEFAULT_BTF = CORPUS / "vmlinux-6.12.113-cloud-amd64.btf"
TARGET_SECONDS = 1.0


def time_read_write(path: str, repeat: int) -> dict[str, float]:
    """Best run of read + write: wall and CPU seconds, the read/write split, type count."""
    best = {"wall": float("inf")}
    original = Path(path).read_bytes()
    for _ in range(repeat):
        cpu = time.process_time()
        start = time.perf_counter()
        btf = reader.load(path)
        middle = time.perf_counter()
        blob = writer.write(btf)
        end = time.perf_counter()
        cpu = time.process_time() - cpu
        if blob != original:
            sys.exit(f"bench_readwrite: round trip of {path} is not byte-exact")
        if end - start < best["wall"]:
            best = {"wall": end - start, "read": middle - start, "write": end - middle,
                    "types": len(btf)}
        best["cpu"] = min(best.get("cpu", cpu), cpu)
        del btf, blob
    return best


def time_command(argv: list[str], repeat: int) -> tuple[float, float]:
    """Best wall and best CPU (user + system) seconds of `argv`, output to /dev/null."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err = proc.stderr.read().decode(errors="replace").strip()
        proc.stderr.close()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"bench_readwrite: {' '.join(argv)} failed: {err}")
        best_wall = min(best_wall, wall)
        best_cpu = min(best_cpu, usage.ru_utime + usage.ru_stime)
    return best_wall, best_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("btf", nargs="?", default=str(DEFAULT_BTF), metavar="BTF")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (best)")
    args = parser.parse_args()
    if not Path(args.btf).exists():
        print(f"bench_readwrite: {args.btf} not found", file=sys.stderr)
        return 2
    bpftool = need("bpftool")

    ours = time_read_write(args.btf, args.repeat)
    dump_wall, dump_cpu = time_command(
        [bpftool, "btf", "dump", "file", args.btf, "format", "raw"], args.repeat)

    print(f"input: {args.btf} ({ours['types']} types), best of {args.repeat}")
    print(f"canonbtf read+write (in process): {ours['wall']:.3f} s wall "
          f"(read {ours['read']:.3f} s, write {ours['write']:.3f} s), {ours['cpu']:.3f} s CPU")
    print(f"bpftool btf dump file X format raw > /dev/null: {dump_wall:.3f} s wall, "
          f"{dump_cpu:.3f} s CPU")
    print(f"ratio canonbtf / bpftool: {ours['wall'] / dump_wall:.2f} wall, "
          f"{ours['cpu'] / dump_cpu:.2f} CPU")
    total = ours["wall"]
    verdict = "met" if total <= TARGET_SECONDS else "NOT met"
    print(f"target read+write <= {TARGET_SECONDS:.1f} s: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
