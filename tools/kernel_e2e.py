#!/usr/bin/env python3
"""A real kernel built with `make PAHOLE=canonbtf-pahole`, end to end (issue 26).

From Debian's packages only (linux-source-6.12, qemu-system-x86, busybox-static,
libbpf-dev, clang, bpftool, dwarves, flex bison bc libelf-dev libssl-dev cpio kmod):

1. build: `make ARCH=x86_64 tinyconfig` + tools/kernel_e2e/e2e.config + olddefconfig,
   then `make -jN PAHOLE=canonbtf-pahole V=1 all` with KBUILD_BUILD_TIMESTAMP, _USER,
   _HOST and _VERSION fixed; the V=1 log must hold no line from canonbtf;
2. relink: vmlinux and every .ko removed and made again at -j1, then at -j2 (the BTF
   steps and the modules' final link run again); sha256 of each equal in all three;
3. guest: `modules_install` into an initramfs with busybox, bpftool (and its shared
   libraries), the .BTF of vmlinux and of every module extracted here, and the BPF
   programs of tools/kernel_e2e/progs compiled with clang against canonbtf's own
   vmlinux.h of this kernel, and once more against a slim header made with
   `--types-from` each program's object;
4. boot under qemu (KVM where it works, else TCG; `panic=-1`, `-no-reboot`: the guest's
   /init ends qemu, the timeout is only a safety net). The guest loads ext4, dummy, veth
   and tun, compares /sys/kernel/btf/* with the extracted bytes, loads every program
   with `bpftool -d` (libbpf's CO-RE log) and dumps its translated code;
5. judge: every module loaded, every /sys/kernel/btf file equal, every program loaded,
   every CO-RE field offset libbpf patched equal to the offset pahole reads from the
   DWARF of vmlinux (`pahole -F dwarf -C`), no BTF error in dmesg, and fentry on a name
   with several text addresses (chosen from this kernel's symbol table) refused;
6. with --times, tools/btf_steps.py times the build's own pahole command lines.

Exit status 0 when every check passed, 1 when one failed, 2 when the job could not be
done (a tool missing); the last line is one summary line either way.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HERE = REPO / "tools" / "kernel_e2e"
SOURCE_TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
FRAGMENT = HERE / "e2e.config"
MODULES = ("ext4", "dummy", "veth", "tun")
# The programs of tools/kernel_e2e/progs that must load, full header and slim header.
PROGRAMS = ("core_offsets", "tp_btf", "kprobe", "fentry", "fentry_module")
AMBIGUOUS_PROGRAM = "fentry_ambiguous"
BUILD_IDENTITY = {
    "KBUILD_BUILD_TIMESTAMP": "2026-01-01 00:00:00 UTC",
    "KBUILD_BUILD_USER": "canonbtf",
    "KBUILD_BUILD_HOST": "e2e",
    "KBUILD_BUILD_VERSION": "1",
}
BUSYBOX = Path("/bin/busybox")
PAHOLE_124 = "pahole"  # Debian's dwarves: the DWARF reader of the offset check


class JobError(Exception):
    """The job cannot be done here (a tool or file missing): exit status 2."""


@dataclass
class Report:
    """Every check's verdict, printed as it is made, and the summary's parts."""

    failures: list[str] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        say(f"{name}: {'ok' if ok else 'FAIL'}{': ' + detail if detail else ''}")
        if not ok:
            self.failures.append(name)
        return ok

    def summary(self) -> str:
        verdict = "PASS" if not self.failures else f"FAIL ({', '.join(self.failures)})"
        return f"kernel_e2e: {verdict} " + ", ".join(self.parts)


def say(text: str) -> None:
    print(f"kernel_e2e: {text}", flush=True)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def run(argv: list, cwd: Path | None = None, env: dict | None = None,
        log: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run `argv`; its output into `log` when given, else captured."""
    full_env = {**os.environ, **(env or {})}
    argv = [str(a) for a in argv]
    if log is None:
        proc = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True,
                              errors="replace")
    else:
        with open(log, "w") as out:
            proc = subprocess.run(argv, cwd=cwd, env=full_env, stdout=out,
                                  stderr=subprocess.STDOUT, text=True)
    if check and proc.returncode != 0:
        where = f"see {log}" if log else (proc.stderr or proc.stdout).strip()[-2000:]
        raise JobError(f"{' '.join(argv[:6])} ... failed (exit {proc.returncode}): {where}")
    return proc


def need_tools() -> dict[str, str]:
    """Every outside tool, by name; JobError naming the missing ones and their package."""
    wanted = {"make": "make", "gcc": "gcc", "clang": "clang", "bpftool": "bpftool",
              "qemu-system-x86_64": "qemu-system-x86", "objcopy": "binutils",
              "readelf": "binutils", PAHOLE_124: "dwarves", "depmod": "kmod",
              "flex": "flex", "bison": "bison", "bc": "bc",
              "canonbtf-pahole": "canonbtf (pip install .)", "canonbtf": "canonbtf"}
    beside_python = Path(sys.executable).parent
    found, missing = {}, []
    for name, package in wanted.items():
        path = shutil.which(name) or shutil.which(name, path=str(beside_python))
        if path:
            found[name] = path
        else:
            missing.append(f"{name} ({package})")
    for path, package in ((SOURCE_TARBALL, "linux-source-6.12"), (BUSYBOX, "busybox-static"),
                          (Path("/usr/include/bpf/bpf_helpers.h"), "libbpf-dev")):
        if not path.exists():
            missing.append(f"{path} ({package})")
    if missing:
        raise JobError("missing: " + ", ".join(missing))
    return found


