"""The benchmark tool measures modules over their own kernel (a module encoded over
another kernel's BTF keeps every type as its own: a slower, meaningless figure)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from .conftest import REPO

_spec = importlib.util.spec_from_file_location("bench_encode", REPO / "tools" / "bench_encode.py")
bench_encode = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_encode)

DBG = "/c/linux-image-6.12.107+deb12-cloud-amd64-dbg/usr/lib/debug/"


def test_modules_beside_the_kernel():
    elf = DBG + "boot/vmlinux-6.12.107+deb12-cloud-amd64"
    assert str(bench_encode.modules_dir(elf)) == (
        DBG + "lib/modules/6.12.107+deb12-cloud-amd64/kernel")
    assert str(bench_encode.modules_dir(bench_encode.KERNEL)).endswith(
        "-dbg/usr/lib/debug/lib/modules/6.1.0-56-cloud-amd64/kernel")


def test_modules_of_another_layout_need_a_directory(tmp_path):
    elf = tmp_path / "vmlinux"
    elf.write_bytes(b"")
    assert bench_encode.modules_dir(str(elf)) is None
    done = subprocess.run([sys.executable, str(REPO / "tools" / "bench_encode.py"),
                           "--elf", str(elf), "--modules", "xfs"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2
    assert "--modules-dir" in done.stderr
