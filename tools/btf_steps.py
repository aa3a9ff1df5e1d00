#!/usr/bin/env python3
"""Time a kernel build's BTF steps through canonbtf-pahole, pahole 1.24 and pahole 1.31.

    python3 tools/btf_steps.py --log BUILD.log --tree BUILD_DIR [--runs 2]
    python3 tools/btf_steps.py --base VMLINUX [--scripts KBUILD_SCRIPTS] MOD.ko... [--runs 2]

With `--log`, the steps are the build's own: every pahole command line of a `make V=1`
log (vmlinux's `-J` from link-vmlinux.sh's trace, each module's `-J --btf_base vmlinux`
from Makefile.modfinal), run in BUILD_DIR. With `--base`, each module gets the line
Makefile.modfinal gives it (`-J $(PAHOLE_FLAGS) --btf_base vmlinux MOD.ko`).

Every tool gets the flags Kbuild itself picks for its version: the build tree's (or
`--scripts`') Kbuild.include, pahole-version.sh and Makefile.btf (6.2 and later) or
pahole-flags.sh (6.1 and older) are run with PAHOLE set to that tool, so pahole 1.24 gets
its legacy flags and 1.31 and canonbtf-pahole (which reports 1.29) `--btf_features`.
The log's own flags must be what Kbuild picks for canonbtf-pahole, or the tool stops.

Each command runs on a fresh copy of its target with `.BTF` and `.BTF.base` removed (as
before the build's step), in a directory whose `vmlinux` is the base, so `-J` never
touches the build. canonbtf-pahole runs twice per step: with a cache directory of its own
(warmed by one untimed module first, as every module after a build's first finds it) and
as Debian's sbuild runs it ("sbuild"), with HOME a directory that does not exist,
XDG_CACHE_HOME unset and a TMPDIR new for each run (the first module of a run makes the
cache there: canon/cachefiles.py's private temporary directory). Beside them runs the
floor of a module's run: the interpreter of canonbtf-pahole importing what that untimed
module's run imported (read from `-X importtime`) and doing nothing else. Each run
prints every step's wall time, then the sums, the smallest module and the ratios to
pahole 1.24 and 1.31 of the same run.
Exit status 0, or 2 when a tool fails or a log has no pahole step.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAHOLE_131 = REPO.parent / "shared" / "tools" / "pahole-1.31"
KBUILD_61_SCRIPTS = Path("/usr/lib/linux-kbuild-6.1/scripts")
# One command of a Kbuild log: `[+ ][LLVM_OBJCOPY=...] PAHOLE -J ... TARGET` up to `;`.
PAHOLE_CALL = re.compile(r"(?:^|[\s;])(?:LLVM_OBJCOPY=\S+\s+)?(\S*pahole\S*)\s+(-J\s[^;\n]*)")
FLAGS_MK = """\
include $(SCRIPTS)/Kbuild.include
CONFIG_PAHOLE_VERSION := $(shell $(SCRIPTS)/pahole-version.sh $(PAHOLE))
CONFIG_PAHOLE_HAS_LANG_EXCLUDE := $(shell [ $(CONFIG_PAHOLE_VERSION) -ge 124 ] && echo y)
include $(SCRIPTS)/Makefile.btf
print:
\t@echo '$(PAHOLE_FLAGS)'
\t@echo '$(MODULE_PAHOLE_FLAGS)'
"""


@dataclass(frozen=True)
class Step:
    """One BTF step: its target (relative to `where`) and whether it is a module's."""

    target: str
    where: Path
    base: Path | None

    @property
    def name(self) -> str:
        return "vmlinux" if self.base is None else Path(self.target).name


@dataclass
class Tool:
    """A pahole under test: its label, its command, Kbuild's flags for it, its env."""

    label: str
    argv0: str
    vmlinux_flags: list[str]
    module_flags: list[str]
    env: dict[str, str]
    fixed: list[str] | None = None  # the same command for every step (the floor)

    def argv(self, step: Step) -> list[str]:
        if self.fixed is not None:
            return self.fixed
        if step.base is None:
            return [self.argv0, "-J", *self.vmlinux_flags, step.target]
        return [self.argv0, "-J", *self.module_flags, "--btf_base", "vmlinux", step.target]