@dataclass
class Kernel:
    """The source tree being built, and how make is run in it."""

    tree: Path
    tools: dict[str, str]
    jobs: int

    def make(self, *targets: str, jobs: int | None = None, log: Path | None = None,
             verbose: bool = False) -> subprocess.CompletedProcess:
        pahole_dir = str(Path(self.tools["canonbtf-pahole"]).parent)
        env = {**BUILD_IDENTITY, "PATH": pahole_dir + os.pathsep + os.environ["PATH"]}
        argv = ["make", f"-j{jobs or self.jobs}", "ARCH=x86_64", "PAHOLE=canonbtf-pahole",
                *(["V=1"] if verbose else []), *targets]
        return run(argv, cwd=self.tree, env=env, log=log)

    @property
    def vmlinux(self) -> Path:
        return self.tree / "vmlinux"

    def modules(self) -> list[Path]:
        return sorted(self.tree.rglob("*.ko"))

    def release(self) -> str:
        return self.make("-s", "kernelrelease").stdout.strip()


def unpack_and_configure(work: Path, tools: dict[str, str], jobs: int,
                         report: Report) -> Kernel:
    """A fresh tree from the tarball, configured by tinyconfig + the fragment."""
    tree = work / "linux-source-6.12"
    if tree.exists():
        shutil.rmtree(tree)
    work.mkdir(parents=True, exist_ok=True)
    run(["tar", "-xf", SOURCE_TARBALL, "-C", work])
    kernel = Kernel(tree, tools, jobs)
    kernel.make("tinyconfig")
    run([tree / "scripts" / "kconfig" / "merge_config.sh", "-m", ".config", FRAGMENT],
        cwd=tree)
    kernel.make("olddefconfig")
    config = set((tree / ".config").read_text().splitlines())
    wanted = [line for line in FRAGMENT.read_text().splitlines()
              if line.startswith("CONFIG_") or line.startswith("# CONFIG_")]
    lost = [line for line in wanted if line not in config]
    report.check("config", not lost, "every option of e2e.config set" if not lost
                 else "not as e2e.config says after olddefconfig: " + "; ".join(lost))
    return kernel


def quiet_log(log: Path) -> list[str]:
    """Lines canonbtf wrote into a V=1 build log (it must write none on success), and
    resolve_btfids' complaints (a BTF id .BTF_ids wants that our BTF does not have)."""
    return [line for line in log.read_text(errors="replace").splitlines()
            if line.startswith(("canonbtf-pahole:", "canonbtf:"))
            or "resolve_btfids: unresolved" in line]


def btf_steps_run(log: Path) -> int:
    """How many pahole -J command lines a V=1 log shows: vmlinux plus each module."""
    return sum(1 for line in log.read_text(errors="replace").splitlines()
               if "canonbtf-pahole -J" in line)


def build(kernel: Kernel, work: Path, report: Report) -> None:
    """The first build, timed, with its V=1 log kept for the BTF-step timing."""
    start = time.monotonic()
    log = work / "build.log"
    say(f"building in {kernel.tree} (make -j{kernel.jobs} V=1 all, log {log})")
    kernel.make("all", log=log, verbose=True)
    took = time.monotonic() - start
    noise = quiet_log(log)
    report.check("build", True, f"{minutes(took)}, {len(kernel.modules())} modules")
    report.check("quiet build log", not noise, "no line from canonbtf, no unresolved "
                 "symbol from resolve_btfids" if not noise
                 else f"{len(noise)} lines, first: {noise[0]}")
    report.parts.append(f"build {minutes(took)}")


