"""Shared fixtures: where the real inputs are, and skips with a reason when they are not."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

from canonbtf import native
from canonbtf.btf import reader

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("CANONBTF_SHARED", REPO.parent / "shared")) / "corpus"
SYSFS_VMLINUX = Path("/sys/kernel/btf/vmlinux")
BASE_61 = CORPUS / "vmlinux-6.1.0-56-cloud-amd64.btf"
VMLINUX_BLOBS = ["vmlinux-6.1.0-56-cloud-amd64.btf", "vmlinux-6.12.113-cloud-amd64.btf"]
# The 6.1 kernel with DWARF that ../shared/tools/fetch-kernel-dbg downloads.
FETCHED_DEBUG = Path("/root/.cache/canonbtf-corpus/linux-image-6.1.0-56-cloud-amd64-dbg/usr/lib/"
                     "debug")
FETCHED_KERNEL = FETCHED_DEBUG / "boot" / "vmlinux-6.1.0-56-cloud-amd64"
MODULE_BLOBS = [
    "mod-6.1.0-56-cloud-virtio_net.btf",
    "mod-6.1.0-56-cloud-bridge.btf",
    "mod-6.1.0-56-cloud-nf_tables.btf",
    "mod-6.1.0-56-cloud-xfs.btf",
]

_cache: dict[str, object] = {}


def corpus_path(name: str) -> Path:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus file {path} not present (../shared/corpus is absent)")
    return path


def sysfs_vmlinux() -> Path:
    if not SYSFS_VMLINUX.exists():
        pytest.skip("/sys/kernel/btf/vmlinux not present on this machine")
    return SYSFS_VMLINUX


def fetched_kernel() -> Path:
    if not FETCHED_KERNEL.exists():
        pytest.skip(f"{FETCHED_KERNEL} not fetched (../shared/tools/fetch-kernel-dbg)")
    return FETCHED_KERNEL


def fetched_kernel_sample(step: int):
    """The fetched kernel's DWARF with every `step`-th compile unit only."""
    from canonbtf.dwarf.sections import open_dwarf

    dwarf = open_dwarf(str(fetched_kernel()))
    dwarf.units = dwarf.units[::step]
    return dwarf


PAHOLE_131 = CORPUS.parent / "tools" / "pahole-1.31"


def pahole_131() -> str:
    """pahole 1.31 (../shared/tools), the judge of the FUNC and VAR rules it brought."""
    if not os.access(PAHOLE_131, os.X_OK):
        pytest.skip(f"{PAHOLE_131} not present")
    return str(PAHOLE_131)


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def load_cached(path: Path, base: Path | None = None):
    """Read a (large) BTF once per test session; callers must not modify it."""
    key = f"{path}|{base}"
    if key not in _cache:
        base_btf = load_cached(base) if base else None
        _cache[key] = reader.load(str(path), base_btf)
    return _cache[key]


# Every real input the round-trip style tests run on: (id, path, base path or None).
def real_inputs() -> list:
    params = [pytest.param(name, id=name) for name in VMLINUX_BLOBS]
    params.append(pytest.param("sysfs", id="sysfs-vmlinux"))
    params += [pytest.param(name, id=name) for name in MODULE_BLOBS]
    return params


def resolve_input(name: str) -> tuple[Path, Path | None]:
    """Path and base path for a `real_inputs()` name, skipping when it is absent."""
    if name == "sysfs":
        return sysfs_vmlinux(), None
    if name.startswith("mod-"):
        return corpus_path(name), corpus_path(BASE_61.name)
    return corpus_path(name), None


def load_tool(name: str):
    """tools/NAME.py as a module (tools/ is not a package), for the tests of what it
    reads and the facts a test shares with it."""
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a tool's dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def pure(monkeypatch):
    """A switch: `pure(True)` runs the Python reference (CANONBTF_PURE=1, as a user would
    set it), `pure(False)` the compiled part, within the test."""
    def switch(on: bool) -> None:
        if on:
            monkeypatch.setenv(native.PURE_ENV, "1")
        else:
            monkeypatch.delenv(native.PURE_ENV, raising=False)
    return switch


def both_ways(pure, make, *args, **kwargs) -> tuple:
    """`make(*args, **kwargs)` with the reference, then with the compiled part (`pure`:
    the fixture)."""
    pure(True)
    reference = make(*args, **kwargs)
    pure(False)
    return reference, make(*args, **kwargs)


@pytest.fixture
def tmp_out(tmp_path: Path) -> Path:
    return tmp_path / "out.btf"
