"""Shared by the benchmarks: run a command, report its wall time and peak memory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CANONBTF_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
FETCHED_VMLINUX = (
    Path(os.environ.get("CANONBTF_CORPUS", Path.home() / ".cache/canonbtf-corpus"))
    / "linux-image-6.1.0-56-cloud-amd64-dbg/usr/lib/debug/boot/vmlinux-6.1.0-56-cloud-amd64"
)


def run_measured(argv: list[str], repeat: int = 1) -> tuple[float, float]:
    """Best wall time (s) and its peak RSS (MiB) of `argv` over `repeat` runs."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err = proc.stderr.read().decode(errors="replace").strip()
            sys.exit(f"benchmark: {' '.join(argv)} failed: {err}")
        proc.stderr.close()
        if elapsed < best[0]:
            best = (elapsed, usage.ru_maxrss / 1024)
    return best


def canonbtf_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "canonbtf", *args]


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        sys.exit(f"benchmark: {tool} is not installed (apt-get install {tool})")
    return path