def hashes(kernel: Kernel) -> dict[str, str]:
    files = [kernel.vmlinux, *kernel.modules()]
    return {str(p.relative_to(kernel.tree)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files}


def relink(kernel: Kernel, work: Path, report: Report, with_first: bool = True) -> None:
    """vmlinux and every .ko made again at -j1 and at -j2: the same bytes each time, and
    the bytes of the first build when it was made in this run (`with_first`)."""
    first = hashes(kernel)
    differing: set[str] = set()
    for jobs in (1, 2):
        for path in [kernel.vmlinux, *kernel.modules()]:
            path.unlink()
        log = work / f"relink-j{jobs}.log"
        start = time.monotonic()
        kernel.make("all", jobs=jobs, log=log, verbose=True)
        again = hashes(kernel)
        ran = btf_steps_run(log)
        report.check(f"relink -j{jobs}", ran == len(first) and not quiet_log(log),
                     f"{minutes(time.monotonic() - start)}, {ran} BTF steps ran again "
                     f"(want {len(first)}), log quiet: {not quiet_log(log)}")
        differing |= {name for name in first.keys() | again.keys()
                      if first.get(name) != again.get(name)}
        if not with_first and jobs == 1:  # a reused tree may come from another canonbtf
            first, differing = again, set()
    modules = len(first) - 1
    report.check("reproducible", not differing,
                 f"vmlinux + {modules} .ko identical at "
                 + (f"-j{kernel.jobs}, -j1, -j2" if with_first else "-j1, -j2")
                 if not differing else "differ: " + ", ".join(sorted(differing)))
    report.parts.append(f"-j1==-j2 (vmlinux + {modules} ko)" if not differing
                        else f"-j1!=-j2 ({len(differing)} files differ)")


# --- BPF programs -----------------------------------------------------------------

def clang_bpf(source: Path, include: Path, out: Path, defines: tuple[str, ...] = ()
              ) -> subprocess.CompletedProcess:
    """clang -target bpf against the vmlinux.h in `include` and libbpf-dev's headers."""
    return run(["clang", "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86",
                *defines, "-I", include, "-c", source, "-o", out], check=False)


def compile_programs(kernel: Kernel, work: Path, ambiguous: str, report: Report
                     ) -> tuple[Path, dict[str, str]]:
    """progs/full/*.bpf.o against canonbtf's vmlinux.h; progs/slim/*.bpf.o against a
    header made with --types-from each full object. Returns the progs directory and,
    for each slim program that did not compile, the compiler's first error."""
    progs = work / "progs"
    shutil.rmtree(progs, ignore_errors=True)
    full = progs / "full"
    full.mkdir(parents=True)
    canonbtf = kernel.tools["canonbtf"]
    run([canonbtf, "dump", "--format", "c", kernel.vmlinux, "-o", full / "vmlinux.h"])
    for name in (*PROGRAMS, AMBIGUOUS_PROGRAM):
        defines = (f'-DAMBIGUOUS_NAME="{ambiguous}"',) if name == AMBIGUOUS_PROGRAM else ()
        proc = clang_bpf(HERE / "progs" / f"{name}.bpf.c", full, full / f"{name}.bpf.o",
                         defines)
        if proc.returncode != 0:
            raise JobError(f"{name}.bpf.c does not compile against canonbtf's full "
                           f"vmlinux.h: {proc.stderr.strip()[:1500]}")
    slim_failed = {}
    for name in PROGRAMS:
        include = progs / "slim-headers" / name
        include.mkdir(parents=True)
        run([canonbtf, "dump", "--format", "c", kernel.vmlinux, "--types-from",
             full / f"{name}.bpf.o", "-o", include / "vmlinux.h"])
        (progs / "slim").mkdir(exist_ok=True)
        proc = clang_bpf(HERE / "progs" / f"{name}.bpf.c", include,
                         progs / "slim" / f"{name}.bpf.o")
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if "error:" in line]
            first = errors[0] if errors else proc.stderr[:200]
            slim_failed[name] = f"{len(errors)} errors, first: {first}"
    report.check("slim headers compile", not slim_failed,
                 f"{len(PROGRAMS) - len(slim_failed)}/{len(PROGRAMS)}" + "".join(
                     f"; {name}: {why}" for name, why in slim_failed.items()))
    return progs, slim_failed


def text_functions(elf: Path) -> dict[str, set[int]]:
    """STT_FUNC symbols of `elf` by name up to the first '.' (pieces of one function,
    .cold and .part, left out): name -> addresses. How pahole 1.31 groups them."""
    out = run(["readelf", "-sW", elf]).stdout
    functions: dict[str, set[int]] = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) < 8 or cols[3] != "FUNC" or cols[6] in ("UND", "ABS"):
            continue
        name = cols[7]
        if ".cold" in name or ".part" in name:
            continue
        functions.setdefault(name.split(".")[0], set()).add(int(cols[1], 16))
    return functions


def btf_function_names(btf_file: Path) -> set[str]:
    out = run(["bpftool", "btf", "dump", "file", btf_file, "format", "raw"]).stdout
    return set(re.findall(r"^\[\d+\] FUNC '([^']+)'", out, re.M))


def choose_ambiguous(kernel: Kernel, work: Path) -> tuple[str, bool]:
    """A function name with several text addresses in this vmlinux to which pahole 1.24
    (which knows no such rule) gives a FUNC: a name an encoder must leave without one.
    Returns it and whether canonbtf's BTF of this vmlinux has a FUNC for it."""
    several = {name for name, at in text_functions(kernel.vmlinux).items() if len(at) > 1}
    naive = work / "vmlinux.pahole-1.24.btf"
    run([PAHOLE_124, f"--btf_encode_detached={naive}", kernel.vmlinux])
    candidates = sorted(several & btf_function_names(naive))
    if not candidates:
        raise JobError("no function name with several text addresses has a FUNC in "
                       "pahole 1.24's BTF of this vmlinux: nothing to test fentry on")
    ours = work / "vmlinux.btf"
    run(["objcopy", "--dump-section", f".BTF={ours}", kernel.vmlinux, "/dev/null"])
    name = candidates[0]
    return name, name in btf_function_names(ours)


