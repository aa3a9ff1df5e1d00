"""The compiled paths on kernels none of them was tuned on (docs/DIFF.md, "Generality"):
Debian's generic 6.1 (two point releases) and 6.12 kernels, fetched with their DWARF by
../shared/tools/fetch-kernel-dbg, and the running kernel's /sys/kernel/btf/vmlinux.

On each, `dump --format c`, `dump --format raw` and `check`, and on each pair of the
generality table `diff` in text and JSON, give the bytes and exit status of the pure
reference (CANONBTF_PURE=1), and no compiled part falls back to the reference on the way
(CANONBTF_FALLBACKS=1 prints each fallback; on a real kernel one is a bug). Each command
runs as `canonbtf` does for a user, in a subprocess. Slow (the reference dumps and diffs
whole kernels): a few minutes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from canonbtf import native
from canonbtf.btf import reader, writer

from .conftest import REPO, SYSFS_VMLINUX
from .shuffle import shuffle

FETCHED = Path(os.environ.get("CANONBTF_CORPUS", Path.home() / ".cache/canonbtf-corpus"))
GENERIC = {
    "6.1.0-55": "linux-image-6.1.0-55-amd64-dbg/usr/lib/debug/boot/vmlinux-6.1.0-55-amd64",
    "6.1.0-56": "linux-image-6.1.0-56-amd64-dbg/usr/lib/debug/boot/vmlinux-6.1.0-56-amd64",
    "6.12.115": "linux-image-6.12.115+deb12-amd64-dbg/usr/lib/debug/boot/"
                "vmlinux-6.12.115+deb12-amd64",
}
KERNELS = [*GENERIC, "sysfs"]
# Two point releases of one series, one series to the next, a kernel against itself
# renumbered (tests/shuffle.py), and the running kernel renumbered.
PAIRS = [("6.1.0-55", "6.1.0-56"), ("6.1.0-56", "6.12.115"), ("6.1.0-56", "6.1.0-56~"),
         ("sysfs", "sysfs~")]

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "diff_report") is None,
                                reason="canonbtf._btf is not built (no compiler, PyPy, or "
                                       "CANONBTF_PURE set)")


@pytest.fixture(scope="module")
def btf_files(tmp_path_factory) -> dict[str, Path]:
    """The .BTF section of each kernel present, and renumbered copies for the pairs."""
    tmp = tmp_path_factory.mktemp("generality")
    files: dict[str, Path] = {}
    objcopy = shutil.which("objcopy")
    for label, relative in GENERIC.items():
        vmlinux = FETCHED / relative
        if objcopy and vmlinux.exists():
            out = tmp / f"{label}.btf"
            subprocess.run([objcopy, "--dump-section", f".BTF={out}", str(vmlinux), "/dev/null"],
                           check=True)
            files[label] = out
    if SYSFS_VMLINUX.exists():
        files["sysfs"] = SYSFS_VMLINUX
    for _, new in PAIRS:
        label = new.removesuffix("~")
        if new.endswith("~") and label in files:
            files[new] = tmp / f"{label}-renumbered.btf"
            files[new].write_bytes(writer.write(shuffle(reader.load(str(files[label])), 11)))
    return files


def need(files: dict[str, Path], *labels: str) -> list[str]:
    for label in labels:
        if label not in files:
            pytest.skip(f"kernel {label} not present (objcopy and "
                        f"../shared/tools/fetch-kernel-dbg, or {SYSFS_VMLINUX})")
    return [str(files[label]) for label in labels]


def both_paths(*args: str) -> None:
    """`canonbtf ARGS` compiled (no fallback printed) and pure: the same output and status."""
    argv = [sys.executable, "-m", "canonbtf", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(native.PURE_ENV, None)
    fast = subprocess.run(argv, capture_output=True, cwd=REPO,
                          env={**env, native.FALLBACK_ENV: "1"})
    reference = subprocess.run(argv, capture_output=True, cwd=REPO,
                               env={**env, native.PURE_ENV: "1"})
    assert fast.stderr == b"", fast.stderr.decode(errors="replace")[:2000]
    assert fast.returncode == reference.returncode and fast.returncode in (0, 1)
    assert fast.stdout == reference.stdout


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("command", [["dump", "--format", "c"], ["dump", "--format", "raw"],
                                     ["check"]])
def test_per_kernel_commands_are_the_references(btf_files, kernel, command):
    (path,) = need(btf_files, kernel)
    both_paths(*command[:1], path, *command[1:])


@pytest.mark.parametrize("old,new", PAIRS)
@pytest.mark.parametrize("form", ["text", "json"])
def test_diff_of_each_pair_is_the_references(btf_files, old, new, form):
    old_path, new_path = need(btf_files, old, new)
    both_paths("diff", "--format", form, old_path, new_path)