def fail(message: str) -> None:
    print(f"btf_steps: {message}", file=sys.stderr)
    sys.exit(2)


def kbuild_flags(scripts: Path, pahole: str, workdir: Path) -> tuple[list[str], list[str]]:
    """(PAHOLE_FLAGS, PAHOLE_FLAGS + MODULE_PAHOLE_FLAGS) as Kbuild picks them for `pahole`."""
    env = {**os.environ, "PAHOLE": pahole}
    if (scripts / "Makefile.btf").exists():
        (workdir / "flags.mk").write_text(FLAGS_MK)
        out = subprocess.run(["make", "-s", "-f", "flags.mk", f"SCRIPTS={scripts}",
                              f"PAHOLE={pahole}", "print"], cwd=workdir, env=env,
                             capture_output=True, text=True)
        lines = out.stdout.splitlines()
        if out.returncode != 0 or len(lines) != 2:
            fail(f"{scripts}/Makefile.btf: no flags for {pahole}: {out.stderr.strip()}")
        vmlinux = lines[0].split()
        return vmlinux, vmlinux + lines[1].split()
    flags_sh = scripts / "pahole-flags.sh"
    if not flags_sh.exists():
        fail(f"{scripts}: neither Makefile.btf nor pahole-flags.sh (not Kbuild's scripts?)")
    out = subprocess.run([str(flags_sh)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{flags_sh}: {out.stderr.strip()}")
    return out.stdout.split(), out.stdout.split()


def steps_from_log(log: Path, tree: Path) -> tuple[list[Step], list[tuple[bool, list[str]]]]:
    """The log's pahole steps, and each one's flags (whether it is vmlinux's; a check)."""
    steps, seen_flags = [], []
    for line in log.read_text(errors="replace").splitlines():
        match = PAHOLE_CALL.search(line)
        if match is None:
            continue
        args = shlex.split(match.group(2))[1:]
        if "--btf_base" in args:
            at = args.index("--btf_base")
            flags, target = args[:at], args[at + 2]
            steps.append(Step(target, tree, (tree / args[at + 1]).resolve()))
        else:
            flags, target = args[:-1], args[-1]
            steps.append(Step(target, tree, None))
        seen_flags.append((steps[-1].base is None, flags))
    if not steps:
        fail(f"{log}: no pahole -J command (was the build run with V=1?)")
    return steps, seen_flags


def pristine_copy(step: Step, store: Path) -> Path:
    """The step's target as the build had it before pahole: `.BTF*` removed."""
    copy = store / f"{len(list(store.iterdir()))}-{Path(step.target).name}"
    result = subprocess.run(["objcopy", "--remove-section=.BTF", "--remove-section=.BTF.base",
                             str(step.where / step.target), str(copy)], capture_output=True,
                            text=True)
    if result.returncode != 0:
        fail(f"{step.where / step.target}: objcopy: {result.stderr.strip()}")
    return copy


def stage(step: Step, pristine: Path, scratch: Path) -> None:
    """`scratch` as the step's directory: a fresh copy of its target, and the base."""
    if scratch.exists():
        shutil.rmtree(scratch)
    (scratch / Path(step.target).parent).mkdir(parents=True)
    shutil.copyfile(pristine, scratch / step.target)
    if step.base is not None:
        (scratch / "vmlinux").symlink_to(step.base)


def run_step(tool: Tool, step: Step, pristine: Path, scratch: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `tool` doing `step` on a fresh copy of its target."""
    stage(step, pristine, scratch)
    start = time.perf_counter()
    proc = subprocess.Popen(tool.argv(step), cwd=scratch, env=tool.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace").strip()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        fail(f"{tool.label} on {step.target} failed: {err.splitlines()[-1:] or status}")
    return wall, usage.ru_utime + usage.ru_stime


def floor_tool(ours: Tool, step: Step, pristine: Path, scratch: Path) -> Tool:
    """The interpreter of `ours` importing what its run of module `step` imports, and
    nothing else: what any module's run costs before its work begins. That run, untimed,
    also fills `ours`' cache."""
    with open(ours.argv0, "rb") as script:
        first = script.readline()
    if not first.startswith(b"#!"):
        fail(f"{ours.argv0}: not a script with an interpreter line")
    python = first[2:].decode().split()
    stage(step, pristine, scratch)
    done = subprocess.run([*python, "-X", "importtime", *ours.argv(step)], cwd=scratch,
                          env=ours.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, errors="replace")
    if done.returncode != 0:
        fail(f"{ours.label} -X importtime on {step.target} failed: "
             f"{done.stderr.strip().splitlines()[-1:] or done.returncode}")
    names = [line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
             if line.startswith("import time:") and line.count("|") == 2]
    names = [n for n in names if all(part.isidentifier() for part in n.split("."))]
    names.reverse()  # a package before its parts
    return Tool("start+imports", python[0], [], [], ours.env,
                [*python, "-c", f"for name in {tuple(dict.fromkeys(names))}:\n"
                 "    try:\n        __import__(name)\n    except ImportError:\n        pass"])


def tool_env(work: Path, label: str) -> dict[str, str]:
    env = {**os.environ, "LLVM_OBJCOPY": "objcopy"}
    if label == "canonbtf":
        env["XDG_CACHE_HOME"] = str(work / "cache")
    elif label == "canonbtf sbuild":
        env.pop("XDG_CACHE_HOME", None)
        env["HOME"] = str(work / "no-such-home")
    return env


def make_tools(args: argparse.Namespace, scripts: Path, work: Path) -> list[Tool]:
    tools, flags = [], {}
    for label, program in (("canonbtf", args.canonbtf), ("canonbtf sbuild", args.canonbtf),
                           ("pahole 1.24", args.pahole124), ("pahole 1.31", args.pahole131)):
        path = shutil.which(program)
        if path is None:
            fail(f"{program}: not found")
        if path not in flags:  # the same program with and without a cache
            flags[path] = kbuild_flags(scripts, path, work)
        vmlinux, module = flags[path]
        tools.append(Tool(label, path, vmlinux, module, tool_env(work, label)))
    return tools


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x" if theirs > 0 else "-"


def report_run(number: int, steps: list[Step], tools: list[Tool],
               times: dict[tuple[str, int], tuple[float, float]], sizes: list[int]) -> None:
    width = max(len(s.name) for s in steps) + 2
    print(f"\nrun {number}: wall seconds" + "".join(f"{t.label:>19}" for t in tools))
    for i, step in enumerate(steps):
        cells = "".join(f"{times[t.label, i][0]:>19.3f}" if (t.label, i) in times
                        else f"{'-':>19}" for t in tools)
        print(f"  {step.name:<{width}}{sizes[i] / 1e6:>8.1f} MB{cells}")
    modules = [i for i, s in enumerate(steps) if s.base is not None]
    vmlinux = [i for i, s in enumerate(steps) if s.base is None]
    summary = []
    for title, chosen in (("vmlinux", vmlinux), (f"{len(modules)} modules", modules)):
        if not chosen:
            continue
        timed = [t for t in tools if all((t.label, i) in times for i in chosen)]
        wall = {t.label: sum(times[t.label, i][0] for i in chosen) for t in timed}
        cpu = {t.label: sum(times[t.label, i][1] for i in chosen) for t in timed}
        print(f"  {title} sum: wall " + ", ".join(f"{k} {v:.2f} s" for k, v in wall.items())
              + "; CPU " + ", ".join(f"{k} {v:.2f} s" for k, v in cpu.items()))
        for ours in ("canonbtf", "canonbtf sbuild", "start+imports"):
            if ours in wall:
                summary.append(f"{title} {ours}: {ratio(wall[ours], wall['pahole 1.31'])} "
                               f"1.31, {ratio(wall[ours], wall['pahole 1.24'])} 1.24")
    if modules:
        small = min(modules, key=lambda i: sizes[i])
        for ours in ("canonbtf", "canonbtf sbuild", "start+imports"):
            summary.append(f"smallest ({steps[small].name}) {ours}: "
                           f"{ratio(times[ours, small][0], times['pahole 1.31', small][0])} "
                           f"1.31, {ratio(times[ours, small][0], times['pahole 1.24', small][0])}"
                           " 1.24")
    print(f"run {number} ratios (wall): " + "; ".join(summary))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", type=Path, help="a `make V=1` log of a build with BTF")
    parser.add_argument("--tree", type=Path, help="that build's output directory")
    parser.add_argument("--base", type=Path, help="vmlinux (ELF with .BTF) for MODULES")
    parser.add_argument("modules", nargs="*", type=Path, help="modules (.ko), with --base")
    parser.add_argument("--scripts", type=Path,
                        help="Kbuild's scripts/ (default: the tree's, or linux-kbuild-6.1's)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--canonbtf", default="canonbtf-pahole")
    parser.add_argument("--pahole124", default="/usr/bin/pahole")
    parser.add_argument("--pahole131", default=str(PAHOLE_131))
    args = parser.parse_args()
    if (args.log is None) == (args.base is None):
        parser.error("give either --log LOG --tree DIR or --base VMLINUX MOD.ko...")
    with tempfile.TemporaryDirectory(prefix="btf-steps-") as tmp:
        work = Path(tmp)
        if args.log is not None:
            if args.tree is None:
                parser.error("--log needs --tree (the build's directory)")
            steps, seen = steps_from_log(args.log, args.tree.resolve())
            scripts = args.scripts or args.tree / "scripts"
        else:
            steps = [Step(m.name, m.resolve().parent, args.base.resolve())
                     for m in args.modules]
            seen, scripts = [], args.scripts or KBUILD_61_SCRIPTS
        tools = make_tools(args, scripts.resolve(), work)
        ours = tools[0]
        for is_vmlinux, flags in seen:
            want = ours.vmlinux_flags if is_vmlinux else ours.module_flags
            if flags != want:
                fail(f"{args.log}: flags {flags} are not what Kbuild picks for "
                     f"{ours.argv0} ({want}): was the build made with another PAHOLE?")
        (work / "pristine").mkdir()
        pristine = [pristine_copy(s, work / "pristine") for s in steps]
        sizes = [p.stat().st_size for p in pristine]
        modules = [i for i, s in enumerate(steps) if s.base is not None]
        if modules:  # its untimed run leaves the cache a build's first module leaves
            tools.append(floor_tool(ours, steps[modules[0]], pristine[modules[0]],
                                    work / "scratch"))
        print(f"btf_steps: {len(steps)} steps ({len(modules)} modules), Kbuild's flags:")
        for t in tools[1:]:
            if t.fixed is None:
                print(f"  {t.label}: {' '.join(t.argv(steps[modules[0] if modules else 0])[1:])}")
            else:
                print(f"  {t.label}: {t.fixed[0]} importing what a run on "
                      f"{steps[modules[0]].name} imported, and nothing else")
        for number in range(1, args.runs + 1):
            for t in tools:
                if t.label == "canonbtf sbuild":
                    t.env["TMPDIR"] = tempfile.mkdtemp(dir=work, prefix="tmpdir-")
            times = {}
            for i, step in enumerate(steps):
                order = tools[i % len(tools):] + tools[:i % len(tools)]
                for t in order:
                    if t.fixed is None or step.base is not None:  # the floor: modules'
                        times[t.label, i] = run_step(t, step, pristine[i], work / "scratch")
            report_run(number, steps, tools, times, sizes)


if __name__ == "__main__":
    main()