def encoder_leaves_out_ambiguous(tools: dict[str, str], work: Path) -> bool:
    """Whether this canonbtf gives no FUNC to a name with several addresses (issue 31,
    branch `funcs`): two static functions of one name in two units of a small program,
    encoded by `canonbtf encode`. Until that rule exists the kernel check only reports."""
    probe = work / "ambiguity-probe"
    probe.mkdir(parents=True, exist_ok=True)
    body = ("static __attribute__((noinline, used)) int twice_named(int *p) "
            "{{ return *p {}; }}\nint from_{}(int *p) {{ return twice_named(p); }}\n")
    (probe / "a.c").write_text(body.format("+ 1", "a"))
    (probe / "b.c").write_text(body.format("* 3", "b") + "int from_a(int *p);\n"
                               "int main(void) { int x = 1; return from_a(&x) + from_b(&x); }\n")
    run(["gcc", "-g", "-O2", probe / "a.c", probe / "b.c", "-o", probe / "probe"])
    run([tools["canonbtf"], "encode", "-j1", probe / "probe", "-o", probe / "probe.btf"])
    return "twice_named" not in btf_function_names(probe / "probe.btf")


# --- the guest --------------------------------------------------------------------

def shared_libraries(binary: str) -> list[Path]:
    """The shared libraries `binary` needs, its ELF interpreter included (ldd)."""
    out = run(["ldd", binary]).stdout
    return [Path(p) for p in re.findall(r"(/\S+) \(0x", out)]


def module_name(ko: Path) -> str:
    return ko.name[:-3].replace("-", "_")


def stage_root(kernel: Kernel, work: Path, progs: Path) -> Path:
    """The initramfs's tree: busybox, bpftool, the modules, /init and /e2e."""
    root = work / "initramfs"
    shutil.rmtree(root, ignore_errors=True)
    for sub in ("bin", "sbin", "usr/sbin", "dev", "proc", "sys", "tmp", "e2e/btf"):
        (root / sub).mkdir(parents=True)
    kernel.make("modules_install", f"INSTALL_MOD_PATH={root}")
    shutil.copy(BUSYBOX, root / "bin" / "busybox")
    bpftool = kernel.tools["bpftool"]
    for path in [Path(bpftool), *shared_libraries(bpftool)]:
        target = root / str(path).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)  # follows symlinks: the library's bytes at its name
    shutil.copy(HERE / "init", root / "init")
    (root / "e2e" / "modules").write_text("\n".join(MODULES) + "\n")
    for elf, name in [(kernel.vmlinux, "vmlinux"),
                      *((ko, module_name(ko)) for ko in kernel.modules())]:
        run(["objcopy", "--dump-section", f".BTF={root / 'e2e' / 'btf' / (name + '.btf')}",
             elf, "/dev/null"])
    for variant in ("full", "slim"):
        (root / "e2e" / "progs" / variant).mkdir(parents=True)
        for obj in (progs / variant).glob("*.bpf.o"):
            shutil.copy(obj, root / "e2e" / "progs" / variant / obj.name)
    return root


def initramfs(kernel: Kernel, root: Path, work: Path) -> Path:
    """An uncompressed cpio of `root` by the kernel's own usr/gen_init_cpio, with
    /dev/console and busybox's applets as symlinks (no root rights needed)."""
    lines = ["nod /dev/console 0600 0 0 c 5 1"]
    for path in sorted(root.rglob("*")):
        name = "/" + str(path.relative_to(root))
        if path.is_symlink():
            lines.append(f"slink {name} {os.readlink(path)} 0777 0 0")
            continue
        mode = oct(path.stat().st_mode & 0o777)[2:]
        if path.is_dir():
            lines.append(f"dir {name} {mode} 0 0")
        else:
            lines.append(f"file {name} {path} {mode} 0 0")
    applets = run([BUSYBOX, "--list"]).stdout.split()
    lines += [f"slink /bin/{a} busybox 0777 0 0" for a in applets if a != "busybox"]
    lines.append("slink /sbin/modprobe /bin/busybox 0777 0 0")
    spec = work / "initramfs.list"
    spec.write_text("\n".join(lines) + "\n")
    cpio = work / "initramfs.cpio"
    with open(cpio, "wb") as out:
        subprocess.run([kernel.tree / "usr" / "gen_init_cpio", spec], stdout=out, check=True)
    return cpio


def accelerators(choice: str) -> list[str]:
    """KVM when asked or when /dev/kvm can be opened, TCG otherwise."""
    if choice == "tcg" or (choice == "auto" and not os.access("/dev/kvm", os.R_OK | os.W_OK)):
        return ["tcg"]
    return ["kvm", "tcg"] if choice == "auto" else ["kvm"]


