"""One header for vmlinux and its modules: `canonbtf dump --format c VMLINUX MODULE...`.

Judges: gcc and clang -target bpf (the header compiles; `_Static_assert`s of every module
struct's size and member offsets, straight from each module's BTF, hold), the permutation
of every input's ids and of the modules' order (no byte changes), the compiled and the
pure emitters (the same bytes), and a program reading module types through CO-RE with
libbpf's headers.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import reader
from canonbtf.btf.model import Btf
from canonbtf.canon.merge import merged
from canonbtf.cli import main
from canonbtf.emit.c.header import SPLIT_NOTE, dump_c

from .conftest import BASE_61, both_ways, corpus_path, need_tool
from .shuffle import shuffle
from .test_dump_c import compile_c, layout_asserts
from .test_slim import relos
from .test_slim_source import LIBBPF_HEADERS

MODULES_61 = [f"mod-6.1.0-56-cloud-{m}.btf" for m in ("xfs", "bridge", "nf_tables",
                                                          "virtio_net")]
SYSFS = Path("/sys/kernel/btf")


def corpus_inputs() -> tuple[Path, list[Path]]:
    return corpus_path(BASE_61.name), [corpus_path(m) for m in MODULES_61]


def header_of(base: Btf, modules: list[Btf]) -> str:
    out = io.StringIO()
    dump_c(merged(base, modules), out)
    return out.getvalue()


def load_all(base_path: Path, module_paths: list[Path]) -> tuple[Btf, list[Btf]]:
    base = reader.load(str(base_path))
    return base, [reader.load(str(p), base) for p in module_paths]


def module_struct_ids(btf: Btf, modules: list[Btf]) -> set[int]:
    """Ids in `btf` (the merged BTF) of the named structs and unions the modules define."""
    names = {(m.name(t.name_off), t.kind) for m in modules for _, t in m.own()
             if t.kind in (f.STRUCT, f.UNION) and t.name_off}
    return {i for i, t in btf.own() if (btf.name(t.name_off), t.kind) in names}


@pytest.mark.parametrize("compiler, args", [
    pytest.param("gcc", ["-c"], id="gcc"),
    pytest.param("clang", ["-target", "bpf", "-O2", "-c"], id="clang-bpf")])
def test_corpus_vmlinux_and_modules_compile_with_exact_layout(tmp_path, compiler, args):
    base, modules = load_all(*corpus_inputs())
    btf = merged(base, modules)
    ids = module_struct_ids(btf, modules)
    asserts, count = layout_asserts(btf, ids)
    assert len(ids) > 500 and count > 4000
    header = header_of(base, modules)
    for name in ("xfs_inode", "net_bridge", "nft_table", "virtnet_info", "task_struct"):
        assert f"\nstruct {name} {{\n" in header, name
    compile_c(tmp_path, compiler, args, {"vmlinux.h": header}, asserts)


def test_running_kernel_and_its_modules_compile(tmp_path, capsys):
    if not (SYSFS / "vmlinux").exists():
        pytest.skip("/sys/kernel/btf/vmlinux not present on this machine")
    modules = sorted(str(p) for p in SYSFS.iterdir() if p.name != "vmlinux")
    out = tmp_path / "vmlinux.h"
    assert main(["dump", str(SYSFS / "vmlinux"), *modules, "--format", "c",
                 "-o", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text(encoding="latin-1")
    for compiler, args in (("gcc", ["-c"]), ("clang", ["-target", "bpf", "-O2", "-c"])):
        compile_c(tmp_path, compiler, args, {}, '#include "vmlinux.h"\n')
    if not modules:
        assert text == header_of(reader.load(str(SYSFS / "vmlinux")), [])
        pytest.skip("the running kernel has no module BTF loaded: vmlinux alone compiled")


def permuted_ids(btf: Btf, seed: int) -> tuple[Btf, list[int]]:
    """`btf` (no base) with its ids permuted, strings kept; and old id -> new id."""
    rng = random.Random(seed)
    order = list(range(len(btf.types)))
    rng.shuffle(order)
    new_id = list(range(len(btf.types) + 1))
    for new_pos, old_pos in enumerate(order):
        new_id[old_pos + 1] = new_pos + 1
    types = [btf.types[old].remap(new_id) for old in order]
    return Btf(types, btf.strings, None, btf.byteorder), new_id


def rebased(module: Btf, base: Btf, base_ids: list[int]) -> Btf:
    """`module` over `base`, whose ids are `base_ids` of its old base's."""
    first = module.first_id

    class Ids:
        def __getitem__(self, value: int) -> int:
            return value if value >= first else base_ids[value]

    return Btf([t.remap(Ids()) for t in module.types], module.strings, base,
               module.byteorder)


