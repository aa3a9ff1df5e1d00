"""Slim headers (`dump --format c --types`, `--types-from`): cut from the full header.

The oracles: the full header's own text (every slim definition is one of its blocks, in
its order), gcc and clang (the slim header compiles and gives the BTF's layout), clang's
CO-RE relocations (the same records from the slim header as from the full one), libbpf
(bpftool's debug log lists the relocations it read, against our .BTF.ext reader) and the
running kernel (the program built against the slim header loads). The programs of
golden/bpf/ take libbpf's own headers where libbpf-dev is installed (golden/bpf/mini_bpf.h),
so their slim headers must hold what those headers need; tests/test_slim_source.py has
programs written against libbpf's headers alone.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from canonbtf.btf import reader
from canonbtf.btf.btf_ext import RELO_KINDS, core_relos
from canonbtf.cli import main
from canonbtf.emit.slim import (
    Selection,
    dump_slim,
    essential_name,
    select_names,
    select_object,
    slim_plan,
)
from canonbtf.errors import InputError

from .conftest import corpus_path, load_cached, need_tool, sysfs_vmlinux
from .test_dump_c import (
    blocks,
    compile_c,
    declarator_btf,
    definitions,
    header,
    layout_asserts,
    names_btf,
    random_structs,
    real_header,
)

BPF_DIR = Path(__file__).resolve().parent.parent / "golden" / "bpf"
VMLINUX_612 = "vmlinux-6.12.113-cloud-amd64.btf"
# Program -> names it needs beyond what its object records: enumerators used as constants
# leave no trace in BTF (docs/C-HEADER.md "Slim headers").
PROGRAMS = {
    "kprobe_task": (),
    "tracepoint": ("BPF_MAP_TYPE_ARRAY",),
    "fentry_skb": (),
    "bitfields": (),
}
# Types each program reaches through CO-RE, which its slim header must define.
REACHED = {
    "kprobe_task": ("struct task_struct", "struct mm_struct", "struct pt_regs"),
    "tracepoint": ("struct trace_event_raw_sched_switch",),
    "fentry_skb": ("struct sk_buff", "struct sock", "struct sock_common"),
    "bitfields": ("struct sk_buff", "struct pt_regs"),
}
# libbpf's short names of the relocation kinds (core_relo_kind_str), in RELO_KINDS' order.
LIBBPF_KINDS = ("byte_off", "byte_sz", "field_exists", "signed", "lshift_u64", "rshift_u64",
                "local_type_id", "target_type_id", "type_exists", "type_size",
                "enumval_exists", "enumval_value", "type_matches")


def slim(btf, names=(), objects=()) -> str:
    selection = Selection()
    for path in objects:
        select_object(btf, str(path), selection)
    select_names(btf, names, selection)
    out = io.StringIO()
    dump_slim(btf, selection, out)
    return out.getvalue()


def defined_ids(btf, names=(), objects=()) -> set[int]:
    selection = Selection()
    for path in objects:
        select_object(btf, str(path), selection)
    select_names(btf, names, selection)
    return set(slim_plan(btf, selection)[0])


def assert_cut_from(text: str, full: str) -> None:
    """Same frame; every definition a block of the full header, in the full header's order;
    every forward declaration a tag the full header declares or defines."""
    assert text.startswith(full[:full.index("#endif\n\n") + 8])
    assert text.endswith(full[full.rindex("#ifndef BPF_NO_PRESERVE_ACCESS_INDEX"):])
    full_blocks = blocks(full)
    position = {block: i for i, block in enumerate(full_blocks)}
    found = blocks(text)
    if found and found[0] not in position:
        forward = found.pop(0).split("\n")
        assert forward == sorted(forward)
        for line in forward:
            tag = line[:-1]
            assert f"\n{tag} {{" in full or f"\n{line}\n" in full, line
    places = [position[block] for block in found if not block.startswith("/* BPF kfuncs */")]
    assert places == sorted(places) and len(set(places)) == len(places)


def relos(path: Path) -> list[tuple[str, int, str, str, str]]:
    """(section, instruction offset, root type name, access string, kind) of each CO-RE
    relocation of a BPF object, read by canonbtf.btf.btf_ext."""
    data = reader.read_file(str(path))
    local = reader.parse(reader.elf_section(str(path), data, ".BTF"), str(path))
    ext = reader.elf_section(str(path), data, ".BTF.ext")
    out = []
    for r in core_relos(ext, local.strings.get, str(path)):
        t = local.type_by_id(r.type_id)
        out.append((r.section, r.insn_off, local.name(t.name_off), r.access, r.kind_name))
    return out


def build_bpf(tmp: Path, name: str, header_text: str) -> Path:
    """Compile golden/bpf/NAME.bpf.c with clang -target bpf against `header_text`."""
    clang = need_tool("clang")
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "vmlinux.h").write_text(header_text, encoding="latin-1")
    obj = tmp / f"{name}.bpf.o"
    done = subprocess.run([clang, "-target", "bpf", "-O2", "-g", "-I", str(tmp),
                           "-I", str(BPF_DIR), "-c", str(BPF_DIR / f"{name}.bpf.c"),
                           "-o", str(obj)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return obj


# ---- hand-built BTF: no tools needed ----

@pytest.mark.parametrize("build", [declarator_btf, names_btf], ids=["declarators", "names"])
def test_every_named_type_alone_is_cut_from_the_full_header(build):
    btf = build()
    full = header(btf)
    names = set(re.findall(r"^(?:struct|union|enum) (\w+) \{$", definitions(full), re.M))
    names |= set(re.findall(r"^typedef .*?(\w+)(?:\)\(.*\))?;$", definitions(full), re.M))
    assert len(names) > 5
    for name in sorted(names):
        assert_cut_from(slim(btf, [name]), full)
    assert slim(btf, sorted(names)).count("\n\n") <= full.count("\n\n")


def test_essential_names_are_libbpfs():
    for name, essential in (("task_struct___old", "task_struct"), ("a___b___c", "a___b"),
                            ("irq_info___2", "irq_info"), ("plain", "plain"),
                            ("x____y", "x____y"), ("a___", "a___"), ("___a", "___a")):
        assert essential_name(name) == essential, name


def test_names_spell_tags_typedefs_and_suffixes():
    btf = names_btf()
    text = definitions(slim(btf, ["t___2"]))
    assert text == "typedef long int t___2;\n\n"
    with pytest.raises(InputError, match="'struct t___2'"):
        select_names(btf, ["struct t___2"])


@pytest.mark.parametrize("seed", range(3))
def test_random_structs_slim_headers_compile_with_exact_layout(tmp_path, seed):
    """Structs holding each other by value and by pointer, through typedefs: each one's
    slim header holds all it needs (gcc compiles it and the BTF's offsets and sizes)."""
    btf = random_structs(seed, 25, extra=False)
    full = header(btf)
    for name in sorted(set(re.findall(r"^struct (\w+) \{$", full, re.M)))[::5]:
        text = slim(btf, [f"struct {name}"])
        assert_cut_from(text, full)
        asserts, count = layout_asserts(btf, defined_ids(btf, [f"struct {name}"]))
        assert count > 0
        compile_c(tmp_path, "gcc", ["-c"], {"vmlinux.h": text}, asserts)


# ---- the command line ----

def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line(err: str, *words: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], lines[0]


def test_unknown_names_are_exit_2_naming_them(capsys, tmp_path):
    from canonbtf.btf import writer
    btf_path = tmp_path / "in.btf"
    btf_path.write_bytes(writer.write(names_btf()))
    out = tmp_path / "slim.h"
    status, _, err = run(capsys, "dump", str(btf_path), "--format", "c", "--types",
                         "t, struct nope,also_nope", "-o", str(out))
    assert status == 2
    assert_one_line(err, str(btf_path), "'struct nope'", "'also_nope'")
    assert "'t'" not in err and not out.exists()
    status, _, err = run(capsys, "dump", str(btf_path), "--types", "t")
    assert status == 2
    assert_one_line(err, "--format c")


def test_bad_objects_are_exit_2_naming_them(capsys, tmp_path):
    from canonbtf.btf import writer
    kernel = tmp_path / "in.btf"
    kernel.write_bytes(writer.write(names_btf()))
    out = tmp_path / "slim.h"
    cases = [(tmp_path / "missing.o", "no such file"),
             (kernel, "not an ELF object"),
             (Path(__file__).resolve().parent.parent / "golden" / "obj" / "arrays.gcc-dwarf5.o",
              "no .BTF section")]
    objcopy = shutil.which("llvm-objcopy") or shutil.which("objcopy")
    if objcopy:
        stripped = tmp_path / "no-ext.o"
        subprocess.run([objcopy, "--remove-section=.BTF.ext", "--remove-section=.rel.BTF.ext",
                        str(BPF_DIR / "obj" / "kprobe_task.bpf.o"), str(stripped)], check=True)
        cases.append((stripped, "no .BTF.ext section"))
    for obj, words in cases:
        status, _, err = run(capsys, "dump", str(kernel), "--format", "c", "--types-from",
                             str(obj), "-o", str(out))
        assert status == 2, (obj, err)
        assert_one_line(err, f"canonbtf: {obj}: ", words)
        assert not out.exists()
    # The object is an input too: -o naming it is refused, and it is left as it was.
    obj = tmp_path / "prog.bpf.o"
    shutil.copy(BPF_DIR / "obj" / "tracepoint.bpf.o", obj)
    status, _, err = run(capsys, "dump", str(kernel), "--format", "c", "--types-from",
                         str(obj), "-o", str(obj))
    assert status == 2
    assert_one_line(err, str(obj), "refusing to overwrite")
    assert obj.read_bytes() == (BPF_DIR / "obj" / "tracepoint.bpf.o").read_bytes()
    if not objcopy:
        pytest.skip("objcopy/llvm-objcopy not installed: the object without .BTF.ext "
                    "was not tried")


def test_malformed_btf_ext_is_an_input_error():
    good = (BPF_DIR / "obj" / "bitfields.bpf.o")
    data = reader.read_file(str(good))
    local = reader.parse(reader.elf_section(str(good), data, ".BTF"), str(good))
    ext = reader.elf_section(str(good), data, ".BTF.ext")
    assert len(core_relos(ext, local.strings.get, "x")) == 19
    for broken, words in ((ext[:6], "truncated header"), (b"\0\0" + ext[2:], "bad magic"),
                          (ext[:-4], "run past"), (ext[:32], "past the section")):
        with pytest.raises(InputError, match=words):
            core_relos(broken, local.strings.get, "x")


# ---- real kernels ----

def test_task_struct_is_under_15_percent_of_the_full_header(tmp_path, capsys):
    kernel = corpus_path(VMLINUX_612)
    out = tmp_path / "slim.h"
    assert run(capsys, "dump", str(kernel), "--format", "c", "--types", "task_struct",
               "-o", str(out))[0] == 0
    text = out.read_text(encoding="latin-1")
    full = real_header(kernel)
    ratio = text.count("\n") / full.count("\n")
    print(f"task_struct: {text.count(chr(10))} of {full.count(chr(10))} lines ({ratio:.2%})")
    assert ratio < 0.15
    assert "\nstruct task_struct {\n" in text and "\nstruct mm_struct;\n" in text
    assert_cut_from(text, full)


@pytest.mark.parametrize("compiler, args", [
    pytest.param("gcc", ["-c"], id="gcc"),
    pytest.param("clang", ["-target", "bpf", "-O2", "-c"], id="clang-bpf")])
def test_corpus_slim_header_compiles_with_exact_layout(tmp_path, compiler, args):
    btf = load_cached(corpus_path(VMLINUX_612))
    names = ["task_struct", "struct sk_buff", "BPF_MAP_TYPE_ARRAY"]
    text = slim(btf, names)
    asserts, count = layout_asserts(btf, defined_ids(btf, names))
    assert count > 500
    compile_c(tmp_path, compiler, args, {"vmlinux.h": text}, asserts)
    # The same asserts hold with the full header.
    (tmp_path / "full").mkdir()
    compile_c(tmp_path / "full", compiler, args,
              {"vmlinux.h": real_header(corpus_path(VMLINUX_612))}, asserts)


def test_kfunc_prototypes_come_with_their_typedefs(tmp_path):
    btf = load_cached(sysfs_vmlinux())
    try:
        text = slim(btf, ["bpf_dynptr_from_skb", "bpf_rdonly_cast"])
    except InputError as e:
        pytest.skip(f"the running kernel's BTF tags no such kfuncs ({e})")
    assert_cut_from(text, real_header(sysfs_vmlinux()))
    assert "#ifndef __ksym\n" in text and text.count(" __weak __ksym;\n") == 2
    assert "\nstruct bpf_dynptr;\n" in text and "\ntypedef __u64 u64;\n" in text
    source = "#include \"vmlinux.h\"\nvoid *use(void) { return bpf_rdonly_cast; }\n"
    compile_c(tmp_path, "clang", ["-target", "bpf", "-O2", "-c"], {"vmlinux.h": text}, source)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_prebuilt_objects_give_their_types(name):
    """No compiler needed: the objects golden/bpf/rebuild.sh built against the full 6.12
    header; each slim header defines what the program reaches and every relocation's root."""
    btf = load_cached(corpus_path(VMLINUX_612))
    obj = BPF_DIR / "obj" / f"{name}.bpf.o"
    text = slim(btf, PROGRAMS[name], [obj])
    assert_cut_from(text, real_header(corpus_path(VMLINUX_612)))
    for spelled in REACHED[name]:
        assert f"\n{spelled} {{\n" in text, spelled
    for _, _, root, _, _ in relos(obj):
        assert re.search(rf"\n(struct|union) {root} {{\n", text), root
    assert text.count("\n") < 3000


def kernels() -> list:
    return [pytest.param("corpus", id="6.12-corpus"), pytest.param("sysfs", id="running")]


@pytest.mark.parametrize("kernel", kernels())
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_slim_header_gives_the_same_program(tmp_path, kernel, name):
    """The workflow: build against the full header, cut the slim header from the object,
    build again. The same CO-RE relocations; layout asserts of every slim type hold with
    gcc and clang."""
    path = corpus_path(VMLINUX_612) if kernel == "corpus" else sysfs_vmlinux()
    btf = load_cached(path)
    full_obj = build_bpf(tmp_path / "full", name, real_header(path))
    text = slim(btf, PROGRAMS[name], [full_obj])
    slim_obj = build_bpf(tmp_path / "slim", name, text)
    assert relos(slim_obj) == relos(full_obj)
    assert len(relos(full_obj)) >= 4
    asserts, count = layout_asserts(btf, defined_ids(btf, PROGRAMS[name], [full_obj]))
    assert count > 10
    compile_c(tmp_path / "slim", "gcc", ["-c"], {}, asserts)
    compile_c(tmp_path / "slim", "clang", ["-target", "bpf", "-O2", "-c"], {}, asserts)


def test_kfunc_program_gets_its_prototype(tmp_path):
    """A program calling a kfunc, built against the running kernel's full header: its slim
    header declares the kfunc, defines the struct it passes, and gives the same program."""
    path = sysfs_vmlinux()
    btf = load_cached(path)
    full = real_header(path)
    if "extern int bpf_dynptr_from_skb(" not in full:
        pytest.skip("the running kernel's BTF has no bpf_dynptr_from_skb kfunc")
    full_obj = build_bpf(tmp_path / "full", "dynptr_kfunc", full)
    text = slim(btf, (), [full_obj])
    assert_cut_from(text, full)
    assert text.count(" __weak __ksym;\n") == 1 and "\nstruct bpf_dynptr {\n" in text
    slim_obj = build_bpf(tmp_path / "slim", "dynptr_kfunc", text)
    assert relos(slim_obj) == relos(full_obj) and relos(full_obj)
    if os.geteuid() == 0 and Path("/sys/fs/bpf").is_dir():
        done = load(slim_obj, f"canonbtf-slim-kfunc-{os.getpid()}")
        assert done.returncode == 0, done.stderr[-3000:]


def libbpf_relos(log: str) -> list[tuple[str, str, str]]:
    """(root type name, access string, kind) of each relocation in bpftool's debug log."""
    found = re.findall(r"relo #\d+: <(\w+)> \[\d+\] (?:struct|union) (\w+)\S* \(([\d:]+) @",
                       log)
    return [(root, access, kind) for kind, root, access in found]


def load(obj: Path, pin: str) -> subprocess.CompletedProcess:
    bpftool = need_tool("bpftool")
    pin_dir = Path("/sys/fs/bpf") / pin
    shutil.rmtree(pin_dir, ignore_errors=True)
    try:
        return subprocess.run([bpftool, "-d", "prog", "loadall", str(obj), str(pin_dir)],
                              capture_output=True, text=True)
    finally:
        shutil.rmtree(pin_dir, ignore_errors=True)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_slim_program_loads_into_the_running_kernel(tmp_path, name):
    if os.geteuid() != 0 or not Path("/sys/fs/bpf").is_dir():
        pytest.skip("loading BPF programs needs root and bpffs at /sys/fs/bpf")
    path = sysfs_vmlinux()
    btf = load_cached(path)
    full_obj = build_bpf(tmp_path / "full", name, real_header(path))
    slim_obj = build_bpf(tmp_path / "slim", name, slim(btf, PROGRAMS[name], [full_obj]))
    done = load(slim_obj, f"canonbtf-slim-{os.getpid()}")
    # libbpf read the same relocations as canonbtf's .BTF.ext reader.
    ours = [(root, access, LIBBPF_KINDS[RELO_KINDS.index(kind)])
            for _, _, root, access, kind in relos(slim_obj)]
    assert libbpf_relos(done.stderr) == ours, done.stderr[-3000:]
    if done.returncode != 0:
        reference = load(full_obj, f"canonbtf-full-{os.getpid()}")
        if reference.returncode != 0 and "Operation not permitted" in reference.stderr:
            pytest.skip(f"the running kernel refuses this {name} program with EPERM even "
                        "when it is built against the full header")
    assert done.returncode == 0, done.stderr[-3000:]



def test_split_btf_is_refused(capsys):
    from .conftest import BASE_61
    module = corpus_path("mod-6.1.0-56-cloud-xfs.btf")
    status, out, err = run(capsys, "dump", str(module), "--base", str(corpus_path(BASE_61.name)),
                           "--format", "c", "--types", "xfs_inode")
    assert status == 2 and not out
    assert_one_line(err, str(module), "split BTF is not supported")