def boot(kernel: Kernel, cpio: Path, work: Path, accel: str, timeout: float
         ) -> tuple[str, str, float]:
    """qemu until the guest's reboot ends it: (serial output, accelerator, seconds).
    With KVM first, a guest that does not finish is booted again under TCG."""
    tried = accelerators(accel)
    for name in tried:
        serial = work / f"serial-{name}.log"
        serial.unlink(missing_ok=True)
        argv = ["qemu-system-x86_64", "-accel", name, "-m", "512M", "-smp", "1",
                "-nodefaults", "-display", "none", "-no-reboot",
                "-serial", f"file:{serial}",
                "-kernel", kernel.tree / "arch" / "x86" / "boot" / "bzImage",
                "-initrd", cpio, "-append", "console=ttyS0 panic=-1 loglevel=4"]
        start = time.monotonic()
        say(f"booting under {name} (serial log {serial})")
        # Under KVM the kernel's first line comes within a second or two; nested KVM
        # that hangs says nothing at all, and TCG is tried at once.
        problem = run_qemu(argv, serial, timeout, KVM_SILENCE if name == "kvm" else None)
        took = time.monotonic() - start
        text = serial.read_text(errors="replace") if serial.exists() else ""
        if "E2E-DONE" in text or name == tried[-1]:
            return text, name + (f" ({problem})" if problem else ""), took
        say(f"{name}: the guest did not finish ({problem or 'no E2E-DONE'}); "
            f"booting under {tried[-1]}")
    return "", "none", 0.0


KVM_SILENCE = 60.0  # seconds without a byte on the serial port before KVM is given up


def run_qemu(argv: list, serial: Path, timeout: float, silence: float | None) -> str:
    """Run qemu until it exits; kill it after `timeout` s, or after `silence` s with
    nothing on the serial port. Returns what went wrong, or ""."""
    errors = serial.with_suffix(".stderr")
    with open(errors, "w") as err:
        proc = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
        start = time.monotonic()
        while proc.poll() is None:
            elapsed = time.monotonic() - start
            quiet = not serial.exists() or serial.stat().st_size == 0
            if elapsed > timeout or (silence is not None and quiet and elapsed > silence):
                proc.kill()
                proc.wait()
                return f"killed after {elapsed:.0f} s" + (", no output" if quiet else "")
            try:
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
    message = errors.read_text(errors="replace").strip()
    return f"exit {proc.returncode}: {message[-300:]}" if proc.returncode else ""


# --- what the guest said ----------------------------------------------------------

@dataclass
class Step:
    """One command the guest's /init ran: its exit status and output lines."""

    status: int
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def guest_steps(serial: str) -> dict[str, Step]:
    """The steps between E2E-BEGIN / E2E-END markers in the serial output."""
    steps: dict[str, Step] = {}
    current, lines = None, []
    for line in serial.replace("\r", "").splitlines():
        begin = re.search(r"E2E-BEGIN (\S+)$", line)
        end = re.search(r"E2E-END (\S+) (\d+)$", line)
        if begin:
            current, lines = begin.group(1), []
        elif end and end.group(1) == current:
            steps[current] = Step(int(end.group(2)), lines)
            current = None
        elif current is not None:
            lines.append(line)
    return steps


@dataclass
class Relocation:
    """A CO-RE field offset libbpf patched: struct, member path, patched value."""

    variant: str  # "full" or "slim": the header the program was compiled against
    program: str
    struct: str
    path: tuple[str, ...]
    offset: int


# libbpf (1.1): "prog 'P': relo #N: <byte_off> [ID] struct S.a.b (0:1:2 @ offset 12)"
# for the local spec and "... matching candidate #K <byte_off> [ID] struct S.a.b (...)"
# for each target it matched, then "... patched insn #I (ALU/ALU64) imm 12 -> 12".
RELO_SPEC = re.compile(r"prog '(\w+)': relo #(\d+): (?:matching candidate #\d+ )?"
                       r"<byte_off> \[\d+\] (?:struct|union) (\w+)((?:\.\w+)+) "
                       r"\([\d:]+ @ offset (\d+)\)")
RELO_PATCHED = re.compile(r"prog '(\w+)': relo #(\d+): patched insn #\d+ \([^)]*\) "
                          r"(?:imm|off) (\d+) -> (\d+)")


def relocations(log: str, variant: str) -> tuple[list[Relocation], list[str]]:
    """Every byte_off relocation in a libbpf debug log, with the value libbpf wrote into
    the instruction; and the inconsistencies (a target spec whose offset is not the
    value patched)."""
    specs: dict[tuple[str, int], tuple[str, tuple[str, ...], int]] = {}
    found, problems = [], []
    for line in log.splitlines():
        spec = RELO_SPEC.search(line)
        if spec:
            prog, index, struct, path, offset = spec.groups()
            specs[(prog, int(index))] = (struct, tuple(path[1:].split(".")), int(offset))
            continue
        patched = RELO_PATCHED.search(line)
        if patched and (patched.group(1), int(patched.group(2))) in specs:
            struct, path, offset = specs.pop((patched.group(1), int(patched.group(2))))
            value = int(patched.group(4))
            if value != offset:
                problems.append(f"{struct}.{'.'.join(path)}: spec offset {offset}, "
                                f"patched {value}")
            found.append(Relocation(variant, patched.group(1), struct, path, value))
    return found, problems


# --- DWARF, read by pahole ---------------------------------------------------------

@dataclass
class Member:
    """One member line of `pahole -C`: nesting depth, name, struct type, offset."""

    depth: int
    name: str
    struct: str | None
    offset: int