def test_permuting_any_inputs_ids_changes_no_byte(pure):  # noqa: F811
    base, modules = load_all(*corpus_inputs())
    reference = header_of(base, modules)
    for seed in range(2):
        new_base, base_ids = permuted_ids(base, seed)
        new_modules = [shuffle(rebased(m, new_base, base_ids), seed + i)
                       for i, m in enumerate(modules)]
        random.Random(seed).shuffle(new_modules)
        pure_text, compiled_text = both_ways(pure, header_of, new_base, new_modules)
        assert pure_text == reference and compiled_text == reference, seed


def test_a_type_two_modules_define_is_defined_once():
    base, modules = load_all(*corpus_inputs())
    twice = (modules[0], reader.load(str(corpus_path(MODULES_61[0])), base))
    header = header_of(base, list(twice))
    assert header == header_of(base, [modules[0]])
    assert header.count("\nstruct xfs_inode {\n") == 1 and "xfs_inode___2" not in header


def test_cli_merged_header_and_the_split_note(tmp_path, capsys):
    base_path, module_paths = corpus_inputs()
    out = tmp_path / "all.h"
    assert main(["dump", str(base_path), *map(str, module_paths), "--format", "c",
                 "-o", str(out)]) == 0
    base, modules = load_all(base_path, module_paths)
    assert out.read_text(encoding="latin-1") == header_of(base, modules)
    split = tmp_path / "xfs.h"
    assert main(["dump", str(module_paths[0]), "--base", str(base_path), "--format", "c",
                 "-o", str(split)]) == 0
    assert split.read_text(encoding="latin-1").startswith(SPLIT_NOTE)
    for argv, words in ((["--format", "raw"], "need --format c"),
                        (["--format", "c", "--base", str(base_path)], "--base goes with")):
        assert main(["dump", str(base_path), str(module_paths[0]), *argv]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and words in err, err
    assert main(["dump", str(base_path), str(tmp_path / "none.btf"), "--format", "c"]) == 2
    assert "none.btf: no such file" in capsys.readouterr().err


def test_slim_header_across_vmlinux_and_modules(tmp_path, capsys):
    base_path, module_paths = corpus_inputs()
    out = tmp_path / "vmlinux.h"
    assert main(["dump", str(base_path), *map(str, module_paths), "--format", "c",
                 "--types", "xfs_inode,net_bridge,task_struct", "-o", str(out)]) == 0
    text = out.read_text(encoding="latin-1")
    assert "\nstruct xfs_inode {\n" in text and "\nstruct net_bridge {\n" in text
    compile_c(tmp_path, "clang", ["-target", "bpf", "-O2", "-c"], {}, '#include "vmlinux.h"\n')


PROGRAM = """#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

__u64 seen_size, seen_ports;

SEC("kprobe/xfs_inode_item_format")
int BPF_KPROBE(xfs_format, struct xfs_log_item *lip)
{
	struct xfs_inode_log_item *iip = (struct xfs_inode_log_item *)lip;
	struct xfs_inode *ip = BPF_CORE_READ(iip, ili_inode);

	seen_size = BPF_CORE_READ(ip, i_disk_size);
	return 0;
}

SEC("kprobe/br_add_if")
int BPF_KPROBE(br_add, struct net_bridge *br)
{
	seen_ports += BPF_CORE_READ(br, dev, ifindex);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
"""


def test_program_using_module_types_compiles(tmp_path):
    need_tool("clang")
    if not LIBBPF_HEADERS.is_file():
        pytest.skip("libbpf's BPF headers are not installed (libbpf-dev)")
    base, modules = load_all(*corpus_inputs())
    compile_c(tmp_path, "clang", ["-target", "bpf", "-O2", "-g", "-D__TARGET_ARCH_x86",
                                  "-I", str(tmp_path), "-c"],
              {"vmlinux.h": header_of(base, modules)}, PROGRAM)
    roots = {root for _, _, root, _, _ in relos(tmp_path / "use.o")}
    assert {"xfs_inode", "xfs_inode_log_item", "net_bridge"} <= roots, roots
