"""`canonbtf-pahole` under Kbuild's own scripts: the flags they choose for the version we
report, the exact command lines they run, and the bytes that come out.

The scripts come from Debian's linux-kbuild-6.1 and linux-kbuild-6.12.* packages
(`.ci/run` installs them); link-vmlinux.sh and gen-btf.sh are not packaged, so their
pahole/objcopy command lines are written out below as those scripts build them. A
golden object stands in for vmlinux and another for a module (fast); the 6.1 virtio_net
module with its vmlinux's BTF, when fetched, is the real-size case.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from canonbtf.btf import kernel, reader, writer
from canonbtf.canon import canonicalize
from canonbtf.canon.distill import distill_base, relocate
from canonbtf.dwarf.encode import encode_file
from canonbtf.dwarf.features import parse_features
from canonbtf.pahole.front import PAHOLE_VERSION
from tests.conftest import CORPUS, FETCHED_DEBUG, REPO, load_tool, need_tool

GOLDEN = REPO / "golden" / "obj"
VMLINUX_OBJ = GOLDEN / "all.gcc-dwarf5.o"  # stands in for vmlinux
MODULE_OBJ = GOLDEN / "tags.clang-dwarf5.o"  # a module: tags, functions, own types
KBUILD_61 = Path("/usr/lib/linux-kbuild-6.1/scripts")
# 6.12.* packages carry their full version in the name.
KBUILD_612 = sorted(glob.glob("/usr/lib/linux-kbuild-6.12*/scripts"))
FEATURES_612 = ("encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,"
                "consistent_func,decl_tag_kfuncs")
# Today's scripts/Makefile.btf for pahole 1.26..1.29 (decl_tag_kfuncs moved to
# resolve_btfids in 2026), and gen-btf.sh's command around it.
FLAGS_TODAY = ("-j2 --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,"
               "optimized_func,consistent_func --lang_exclude=rust").split()

# Makefile reading the real Kbuild.include (test-ge/test-le), pahole-version.sh and
# Makefile.btf in $(SCRIPTS); CONFIG_PAHOLE_HAS_LANG_EXCLUDE is init/Kconfig's
# "version >= 1.24". The one tools/btf_steps.py reads a Kbuild log with.
FLAGS_MK = load_tool("btf_steps").FLAGS_MK


def front() -> str:
    """The canonbtf-pahole command: the installed script, else one beside this Python."""
    found = shutil.which("canonbtf-pahole") or str(Path(sys.executable).parent /
                                                    "canonbtf-pahole")
    if not os.access(found, os.X_OK):
        pytest.skip("canonbtf-pahole is not installed (pip install -e .)")
    return found


def run(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PATH": f"{Path(front()).parent}:{os.environ['PATH']}",
                **(env or {})}
    return subprocess.run(args, cwd=cwd, env=full_env, capture_output=True, text=True)


def kbuild_612() -> Path:
    if not KBUILD_612:
        pytest.skip("linux-kbuild-6.12.* is not installed (apt-get install it; .ci/run does)")
    return Path(KBUILD_612[-1])


def kbuild_61() -> Path:
    if not (KBUILD_61 / "pahole-flags.sh").exists():
        pytest.skip("linux-kbuild-6.1 is not installed (apt-get install it; .ci/run does)")
    return KBUILD_61


def flags_612(tmp_path: Path, **env: str) -> tuple[list[str], list[str]]:
    """PAHOLE_FLAGS and MODULE_PAHOLE_FLAGS as 6.12's Makefile.btf sets them for us."""
    need_tool("make")
    (tmp_path / "flags.mk").write_text(FLAGS_MK)
    out = run(["make", "-s", "-f", "flags.mk", f"SCRIPTS={kbuild_612()}",
               f"PAHOLE={front()}", *(f"{k}={v}" for k, v in env.items()), "print"],
              tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    return lines[0].split(), lines[1].split()


def section(path: Path, name: str) -> bytes:
    return reader.elf_section(str(path), path.read_bytes(), name)


def expected(elf: Path, features: str, base: Path | None = None, order: str = "kind") -> bytes:
    """What `canonbtf encode [--base] --features=…` (then `sort --order`) writes."""
    base_btf = reader.load(str(base)) if base else None
    btf, _ = encode_file(str(elf), 1, features=parse_features(features), base=base_btf)
    if order != "kind":
        btf = canonicalize(btf, order=order)
    return writer.write(btf)


def check_readers(blob: bytes, tmp_path: Path, base: bytes | None = None) -> None:
    """bpftool reads it (split with -B), the running kernel takes it (base merged)."""
    bpftool = need_tool("bpftool")
    path = tmp_path / "check.btf"
    path.write_bytes(blob)
    args = [bpftool, "btf", "dump", "file", str(path)]
    if base is not None:
        (tmp_path / "check-base.btf").write_bytes(base)
        args[3:3] = ["-B", str(tmp_path / "check-base.btf")]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout, out.stderr
    base_btf = reader.parse(base) if base is not None else None
    verdict = kernel.check_btf(reader.parse(blob, base=base_btf))
    if verdict.accepted is None:
        pytest.skip(f"bpftool read it; the kernel cannot be asked: {verdict.reason}")
    assert verdict.accepted, verdict.summary() + "\n" + verdict.log_tail


def test_version_makes_kbuild_pick_the_modern_flags(tmp_path):
    out = run([front(), "--version"], tmp_path)
    assert out.stdout == PAHOLE_VERSION + "\n"
    scripts = kbuild_61()
    version = run([str(scripts / "pahole-version.sh"), front()], tmp_path)
    assert version.stdout.strip() == "129"
    flags = run([str(scripts / "pahole-flags.sh")], tmp_path, {"PAHOLE": front()})
    assert flags.stdout.split() == ["--btf_gen_floats", "-j", "--lang_exclude=rust",
                                    "--skip_encoding_btf_inconsistent_proto",
                                    "--btf_gen_optimized"]
    vm_flags, module_flags = flags_612(tmp_path)
    assert f"--btf_features={FEATURES_612}" in vm_flags and module_flags == []
    _, module_flags = flags_612(tmp_path, KBUILD_EXTMOD="/ext")
    assert module_flags == ["--btf_features=distilled_base"]


def test_supported_btf_features_is_one_comma_separated_line(tmp_path):
    out = run([front(), "--supported_btf_features"], tmp_path)
    names = out.stdout.strip().split(",")
    assert out.returncode == 0 and out.stdout.count("\n") == 1
    assert {"var", "float", "enum64", "distilled_base", "decl_tag_kfuncs"} <= set(names)
    assert "optimized_func" not in names and "attributes" not in names


def link_vmlinux_btf(vmlinux: Path, flags: list[str], tmp_path: Path) -> bytes:
    """link-vmlinux.sh (6.1, 6.12): pahole -J in place, then the .btf.o objcopy."""
    need_tool("objcopy")
    out = run([front(), "-J", *flags, vmlinux.name], tmp_path,
              {"LLVM_OBJCOPY": "objcopy"})
    assert out.returncode == 0, out.stderr
    btf_o = tmp_path / f"{vmlinux.name}.btf.o"
    subprocess.run(["objcopy", "--only-section=.BTF", "--set-section-flags",
                    ".BTF=alloc,readonly", "--strip-all", vmlinux.name, btf_o.name],
                   cwd=tmp_path, check=True, capture_output=True)
    in_place = section(vmlinux, ".BTF")
    assert section(btf_o, ".BTF") == in_place
    return in_place


def test_61_vmlinux_in_place(tmp_path):
    flags = run([str(kbuild_61() / "pahole-flags.sh")], tmp_path,
                {"PAHOLE": front()}).stdout.split()
    vmlinux = tmp_path / "vmlinux"
    shutil.copy(VMLINUX_OBJ, vmlinux)
    blob = link_vmlinux_btf(vmlinux, flags, tmp_path)
    # 6.1's flags: no --btf_features, so pahole's legacy defaults (no kfunc tags).
    assert blob == expected(VMLINUX_OBJ, "-decl_tag_kfuncs")
    check_readers(blob, tmp_path)


def test_612_vmlinux_in_place_and_detached(tmp_path):
    flags, _ = flags_612(tmp_path)
    vmlinux = tmp_path / "vmlinux"
    shutil.copy(VMLINUX_OBJ, vmlinux)
    blob = link_vmlinux_btf(vmlinux, flags, tmp_path)
    assert blob == expected(VMLINUX_OBJ, "default")
    out = run([front(), *flags, "--btf_encode_detached=vmlinux.raw", "vmlinux"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "vmlinux.raw").read_bytes() == blob
    check_readers(blob, tmp_path)


def modfinal_612(tmp_path: Path, module: Path, extmod: bool) -> subprocess.CompletedProcess:
    """Makefile.modfinal's own cmd_btf_ko (taken from the installed file) run by make,
    with the flags Makefile.btf gives, then the package's resolve_btfids (`true` when
    the package has none)."""
    text = (kbuild_612() / "Makefile.modfinal").read_text()
    start = text.index("quiet_cmd_btf_ko")
    recipe = text[start:text.index("fi;", start) + 3]
    vm_flags, module_flags = flags_612(tmp_path, **({"KBUILD_EXTMOD": "/ext"} if extmod
                                                   else {}))
    (tmp_path / "modfinal.mk").write_text(
        f"{recipe}\n%.ko: FORCE\n\t$(cmd_btf_ko)\nFORCE:\n")
    resolve = kbuild_612().parent / "tools" / "bpf" / "resolve_btfids" / "resolve_btfids"
    env = [f"PAHOLE={front()}", "OBJCOPY=objcopy",
           f"RESOLVE_BTFIDS={resolve if os.access(resolve, os.X_OK) else 'true'}",
           f"PAHOLE_FLAGS={' '.join(vm_flags)}",
           f"MODULE_PAHOLE_FLAGS={' '.join(module_flags)}"]
    return run(["make", "-s", "-f", "modfinal.mk", *env, module.name], tmp_path)


def build_612_module(tmp_path: Path, extmod: bool) -> tuple[Path, Path]:
    """vmlinux linked with 6.12's flags, then the module through 6.12's
    Makefile.modfinal (out of tree with `extmod`): (vmlinux, module)."""
    vmlinux = tmp_path / "vmlinux"
    shutil.copy(VMLINUX_OBJ, vmlinux)
    link_vmlinux_btf(vmlinux, flags_612(tmp_path)[0], tmp_path)
    module = tmp_path / "mod.ko"
    shutil.copy(MODULE_OBJ, module)
    out = modfinal_612(tmp_path, module, extmod=extmod)
    assert out.returncode == 0, out.stderr
    return vmlinux, module


def test_612_module_against_vmlinux(tmp_path):
    vmlinux, module = build_612_module(tmp_path, extmod=False)
    blob = section(module, ".BTF")
    assert blob == expected(MODULE_OBJ, "default", base=vmlinux)
    check_readers(blob, tmp_path, base=section(vmlinux, ".BTF"))


def test_kbuild_runs_print_nothing(tmp_path):
    """Quiet like pahole: vmlinux with 6.1's flags (--btf_gen_optimized) and with 6.12's
    (optimized_func), then a module through 6.12's Makefile.modfinal: no line from us,
    although optimized_func is honoured differently (docs/PAHOLE.md "Quiet on success")."""
    legacy = run([str(kbuild_61() / "pahole-flags.sh")], tmp_path,
                 {"PAHOLE": front()}).stdout.split()
    modern, _ = flags_612(tmp_path)
    assert "--btf_gen_optimized" in legacy and any("optimized_func" in f for f in modern)
    vmlinux = tmp_path / "vmlinux"
    for flags in (legacy, modern):
        shutil.copy(VMLINUX_OBJ, vmlinux)
        out = run([front(), "-J", *flags, vmlinux.name], tmp_path,
                  {"LLVM_OBJCOPY": "objcopy"})
        assert out.returncode == 0 and (out.stdout, out.stderr) == ("", ""), out.stderr
    module = tmp_path / "mod.ko"
    shutil.copy(MODULE_OBJ, module)
    out = modfinal_612(tmp_path, module, extmod=False)
    assert out.returncode == 0 and (out.stdout, out.stderr) == ("", ""), out.stderr
    assert section(module, ".BTF") == expected(MODULE_OBJ, "default", base=vmlinux)


def check_distilled(module: Path, base_path: Path, direct: bytes, tmp_path: Path) -> None:
    """.BTF/.BTF.base are distill_base of the direct split BTF; relocated onto the full
    base and deduplicated they give the direct split BTF's bytes back."""
    base = reader.load(str(base_path))
    split, dist = section(module, ".BTF"), section(module, ".BTF.base")
    want_dist, want_split = distill_base(reader.parse(direct, base=base))
    assert (split, dist) == (writer.write(want_split), writer.write(want_dist))
    relocated = relocate(reader.parse(split, base=reader.parse(dist)), base)
    assert writer.write(canonicalize(relocated, dedup=True)) == direct
    check_readers(split, tmp_path, base=dist)


def test_612_out_of_tree_module_gets_a_distilled_base(tmp_path):
    vmlinux, module = build_612_module(tmp_path, extmod=True)
    check_distilled(module, vmlinux, expected(MODULE_OBJ, "default", base=vmlinux), tmp_path)


def test_today_gen_btf_detached_is_in_name_order(tmp_path):
    """gen-btf.sh (2026): -J with --btf_encode_detached; resolve_btfids then sorts by
    name (stable), so name order makes its sort change nothing."""
    for name, src in (("vmlinux", VMLINUX_OBJ), ("mod.ko", MODULE_OBJ)):
        shutil.copy(src, tmp_path / name)
    before = (tmp_path / "vmlinux").read_bytes()
    out = run([front(), "-J", *FLAGS_TODAY, "--btf_encode_detached=vmlinux.BTF.1",
               "vmlinux"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "vmlinux").read_bytes() == before  # detached: ELF untouched
    vm_blob = (tmp_path / "vmlinux.BTF.1").read_bytes()
    assert vm_blob == expected(VMLINUX_OBJ, "-decl_tag_kfuncs", order="name")
    names = [reader.parse(vm_blob).name(t.name_off) for t in reader.parse(vm_blob).types]
    assert names == sorted(names)  # anonymous ("") first, then strcmp order
    (tmp_path / "vmlinux.BTF").write_bytes(vm_blob)
    out = run([front(), "-J", *FLAGS_TODAY, "--btf_base", "vmlinux.BTF",
               "--btf_encode_detached=mod.ko.BTF.1", "mod.ko"], tmp_path)
    assert out.returncode == 0, out.stderr
    blob = (tmp_path / "mod.ko.BTF.1").read_bytes()
    assert blob == expected(MODULE_OBJ, "-decl_tag_kfuncs", tmp_path / "vmlinux.BTF", "name")
    check_readers(blob, tmp_path, base=vm_blob)


@pytest.mark.parametrize("args, message", [
    (["-J", "--frobnicate", "x.o"], "option --frobnicate is not supported"),
    (["-F", "btf", "-J", "x.o"], "option -F is not supported"),
    (["-J", "--btf_features=attributes", "x.o"], "attributes"),
    (["-J", "--btf_features_strict=var,optimized_func", "x.o"], "'optimized_func'"),
    (["-J", "--btf_gen_floats", "--btf_features=var", "x.o"], "--btf_gen_floats together"),
    (["-J", "--lang_exclude=klingon", "x.o"], "unknown language 'klingon'"),
    (["-J", "-jx", "x.o"], "-j: 'x'"),
    (["x.o"], "give -J or --btf_encode_detached"),
    (["-J", "missing.o"], "missing.o: no such file"),
    (["-J", "notelf.o"], "notelf.o: not an ELF file"),
    (["-J", "--btf_features=distilled_base", "x.o"], "needs --btf_base"),
])
def test_bad_command_lines_name_the_problem(tmp_path, args, message):
    shutil.copy(MODULE_OBJ, tmp_path / "x.o")
    (tmp_path / "notelf.o").write_bytes(b"just text\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    out = run([front(), *args], tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert message in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_in_place_failure_leaves_the_elf_as_it_was(tmp_path):
    """An ELF without DWARF: exit 2, the file unchanged, no temporary left beside it."""
    elf = tmp_path / "nodwarf.o"
    subprocess.run(["objcopy", "--strip-debug", str(MODULE_OBJ), str(elf)], check=True)
    before = elf.read_bytes()
    out = run([front(), "-J", "-j", elf.name], tmp_path)
    assert out.returncode == 2 and "no .debug_info" in out.stderr
    assert elf.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["nodwarf.o"]


def test_out_of_memory_is_one_line_and_leaves_the_elf(tmp_path, monkeypatch, capsys):
    """A MemoryError anywhere in the job (the compiled core's allocations raise it) ends
    as `canonbtf` ends it: one line naming the file, exit 2, the ELF unchanged."""
    from canonbtf.dwarf import encode
    from canonbtf.pahole import front as pahole_front

    def no_memory(*args, **kwargs):
        raise MemoryError

    elf = tmp_path / "x.o"
    shutil.copy(MODULE_OBJ, elf)
    monkeypatch.setattr(encode, "encode_dwarf", no_memory)
    assert pahole_front.main(["-J", str(elf)]) == 2
    err = capsys.readouterr().err
    assert err == f"canonbtf-pahole: {elf}: out of memory\n"
    assert elf.read_bytes() == MODULE_OBJ.read_bytes() and os.listdir(tmp_path) == ["x.o"]


def test_unknown_btf_feature_is_ignored_like_pahole_but_said(tmp_path):
    """Quiet on success as pahole; with -V the note says what was ignored."""
    shutil.copy(MODULE_OBJ, tmp_path / "x.o")
    command = [front(), "--btf_features=var,frob", "--btf_encode_detached=x.btf", "x.o"]
    quiet = run(command, tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""
    out = run([*command, "-V"], tmp_path)
    assert out.returncode == 0 and "unknown feature 'frob' ignored" in out.stderr
    assert (tmp_path / "x.btf").read_bytes() == expected(MODULE_OBJ, "none,func,var")


REAL_MODULE = (FETCHED_DEBUG / "lib" / "modules" / "6.1.0-56-cloud-amd64" / "kernel" /
               "drivers" / "net" / "virtio_net.ko")
REAL_BASE = CORPUS / "vmlinux-6.1.0-56-cloud-amd64.btf"


def test_real_module_with_distilled_base(tmp_path):
    """virtio_net.ko of the fetched 6.1 kernel over that kernel's BTF: Makefile.modfinal
    of 6.12 for an out-of-tree build, distilled base, relocation round trip."""
    if not REAL_MODULE.exists() or not REAL_BASE.exists():
        pytest.skip("the fetched 6.1 kernel's virtio_net.ko or the corpus vmlinux BTF is "
                    "absent")
    shutil.copy(REAL_BASE, tmp_path / "vmlinux")  # raw BTF is a valid --btf_base
    module = tmp_path / "virtio_net.ko"
    shutil.copy(REAL_MODULE, module)
    out = modfinal_612(tmp_path, module, extmod=True)
    assert out.returncode == 0, out.stderr
    check_distilled(module, REAL_BASE, expected(REAL_MODULE, "default", REAL_BASE), tmp_path)


def test_a_module_is_encoded_without_workers(tmp_path, monkeypatch):
    """Kbuild passes -j to every module's pahole; a module (here 12 units over a base)
    still runs in one process, and its bytes are those of a -j1 encode."""
    from canonbtf.dwarf import encode
    from canonbtf.pahole import front as pahole_front

    base = GOLDEN / "funcs.gcc-dwarf5.o"
    (tmp_path / "vmlinux.BTF").write_bytes(writer.write(encode_file(str(base), 1)[0]))

    def module_btf(jobs: str) -> bytes:
        out = tmp_path / f"mod{jobs}.BTF"
        assert pahole_front.main(["-J", jobs, "--btf_base", str(tmp_path / "vmlinux.BTF"),
                                  f"--btf_encode_detached={out}", str(VMLINUX_OBJ)]) == 0
        return out.read_bytes()

    alone = module_btf("-j1")

    def no_workers(*args, **kwargs):
        raise AssertionError("a worker pool for a module")

    monkeypatch.setattr(encode, "_run_workers", no_workers)
    assert module_btf("-j4") == alone


@pytest.mark.parametrize("refers", [True, False])
def test_name_order_refuses_a_reference_to_a_func_both_ways(refers, pure):
    """gen-btf.sh's name order (run.in_order) refuses what the canonical order refuses: a
    pointer to a FUNC (the kernel takes it only when the FUNC comes first), found by the
    compiled test or the validator alike; a pointer to its FUNC_PROTO is fine."""
    from canonbtf.btf import format as f
    from canonbtf.btf.model import Btf, Type
    from canonbtf.btf.strings import StringTable
    from canonbtf.errors import InputError
    from canonbtf.pahole.run import in_order
    from tests.conftest import both_ways

    strings = StringTable(b"\0int\0f\0", 0)
    types = [Type(f.INT, 1, 0, 4, 32), Type(f.FUNC_PROTO, 0, 0, 1, None, []),
             Type(f.FUNC, 5, 0, 2, 0), Type(f.PTR, 0, 0, 3 if refers else 2)]
    btf = reader.parse(writer.write(Btf(types, strings)))

    def ordered() -> object:
        try:
            return writer.write(in_order(btf, "name", "vmlinux"))
        except InputError as e:
            return str(e)

    reference, compiled = both_ways(pure, ordered)
    assert reference == compiled
    if refers:
        assert compiled == ("vmlinux: type 4 (PTR) refers to FUNC 'f' (type 3), not to its "
                            "FUNC_PROTO: cannot be put in name order")
    else:
        assert isinstance(compiled, bytes)