MEMBER_LINE = re.compile(r"^(\t+)([^\t].*?);\s*/\*\s*(\d+)(?::\s*\d+)?\s+\d+\s*\*/")


def member(line: str) -> Member | None:
    """A pahole member line -> Member; None for other lines (comments, braces)."""
    match = MEMBER_LINE.match(line)
    if not match or match.group(2).startswith("}"):
        return None
    decl = re.sub(r"\s*__attribute__\(\(.*\)\)$", "", match.group(2))
    decl = re.sub(r"\s*:\s*\d+$", "", decl)  # a bit-field's width
    pointer = re.search(r"\(\*\s*(\w+)\)", decl)
    name = pointer.group(1) if pointer else re.sub(r"(\[\d*\])+$", "", decl).split()[-1]
    struct = re.fullmatch(r"(?:struct|union) (\w+)\s+\w+", decl)
    return Member(len(match.group(1)), name.lstrip("*"), struct and struct.group(1),
                  int(match.group(3)))


def dwarf_layouts(vmlinux: Path, names: set[str]) -> dict[str, list[Member]]:
    """Each struct or union of `names` as pahole reads it from the DWARF of vmlinux."""
    out = run([PAHOLE_124, "-F", "dwarf", "-C", ",".join(sorted(names)), vmlinux]).stdout
    layouts: dict[str, list[Member]] = {}
    current = None
    for line in out.splitlines():
        head = re.match(r"^(?:struct|union) (\w+) \{", line)
        if head:
            current = layouts.setdefault(head.group(1), [])
        elif current is not None and line.startswith("};"):
            current = None
        elif current is not None:
            found = member(line)
            if found:
                current.append(found)
    return layouts


def dwarf_offsets(vmlinux: Path, wanted: list[tuple[str, tuple[str, ...]]]
                  ) -> dict[tuple[str, tuple[str, ...]], int | None]:
    """The byte offset DWARF gives each (struct, member path); None where the path is
    not found. A path's later members are looked up in the struct type of the one
    before; pahole prints members of anonymous unions/structs with their offset in the
    outer struct, so a member not at the top level is searched one level deeper too."""
    layouts: dict[str, list[Member]] = {}
    results: dict[tuple[str, tuple[str, ...]], int | None] = {}
    for depth in range(max((len(path) for _, path in wanted), default=0)):
        names = set()
        for struct, path in wanted:
            cursor = walk(layouts, struct, path[:depth])
            if cursor is not None and cursor[0] is not None and cursor[0] not in layouts:
                names.add(cursor[0])
        if names:
            layouts.update(dwarf_layouts(vmlinux, names))
    for struct, path in wanted:
        end = walk(layouts, struct, path)
        results[(struct, path)] = end[1] if end else None
    return results


def walk(layouts: dict[str, list[Member]], struct: str, path: tuple[str, ...]
         ) -> tuple[str | None, int] | None:
    """(struct type of the last member, offset so far) along `path` from `struct`."""
    offset, current = 0, struct
    for name in path:
        members = layouts.get(current or "")
        if members is None:
            return None
        found = ([m for m in members if m.depth == 1 and m.name == name]
                 or [m for m in members if m.name == name])
        if not found:
            return None
        offset += found[0].offset
        current = found[0].struct
    return current, offset


# --- judging the guest's results --------------------------------------------------

# The kernel's own words when vmlinux or module BTF is bad (kernel/bpf/btf.c, log.c:
# "BPF: " is its BTF verifier's log), and any other BTF line that says something failed.
BTF_ERROR = re.compile(r"(^|\] )BPF: |failed to validate module|module BTF mismatch"
                       r"|failed to register module \[|missing (vmlinux|module) BTF"
                       r"|btf_vmlinux is malformed|BTF.*(fail|error|invalid)", re.I)


def judge_modules(steps: dict[str, Step], kernel: Kernel, report: Report) -> None:
    """Every module loaded, /sys/kernel/btf lists it, each file equals the .BTF bytes."""
    loaded = [m for m in MODULES if steps.get(f"modprobe:{m}", Step(1, [])).status == 0]
    report.check("modprobe", len(loaded) == len(MODULES),
                 f"{len(loaded)}/{len(MODULES)}: " + " ".join(
                     m if m in loaded else f"{m} FAILED "
                     f"({steps.get(f'modprobe:{m}', Step(1, ['no result'])).text[-200:]})"
                     for m in MODULES))
    listed = steps.get("btf-list", Step(1, [])).text.split()
    missing = [m for m in MODULES if m not in listed] + (["vmlinux"] if "vmlinux" not in
                                                          listed else [])
    equal = [n for n in listed if steps.get(f"btf-cmp:{n}", Step(1, [])).status == 0]
    report.check("/sys/kernel/btf", not missing and len(equal) == len(listed) > 0,
                 f"{len(listed)} files ({' '.join(listed)}), {len(equal)} equal to the "
                 f".BTF of their ELF" + (f"; missing: {' '.join(missing)}" if missing else "")
                 + "".join(f"; {n}: {steps[f'btf-cmp:{n}'].text}" for n in listed
                           if n not in equal and f"btf-cmp:{n}" in steps))
    report.parts.append(f"{len(loaded)} modules, btf files {len(equal)}/{len(listed)} == .BTF")


