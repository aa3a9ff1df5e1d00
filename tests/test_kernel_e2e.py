"""tools/kernel_e2e.py's readers, which decide its verdicts: the DWARF offsets it reads
through pahole (judged by gcc's own offsetof), libbpf's CO-RE log and the guest's
serial output (lines as libbpf 1.1 and the guest's /init print them).

The end-to-end run itself (a kernel build, qemu) is `tools/kernel_e2e.py`, in .ci/run."""

from __future__ import annotations

import subprocess

from .conftest import load_tool, need_tool

kernel_e2e = load_tool("kernel_e2e")

# Members pahole prints in each of its shapes: nested anonymous union and struct,
# __attribute__((aligned)), a bit-field, a function pointer, an array, a struct by value.
SOURCE = """\
#include <stddef.h>
#include <stdio.h>
struct inner { long a; int vruntime; };
struct outer {
\tunion { struct { void *next, *prev; union { void *dev; long scratch; }; }; long list[2]; };
\tchar cb[48] __attribute__((aligned(8)));
\tvoid (*destructor)(struct outer *);
\tunsigned int flag:3, len;
\tstruct inner se __attribute__((aligned(16)));
\tstruct outer *real_parent;
};
struct outer used;
#define SHOW(path) printf("%s %zu\\n", #path, offsetof(struct outer, path));
int main(void) {
\tSHOW(next) SHOW(prev) SHOW(dev) SHOW(scratch) SHOW(list) SHOW(cb) SHOW(destructor)
\tSHOW(len) SHOW(se) SHOW(se.vruntime) SHOW(real_parent)
\treturn 0;
}
"""


def test_dwarf_offsets_are_gccs(tmp_path):
    gcc = need_tool("gcc")
    need_tool("pahole")
    (tmp_path / "layout.c").write_text(SOURCE)
    subprocess.run([gcc, "-g", "-O0", "layout.c", "-o", "layout"], cwd=tmp_path, check=True)
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True,
                             check=True).stdout.split("\n")
    want = {tuple(path.split(".")): int(at) for path, at in
            (line.split() for line in printed if line)}
    got = kernel_e2e.dwarf_offsets(tmp_path / "layout",
                                   [("outer", path) for path in want])
    assert {path: got[("outer", path)] for path in want} == want
    assert kernel_e2e.dwarf_offsets(tmp_path / "layout", [("outer", ("nope",))]) == {
        ("outer", ("nope",)): None}


LIBBPF_LOG = """\
libbpf: sec '.relsocket': relo #0: insn #1 against 'offsets'
libbpf: prog 'core_offsets': relo #0: <byte_off> [5] struct sk_buff.len (0:5 @ offset 104)
libbpf: prog 'core_offsets': relo #0: matching candidate #0 <byte_off> [12307] struct \
sk_buff.len (0:5 @ offset 104)
libbpf: prog 'core_offsets': relo #0: patched insn #0 (ALU/ALU64) imm 104 -> 104
libbpf: prog 'core_offsets': relo #1: <byte_off> [255] struct task_struct.se.vruntime \
(0:12:13 @ offset 184)
libbpf: prog 'core_offsets': relo #1: matching candidate #0 <byte_off> [12416] struct \
task_struct.se.vruntime (0:12:13 @ offset 188)
libbpf: prog 'core_offsets': relo #1: patched insn #18 (ALU/ALU64) imm 184 -> 184
libbpf: prog 'on_switch': relo #0: <byte_off> [6] struct task_struct.pid (0:56 @ offset 832)
libbpf: prog 'on_switch': relo #0: matching candidate #0 <byte_off> [12416] struct \
task_struct.pid (0:56 @ offset 832)
libbpf: prog 'on_switch': relo #0: patched insn #3 (LDX/ST/STX) off 832 -> 832
"""


def test_relocations_from_libbpfs_log():
    """Each byte_off relocation with the value patched; a target spec whose offset is
    not the patched value is reported."""
    found, problems = kernel_e2e.relocations(LIBBPF_LOG, "full")
    assert [(r.program, r.struct, r.path, r.offset) for r in found] == [
        ("core_offsets", "sk_buff", ("len",), 104),
        ("core_offsets", "task_struct", ("se", "vruntime"), 184),
        ("on_switch", "task_struct", ("pid",), 832)]
    assert problems == ["task_struct.se.vruntime: spec offset 188, patched 184"]


def test_guest_steps_between_markers():
    serial = ("Run /init as init process\r\nE2E-BEGIN modprobe:ext4\r\n"
              "E2E-END modprobe:ext4 0\r\nE2E-BEGIN load:full:x\r\nlibbpf: failed\r\n"
              "[    3.1] a kernel line\r\nE2E-END load:full:x 255\r\nE2E-BEGIN cut\r\n")
    steps = kernel_e2e.guest_steps(serial)
    assert set(steps) == {"modprobe:ext4", "load:full:x"}
    assert steps["modprobe:ext4"].status == 0 and steps["modprobe:ext4"].lines == []
    assert steps["load:full:x"].status == 255
    assert steps["load:full:x"].lines == ["libbpf: failed", "[    3.1] a kernel line"]


def test_btf_errors_in_dmesg():
    flagged = ["failed to validate module [dummy] BTF: -22",
               "BPF: [123] STRUCT foo size=4 vlen=1", "[    1.0] BPF: Invalid name",
               "Kernel module BTF mismatch detected, BTF debug info may be unavailable"]
    fine = ["tun: Universal TUN/TAP device driver, 1.6", "Run /init as init process"]
    assert [bool(kernel_e2e.BTF_ERROR.search(line)) for line in flagged + fine] == [
        True] * len(flagged) + [False] * len(fine)
