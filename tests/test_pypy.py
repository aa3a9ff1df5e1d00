"""The same bytes under PyPy: encode is about a third faster there (docs/ENCODE.md
"Speed"), which is only worth saying if the output cannot tell the interpreters apart.

Judge: this interpreter's (CPython's) output for the same input, byte for byte, with the
PyPy run in a subprocess so that its workers are PyPy processes too. The PyPy interpreter
is the one named by CANONBTF_PYPY (a virtual environment with canonbtf's dependencies;
.ci/run makes one from Debian's pypy3); the tests skip without it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from canonbtf.btf import reader, writer
from canonbtf.canon import canonicalize
from canonbtf.dwarf.encode import encode_dwarf
from canonbtf.dwarf.sections import open_dwarf

from .conftest import (
    MODULE_BLOBS,
    REPO,
    VMLINUX_BLOBS,
    corpus_path,
    fetched_kernel,
    fetched_kernel_sample,
)
from .test_encode import MULTI_UNIT, OBJECTS, encoded, object_ids

PYPY = os.environ.get("CANONBTF_PYPY", "")


def pypy() -> str:
    if not PYPY:
        pytest.skip("CANONBTF_PYPY is not set (a PyPy with canonbtf's dependencies)")
    if not Path(PYPY).exists():
        pytest.skip(f"CANONBTF_PYPY={PYPY}: no such interpreter")
    return PYPY


def run_pypy(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([pypy(), "-m", "canonbtf", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


def test_it_is_pypy():
    done = subprocess.run([pypy(), "-c", "import sys; print(sys.implementation.name)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "pypy"


@pytest.mark.parametrize("path", object_ids(OBJECTS[::4] + [MULTI_UNIT]))
def test_encode_gives_the_same_bytes(path, tmp_path):
    out = tmp_path / "out.btf"
    run_pypy("encode", "-j2", str(path), "-o", str(out))
    assert out.read_bytes() == encoded(path)


def test_module_over_a_base_gives_the_same_bytes(tmp_path):
    """A module's keyed merge, made split over its base (dwarf/keys.py): the multi-unit
    object over the first golden object's BTF."""
    base = tmp_path / "base.btf"
    base.write_bytes(encoded(OBJECTS[0]))
    out = tmp_path / "module.btf"
    run_pypy("encode", "-j1", "--base", str(base), str(MULTI_UNIT), "-o", str(out))
    expected, _ = encode_dwarf(open_dwarf(str(MULTI_UNIT)), 1, base=reader.load(str(base)))
    assert out.read_bytes() == writer.write(expected)


@pytest.mark.parametrize("name", VMLINUX_BLOBS + MODULE_BLOBS[:1])
def test_sort_dedup_gives_the_same_bytes(name, tmp_path):
    path = corpus_path(name)
    base: list[str] = []
    base_btf = None
    if name in MODULE_BLOBS:
        base_path = corpus_path(VMLINUX_BLOBS[0])
        base = ["--base", str(base_path)]
        base_btf = reader.parse(base_path.read_bytes())
    out = tmp_path / "out.btf"
    run_pypy("sort", "--dedup", *base, str(path), "-o", str(out))
    ours = canonicalize(reader.parse(path.read_bytes(), base=base_btf), dedup=True)
    assert out.read_bytes() == writer.write(ours)


def test_kernel_sample_encodes_the_same():
    """Every 8th unit of the fetched kernel, with functions and variables, -j2."""
    kernel = fetched_kernel()
    script = ("import sys, hashlib\n"
              "from canonbtf.btf import writer\n"
              "from canonbtf.dwarf.encode import encode_dwarf\n"
              "from canonbtf.dwarf.sections import open_dwarf\n"
              "dwarf = open_dwarf(sys.argv[1])\n"
              "dwarf.units = dwarf.units[::8]\n"
              "print(hashlib.sha256(writer.write(encode_dwarf(dwarf, 2)[0])).hexdigest())\n")
    done = subprocess.run([pypy(), "-c", script, str(kernel)], capture_output=True, text=True,
                          cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr
    ours = writer.write(encode_dwarf(fetched_kernel_sample(8), 2)[0])
    assert done.stdout.strip() == hashlib.sha256(ours).hexdigest()


def test_every_module_imports():
    """Python 3.9 is PyPy's language level: a module only some command imports (a
    `X | None` alias at run time, say) must not fail there either."""
    script = ("import pkgutil, importlib, canonbtf\n"
              "for m in pkgutil.walk_packages(canonbtf.__path__, 'canonbtf.'):\n"
              "    if m.name != 'canonbtf.__main__':\n"
              "        importlib.import_module(m.name)\n"
              "print('ok')\n")
    done = subprocess.run([pypy(), "-c", script], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize("command", [["dump", "--format", "c"], ["dump", "--format", "raw"],
                                     ["check"]])
def test_reading_commands_print_the_same(command):
    path = str(corpus_path(MODULE_BLOBS[0]))
    base = ["--base", str(corpus_path(VMLINUX_BLOBS[0]))]
    ours = subprocess.run([sys.executable, "-m", "canonbtf", *command, *base, path],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    theirs = subprocess.run([pypy(), "-m", "canonbtf", *command, *base, path],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert (theirs.returncode, theirs.stdout) == (ours.returncode, ours.stdout)
    assert ours.stdout