def judge_programs(steps: dict[str, Step], slim_failed: dict[str, str], report: Report
                   ) -> list[Relocation]:
    """Every program loaded, full and slim; their relocations, for the DWARF check."""
    relos: list[Relocation] = []
    for name in PROGRAMS:
        step = steps.get(f"load:full:{name}", Step(1, ["no result"]))
        report.check(f"load {name}", step.status == 0,
                     "" if step.status == 0 else last_lines(step))
        found, problems = relocations(step.text, "full")
        report.check(f"relocations {name}", not problems, f"{len(found)} field offsets"
                     + "".join(f"; {p}" for p in problems))
        relos += found
    loaded_slim = 0
    for name in PROGRAMS:
        step = steps.get(f"load:slim:{name}")
        if name in slim_failed:
            report.check(f"slim {name}", False, "did not compile: " + slim_failed[name])
        elif report.check(f"slim {name}", step is not None and step.status == 0,
                          "" if step and step.status == 0 else last_lines(step)):
            loaded_slim += 1
            relos += relocations(step.text, "slim")[0]
    report.parts.append(", ".join(
        f"{n} {'ok' if steps.get(f'load:full:{n}', Step(1, [])).status == 0 else 'FAIL'}"
        for n in PROGRAMS[1:]))
    report.parts.append(f"slim {loaded_slim}/{len(PROGRAMS)}")
    return relos


def last_lines(step: Step | None, count: int = 6) -> str:
    if step is None:
        return "no result from the guest"
    lines = [line for line in step.lines if line.strip()]
    return f"exit {step.status}: " + " | ".join(lines[-count:])


def judge_offsets(kernel: Kernel, steps: dict[str, Step], relos: list[Relocation],
                  report: Report) -> None:
    """Every patched field offset equals DWARF's; core_offsets' also in its code."""
    wanted = sorted({(r.struct, r.path) for r in relos})
    dwarf = dwarf_offsets(kernel.vmlinux, wanted)
    wrong = [f"{r.program}: {r.struct}.{'.'.join(r.path)} = {r.offset}, DWARF "
             f"{dwarf[(r.struct, r.path)]}" for r in relos
             if dwarf[(r.struct, r.path)] != r.offset]
    core = [r for r in relos if r.program == "core_offsets" and r.variant == "full"]
    source = (HERE / "progs" / "core_offsets.bpf.c").read_text()
    expected = len(re.findall(r"bpf_core_field_offset\(", source))
    xlated = steps.get("xlated:full:core_offsets", Step(1, [])).text
    immediates = {int(v) for v in re.findall(r"\br\d+ = (\d+)$", xlated, re.M)}
    absent = sorted({r.offset for r in core} - immediates)
    ok = not wrong and len(core) == expected and not absent
    report.check("CO-RE offsets == DWARF", ok,
                 f"{len(relos) - len(wrong)}/{len(relos)} relocations, full and slim "
                 f"({len(wanted)} distinct fields; core_offsets {len(core)}, want "
                 f"{expected})" + "".join(f"; {w}" for w in wrong)
                 + (f"; not in core_offsets' translated code: {absent}" if absent else ""))
    report.parts.append(f"core offsets {len(relos) - len(wrong)}/{len(relos)} == DWARF")


def judge_ambiguous(steps: dict[str, Step], name: str, has_func: bool, landed: bool,
                    report: Report) -> None:
    """fentry on a name with several addresses: no FUNC, and the load refused cleanly.
    A hard failure only once canonbtf leaves such names out (issue 31)."""
    step = steps.get(f"load:full:{AMBIGUOUS_PROGRAM}")
    refused = step is not None and step.status != 0
    # Cleanly: libbpf finds no BTF target for the name (-ESRCH), nothing else went wrong.
    clean = refused and any(f"failed to find kernel BTF type ID of '{name}'" in line
                            for line in step.lines)
    verdict = ("ambiguous FUNC present" if has_func else "no FUNC") + (
        ", load refused" if clean else ", load accepted" if step and not refused
        else ", load failed otherwise")
    detail = f"'{name}': {verdict}" + ("" if landed else
                                       " (canonbtf keeps such FUNCs yet: reported only)")
    if landed:
        report.check("fentry ambiguous", not has_func and clean,
                     detail + ("" if clean else f"; {last_lines(step)}"))
    else:
        say(f"fentry ambiguous: {detail}")
    report.parts.append(f"ambiguous '{name}' {verdict}" + ("" if landed else " (report)"))


def judge_dmesg(steps: dict[str, Step], report: Report) -> None:
    """No BTF or module-BTF error in the kernel log."""
    log = steps.get("dmesg", Step(1, []))
    errors = [line for line in log.lines if BTF_ERROR.search(line)]
    report.check("dmesg", log.status == 0 and not errors,
                 "no BTF error" if not errors else " | ".join(errors[:5]))


