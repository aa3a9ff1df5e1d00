"""Slim headers from a program's source (`--types-from PROG.bpf.c --cflags ...`) with
libbpf's real headers (libbpf-dev's bpf_helpers.h, bpf_tracing.h, bpf_core_read.h,
bpf_endian.h).

The judges: clang (the slim header compiles the program with its own flags), bpftool
(`gen min_core_btf` keeps the same kernel types for the object built against the slim
header as for the one built against the full header), the running kernel (the object
loads where the full header's does) and the full header's own text (every slim definition
is one of its blocks, in its order). The programs in golden/libbpf/ are written as real
tools are: maps with `__uint(type, BPF_MAP_TYPE_...)`, BPF_KPROBE / BPF_PROG /
BPF_CORE_READ, tracepoint records, bool, a kfunc call, and a shared header of inline
helpers each program calls only some of.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from canonbtf.btf import reader
from canonbtf.cli import main
from canonbtf.emit import slim, slim_source

from .conftest import corpus_path, load_cached, need_tool, sysfs_vmlinux
from .test_dump_c import real_header
from .test_slim import assert_cut_from, load, relos

LIBBPF_DIR = Path(__file__).resolve().parent.parent / "golden" / "libbpf"
LIBBPF_HEADERS = Path("/usr/include/bpf/bpf_helpers.h")
VMLINUX_612 = "vmlinux-6.12.113-cloud-amd64.btf"
# Each program with the flags its build uses (its own: MAX_ENTRIES changes a map).
PROGRAMS = {
    "unlink": "-O2 -g -D__TARGET_ARCH_x86 -DMAX_ENTRIES=4096",
    "tcpstate": "-O2 -g -D__TARGET_ARCH_x86",
    "schedswitch": "-O2 -g -Wall",
    "taskkfunc": "-O2 -g -D__TARGET_ARCH_x86",
}
# Programs that need the kernel's kfunc tags, which the corpus BTF lacks.
KFUNC_PROGRAMS = {"taskkfunc": "extern struct task_struct *bpf_task_acquire("}


def need_libbpf() -> None:
    need_tool("clang")
    if not LIBBPF_HEADERS.is_file():
        pytest.skip("libbpf's BPF headers are not installed (libbpf-dev)")


def kernel_path(kernel: str) -> Path:
    return corpus_path(VMLINUX_612) if kernel == "corpus" else sysfs_vmlinux()


def flags(name: str, include: Path) -> list[str]:
    return ["-target", "bpf", *PROGRAMS[name].split(), "-I", str(include), "-I",
            str(LIBBPF_DIR)]


def build(include: Path, name: str, header_text: str | None = None) -> Path:
    """The program compiled with its flags against `include`/vmlinux.h (written first
    when `header_text` is given)."""
    include.mkdir(parents=True, exist_ok=True)
    if header_text is not None:
        (include / "vmlinux.h").write_text(header_text, encoding="latin-1")
    obj = include / f"{name}.bpf.o"
    done = subprocess.run([need_tool("clang"), *flags(name, include), "-c",
                           str(LIBBPF_DIR / f"{name}.bpf.c"), "-o", str(obj)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return obj


def slim_from_source(tmp: Path, capsys, kernel: Path, name: str) -> str:
    out = tmp / "slim.h"
    status = main(["dump", str(kernel), "--format", "c", "--types-from",
                   str(LIBBPF_DIR / f"{name}.bpf.c"), "--cflags",
                   f"{PROGRAMS[name]} -I {LIBBPF_DIR}", "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 0, err
    return out.read_text(encoding="latin-1")


def full_or_skip(path: Path, name: str) -> str:
    full = real_header(path)
    needed = KFUNC_PROGRAMS.get(name)
    if needed and needed not in full:
        pytest.skip(f"{path}'s BTF has no kfunc prototype {needed}...) for {name}")
    return full


def min_core_types(kernel: Path, obj: Path, out: Path) -> str:
    """bpftool's raw dump of the kernel types `obj`'s CO-RE relocations need."""
    bpftool = need_tool("bpftool")
    done = subprocess.run([bpftool, "gen", "min_core_btf", str(kernel), str(out), str(obj)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return subprocess.run([bpftool, "btf", "dump", "file", str(out), "format", "raw"],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("kernel", ["corpus", "running"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_slim_header_from_source_compiles_the_same_program(tmp_path, capsys, kernel, name):
    need_libbpf()
    path = kernel_path(kernel)
    full = full_or_skip(path, name)
    full_obj = build(tmp_path / "full", name, full)
    text = slim_from_source(tmp_path, capsys, path, name)
    assert_cut_from(text, full)
    slim_obj = build(tmp_path / "slim", name, text)
    assert relos(slim_obj) == relos(full_obj) and relos(full_obj)
    assert (min_core_types(path, slim_obj, tmp_path / "slim.min.btf")
            == min_core_types(path, full_obj, tmp_path / "full.min.btf"))
    ratio = len(text) / len(full)
    print(f"{kernel} {name}: {text.count(chr(10))} lines, {len(text)} bytes, "
          f"{ratio:.2%} of the full header")
    assert ratio < 0.05


def test_median_slim_header_is_under_2_percent(tmp_path, capsys):
    need_libbpf()
    path = sysfs_vmlinux()
    full = real_header(path)
    ratios = []
    for name in sorted(PROGRAMS):
        if name in KFUNC_PROGRAMS and KFUNC_PROGRAMS[name] not in full:
            continue
        text = slim_from_source(tmp_path, capsys, path, name)
        ratios.append(len(text) / len(full))
    median = statistics.median(ratios)
    print(f"slim / full bytes: {', '.join(f'{r:.2%}' for r in ratios)}; median {median:.2%}")
    assert len(ratios) >= 3 and median < 0.02


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_slim_program_loads_where_the_full_one_does(tmp_path, capsys, name):
    need_libbpf()
    if os.geteuid() != 0 or not Path("/sys/fs/bpf").is_dir():
        pytest.skip("loading BPF programs needs root and bpffs at /sys/fs/bpf")
    path = sysfs_vmlinux()
    full_obj = build(tmp_path / "full", name, full_or_skip(path, name))
    reference = load(full_obj, f"canonbtf-src-full-{os.getpid()}")
    if reference.returncode != 0:
        reason = [line for line in reference.stderr.splitlines()
                  if "rror" in line or "permitted" in line][:1]
        pytest.skip(f"the running kernel refuses {name} even built against the full "
                    f"header: {reason}")
    slim_obj = build(tmp_path / "slim", name, slim_from_source(tmp_path, capsys, path, name))
    done = load(slim_obj, f"canonbtf-src-slim-{os.getpid()}")
    assert done.returncode == 0, done.stderr[-3000:]


def test_libbpf_headers_need_what_objects_carry(tmp_path):
    """The typedefs a program including libbpf's headers and using nothing needs are
    LIBBPF_HEADER_TYPEDEFS, which headers cut from objects carry; and nothing else."""
    need_libbpf()
    for path in (corpus_path(VMLINUX_612), sysfs_vmlinux()):
        btf = load_cached(path)
        probe = slim_source.write_probe(str(tmp_path))
        for arch in ("", "-D__TARGET_ARCH_x86"):
            selection = slim.Selection()
            slim_source.select_source(btf, probe, f"-O2 -g {arch}", selection)
            header = slim.slim_header(btf)
            names = {header.names[d] for d in selection.defs}
            assert names == set(slim.LIBBPF_HEADER_TYPEDEFS), (path, arch)
            assert not selection.kfuncs


def clang_errors(name: str, include: Path) -> list[str]:
    done = subprocess.run([need_tool("clang"), *flags(name, include), "-fsyntax-only",
                           str(LIBBPF_DIR / f"{name}.bpf.c")], capture_output=True, text=True)
    return [line for line in done.stderr.splitlines() if ": error: " in line]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_object_header_misses_only_constants_and_uncalled_helpers(tmp_path, capsys, name):
    """The documented limits of `--types-from OBJ`: libbpf's own headers are satisfied;
    what the header lacks is the enumerators the program uses as constants, and the types
    that inline helpers of a shared header read when the program does not call them."""
    need_libbpf()
    path = sysfs_vmlinux()
    full_obj = build(tmp_path / "full", name, full_or_skip(path, name))
    include = tmp_path / "obj"
    include.mkdir()
    header = include / "vmlinux.h"
    assert main(["dump", str(path), "--format", "c", "--types-from", str(full_obj),
                 "-o", str(header)]) == 0, capsys.readouterr().err
    enumerators = set()
    index = slim.slim_index(load_cached(path))
    for line in clang_errors(name, include):
        if line.startswith(f"{LIBBPF_DIR / 'common.h'}:"):
            continue
        found = re.search(r"use of undeclared identifier '(\w+)'", line)
        assert found and index.enumerator(found.group(1)) is not None, line
        enumerators.add(found.group(1))
    if enumerators:
        assert main(["dump", str(path), "--format", "c", "--types-from", str(full_obj),
                     "--types", ",".join(sorted(enumerators)), "-o", str(header)]) == 0
    left = clang_errors(name, include)
    assert all(line.startswith(f"{LIBBPF_DIR / 'common.h'}:") for line in left), left


def test_source_use_reads_tags_typedefs_and_constants():
    use = slim_source.SourceUse()
    use.read('struct a x; struct b *p; struct c; union d y; enum e z; u32 n = FOO + p->u32;'
             ' s.BAR = "struct q"; char c = \'x\';')
    assert use.defined == {("struct", "a"), ("union", "d"), ("enum", "e")}
    assert use.pointed == {("struct", "b")}
    assert use.declared_here == {("struct", "c")}
    assert {"u32", "FOO", "x", "n"} <= use.plain
    assert not {"BAR", "q", "a", "b"} & use.plain


def test_outside_header_drops_the_headers_lines():
    text = ('# 1 "prog.c"\nint a;\n# 1 "/x/vmlinux.h" 1\nstruct in_header;\n'
            '# 3 "prog.c" 2\nint b;\n')
    assert list(slim_source.outside_header(text, {"/x/vmlinux.h"})) == ["int a;", "int b;"]


def test_source_errors_are_exit_2_naming_the_file(tmp_path, capsys):
    need_libbpf()
    kernel = sysfs_vmlinux()
    bad = tmp_path / "bad.bpf.c"
    bad.write_text('#include "vmlinux.h"\nstruct no_such_kernel_type x = { 1 };\n')
    unincluded = tmp_path / "plain.bpf.c"
    unincluded.write_text("int x;\n")
    out = tmp_path / "slim.h"
    for src, words in ((bad, "cannot compile it against the full header"),
                       (unincluded, "does not include vmlinux.h"),
                       (tmp_path / "missing.bpf.c", "no such file")):
        status = main(["dump", str(kernel), "--format", "c", "--types-from", str(src),
                       "-o", str(out)])
        err = capsys.readouterr().err
        assert status == 2 and len(err.splitlines()) == 1, err
        assert f"{src}: " in err and words in err, err
        assert not out.exists()


def test_a_vmlinux_h_beside_the_source_is_replaced(tmp_path, capsys):
    """Projects keep their (old, slim) vmlinux.h beside the program, where
    `#include "vmlinux.h"` finds it before any -I: the full header takes its place."""
    need_libbpf()
    kernel = sysfs_vmlinux()
    src = tmp_path / "prog.bpf.c"
    shutil.copy(LIBBPF_DIR / "schedswitch.bpf.c", src)
    shutil.copy(LIBBPF_DIR / "common.h", tmp_path / "common.h")
    (tmp_path / "vmlinux.h").write_text("#error stale header\n")
    out = tmp_path / "new.h"
    assert main(["dump", str(kernel), "--format", "c", "--types-from", str(src),
                 "--cflags", "-O2 -g", "-o", str(out)]) == 0, capsys.readouterr().err
    assert "\nstruct trace_event_raw_sched_switch {\n" in out.read_text(encoding="latin-1")
    assert reader.read_file(str(tmp_path / "vmlinux.h")) == b"#error stale header\n"