# --- the whole run ----------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path,
                   default=Path(os.environ.get("TMPDIR", "/tmp")) / "canonbtf-kernel-e2e",
                   help="work directory: source tree, logs, initramfs (default "
                        "$TMPDIR/canonbtf-kernel-e2e)")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                   help="make -j of the first build (default: the CPU count)")
    p.add_argument("--reuse-build", action="store_true",
                   help="keep the tree already built in --work (no unpack, configure or "
                        "first build; its build.log is the one timed)")
    p.add_argument("--relink", action=argparse.BooleanOptionalAction, default=True,
                   help="relink at -j1 and -j2 and compare (default on)")
    p.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto",
                   help="qemu accelerator (auto: KVM where /dev/kvm opens and the guest "
                        "finishes, else TCG)")
    p.add_argument("--timeout", type=float, default=1200,
                   help="seconds before a guest that never ends is killed (a safety net)")
    p.add_argument("--times", action=argparse.BooleanOptionalAction, default=True,
                   help="time the build's BTF steps with tools/btf_steps.py (default on)")
    return p.parse_args(argv)


def build_stage(args: argparse.Namespace, tools: dict[str, str], report: Report) -> Kernel:
    if args.reuse_build:
        kernel = Kernel(args.work / "linux-source-6.12", tools, args.jobs)
        if not kernel.vmlinux.exists():
            raise JobError(f"--reuse-build: no vmlinux in {kernel.tree}")
        report.parts.append("build reused")
    else:
        kernel = unpack_and_configure(args.work, tools, args.jobs, report)
        build(kernel, args.work, report)
    if args.relink:
        relink(kernel, args.work, report, with_first=not args.reuse_build)
    return kernel


def guest_stage(args: argparse.Namespace, kernel: Kernel, report: Report) -> None:
    ambiguous, has_func = choose_ambiguous(kernel, args.work)
    landed = encoder_leaves_out_ambiguous(kernel.tools, args.work)
    progs, slim_failed = compile_programs(kernel, args.work, ambiguous, report)
    cpio = initramfs(kernel, stage_root(kernel, args.work, progs), args.work)
    serial, accel, took = boot(kernel, cpio, args.work, args.accel, args.timeout)
    steps = guest_steps(serial)
    finished = "E2E-DONE" in serial
    report.check("boot", finished, f"{accel}, {took:.0f} s, {len(steps)} steps"
                 + ("" if finished else "; serial tail: "
                    + " | ".join(serial.replace("\r", "").splitlines()[-8:])))
    report.parts.append(f"boot {accel.split()[0]} {took:.0f}s")
    uname = steps.get("uname", Step(1, [])).text.strip()
    report.check("guest kernel", uname == kernel.release(), uname or "no uname")
    judge_modules(steps, kernel, report)
    offsets_at = len(report.parts)
    relos = judge_programs(steps, slim_failed, report)
    judge_offsets(kernel, steps, relos, report)
    report.parts.insert(offsets_at, report.parts.pop())  # the summary's order
    judge_ambiguous(steps, ambiguous, has_func, landed, report)
    judge_dmesg(steps, report)


def times_stage(args: argparse.Namespace, kernel: Kernel, report: Report) -> None:
    """tools/btf_steps.py on the first build's V=1 log (timing figures, never judged)."""
    tool = REPO / "tools" / "btf_steps.py"
    log = args.work / "build.log"
    if not tool.exists() or not log.exists():
        say(f"times: skipped ({'no ' + str(tool) if not tool.exists() else 'no build log'})")
        return
    say(f"times: {tool.name} --log {log} --tree {kernel.tree} (load: "
        f"{os.getloadavg()[0]:.1f})")
    # The build's environment: Kbuild's flags depend on KBUILD_BUILD_TIMESTAMP.
    proc = run([sys.executable, tool, "--log", log, "--tree", kernel.tree, "--canonbtf",
                kernel.tools["canonbtf-pahole"]], env=BUILD_IDENTITY, check=False)
    print(proc.stdout, end="", flush=True)
    ratios = [line for line in proc.stdout.splitlines() if " ratios (wall): " in line]
    if proc.returncode == 0 and ratios:
        ours = re.findall(r"(vmlinux|\d+ modules) canonbtf: ([\d.]+x) 1\.31, ([\d.]+x) 1\.24",
                          ratios[-1])
        report.parts.append("BTF steps (wall, last run): " + ", ".join(
            f"{what} {to_131} of 1.31, {to_124} of 1.24" for what, to_131, to_124 in ours))
    else:
        say(f"times: tools/btf_steps.py failed (exit {proc.returncode}): "
            f"{proc.stderr.strip()[-500:]}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.work = args.work.resolve()
    report = Report()
    start = time.monotonic()
    try:
        tools = need_tools()
        kernel = build_stage(args, tools, report)
        guest_stage(args, kernel, report)
        if args.times:
            times_stage(args, kernel, report)
    except JobError as e:
        report.parts.append(f"could not finish: {e}")
        print(f"kernel_e2e: ERROR {', '.join(report.parts)}", flush=True)
        return 2
    report.parts.append(f"total {minutes(time.monotonic() - start)}")
    print(report.summary(), flush=True)
    return 0 if not report.failures else 1


if __name__ == "__main__":
    sys.exit(main())
