#!/usr/bin/env python3
"""Every speed and memory target of issue 15 in one run, beside the reference tools.

    python3 tools/bench_all.py [--runs N] [--quick] [--scales 1 4 16]
    python3 tools/bench_all.py --kernel L=BTF ... [--dwarf L=VMLINUX ...] [--pair A:B ...]

Not a test: times depend on the machine, so each figure is printed as a ratio to a
reference tool (bpftool, pahole) measured in the same run, next to the absolute times.
Every command is a subprocess (`python3 -m canonbtf ...` with this checkout's package),
so interpreter start-up and imports count, as for a user. Inputs: the corpus vmlinux
BTFs of 6.1 and 6.12 (../shared/corpus, or $CANONBTF_SHARED/corpus).

Any other kernels (a generality run): `--kernel LABEL=PATH` (a .BTF section or
/sys/kernel/btf/vmlinux), repeated; `--dwarf LABEL=VMLINUX` gives a kernel's vmlinux with
DWARF, which pahole encodes for the sort ratios; `--pair OLD:NEW` (labels) adds a diff
measured beside bpftool's C dump of both, where a label ending in `~` is that kernel
renumbered (tests/shuffle.py: random ids and string order, the same types; written once).
With --kernel, the scaling runs only if --scales is given; --diff-only times the pairs only.

Fallbacks: every command runs with CANONBTF_FALLBACKS=1, so each fallback of a compiled
part to the pure reference prints a line on stderr (canonbtf/native/); the tables give
their count per command and kernel, and the summary every one found. On a real kernel a
fallback is a bug (the reference is slower), not a figure.

Targets (ours / reference of the same run; the kernels are named in the output):
- sort <= 0.1 x and sort --dedup <= 0.2 x `pahole -j2 --btf_encode_detached` of the same
  kernel. pahole needs the vmlinux with DWARF, which only exists for 6.1 (fetched by
  ../shared/tools/fetch-kernel-dbg; found and timed as tools/bench_encode.py does): 6.12
  gets absolute times only, and without the fetched kernel the sort ratios are skipped.
- read + write (reader.load, writer.write, the file written back) <= 2 x
  `bpftool btf dump file X format raw > /dev/null`; it must give the input's bytes.
- dump --format c <= 2 x bpftool's C dump, dump --format raw <= 1.5 x bpftool's raw dump
  (both write their text to a file; ours must equal bpftool's for raw).
- diff of 6.1 against 6.12 (or of each --pair) <= 1 x bpftool dumping both to C.
- check <= 0.3 s (absolute).
- memory: the peak RSS of each command (os.wait4) <= 5 x the BTF's size in memory
  + 150 MB, the size being the raw blob's (the input file's; for diff both files'),
  MB = 10^6 bytes. Linux starts a child's high-water mark at its parent's size, so this
  script keeps itself small (about 20 MB, the floor of every figure): BTF is read only
  in its child processes.

Scaling: every command also runs on BTF synthesised at 1 x, 4 x and 16 x the 6.1 vmlinux's
95,246 types: k renamed copies of its types in one BTF (copy 0 unchanged, so 1 x is the
corpus file byte for byte; copy i appends `__c<i>` to every non-empty name, its own type,
member, parameter and enumerator names, and refers to its own copy's types only). 16 x
is 1.52 M types, past BTF's largest type id (0xFFFFF, canonbtf/btf/format.py), and 72 MB,
past the kernel's 16 MB blob limit: the kernel would refuse it, but the type ids are
32-bit words in the format, and canonbtf's reader (its raw dump equals bpftool's) and
bpftool (libbpf) both read it, so the full 16 x is used rather than a smaller multiple;
`check` reports what crosses them as findings (exit status 1, expected): at 4 x the blob
size, at 16 x also every type id past the limit and every name offset past 16 MB, about
570 k lines (75 MB) that it prints to a file as part of its time, so its growth is
judged on more work than the other commands do. One BTF rather than split BTF layered
over a base, so that every command (check, read + write) sees the whole size. diff
compares each synthetic file with a variant of it: 10 structs spread over all copies lose
their last member, one INT is added.
Growth rule: for each command, t(16 x) / t(1 x) <= 1.25 x 16 ln(16 n) / ln(n) (n log n
with 25% tolerance; n = the 1 x type count, bound about 24.8), t being the whole
command's CPU time (user + system, start-up included): on a shared machine the load
moves wall times by a factor of two, CPU times far less (wall times and their growth are
printed beside). The growth exponents log(t2/t1) / log(k2/k1) are printed per step too
(1 is linear, n log n is just above 1). bpftool's raw and C dumps are timed at every
size as a reference, not judged. With --scales the largest over the smallest is judged.

Each run measures every command once, ours alternating with its reference so both see
the same load; ratios are per run. The summary gives each target's value in every run
and the best of them (best-of-N times, ours over reference; for memory the largest
peak); a target counts as met when every run meets it. `--quick`: the 6.1 kernel only
(diff still reads both) and the 1 x and 4 x sizes. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import compileall
import filecmp
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
import bench_encode  # noqa: E402
from benchlib import CORPUS, FETCHED_VMLINUX, REPO, canonbtf_argv, need  # noqa: E402

# This process stays small: a child's peak RSS as wait4 reports it starts from the size of
# the process that forked it (Linux carries the high-water mark across fork and exec), so
# reading BTF (synthesis, type counts) happens in child processes of this script, which
# imports canonbtf there only.
sys.path.insert(0, str(REPO))
if TYPE_CHECKING:
    from canonbtf.btf.model import Btf, Type

KERNELS = {"6.1": CORPUS / "vmlinux-6.1.0-56-cloud-amd64.btf",
           "6.12": CORPUS / "vmlinux-6.12.113-cloud-amd64.btf"}
MB = 1e6
MEMORY_FACTOR, MEMORY_EXTRA_MB = 5, 150
CHECK_SECONDS = 0.3
GROWTH_TOLERANCE = 1.25
VARIANT_CHANGES = 10
# What read + write means: canonbtf's reader and writer, the bytes written to a file.
READ_WRITE = ("import sys\nfrom canonbtf.btf import reader, writer\n"
              "data = writer.write(reader.load(sys.argv[1]))\n"
              "with open(sys.argv[2], 'wb') as fh:\n    fh.write(data)\n")
SCALED_COMMANDS = ("sort", "sort --dedup", "dump c", "dump raw", "diff", "check",
                   "read+write", "bpftool raw", "bpftool c")


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


FALLBACK_LINE = b"canonbtf: fallback: "
# Every child says when a compiled part falls back to the reference (native.FALLBACK_ENV).
CHILD_ENV = {**os.environ, "CANONBTF_FALLBACKS": "1"}
RENUMBERED = "~"  # a pair label's suffix: that kernel renumbered
RENUMBER_SEED = 11


@dataclass
class Measure:
    wall: float  # seconds
    cpu: float  # user + system seconds of the process
    peak: float  # peak RSS, MB
    fallbacks: int = 0  # lines of fallbacks to the reference on stderr


def run_once(argv: list[str], stdout: Path | None = None, ok: tuple = (0,)) -> Measure:
    """One run of `argv` in the checkout (so `-m canonbtf` is this one), stdout to a file.

    benchlib.run_measured would do but for the exit status: check and diff report
    findings with 1, which is expected here.
    """
    with open(stdout or os.devnull, "wb") as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=REPO, env=CHILD_ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        said = err.read()
        if proc.returncode not in ok:
            sys.exit(f"bench_all: {' '.join(argv)} failed (exit {proc.returncode}): "
                     f"{said.decode(errors='replace').strip()}")
    fallbacks = [line for line in said.splitlines() if line.startswith(FALLBACK_LINE)]
    for line in fallbacks:
        progress(f"  {line.decode(errors='replace')} ({' '.join(argv[-3:])})")
    return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024 / MB,
                   len(fallbacks))


def memory_limit(size: int) -> float:
    return MEMORY_FACTOR * size / MB + MEMORY_EXTRA_MB


@dataclass
class Target:
    """One promise and its value in each run: (ours, reference), reference 1 if absolute."""

    what: str
    kind: str  # "ratio", "seconds", "memory" (limit in MB) or "growth"
    limit: float
    values: list[tuple[float, float]] = field(default_factory=list)

    def show(self, ours: float, ref: float) -> str:
        value = ours / ref
        unit = {"ratio": "x", "growth": "x", "seconds": " s", "memory": " MB"}[self.kind]
        shown = f"{value:.0f}" if self.kind == "memory" else f"{value:.3g}"
        return f"{shown}{unit} {'met' if value <= self.limit else 'MISSED'}"

    def best(self) -> tuple[float, float]:
        if self.kind == "memory":
            return max(o for o, _ in self.values), 1.0
        return min(o for o, _ in self.values), min(r for _, r in self.values)


@dataclass
class Bench:
    args: argparse.Namespace
    tmp: Path
    bpftool: str
    pahole_note: str | None  # why the sort ratios are skipped, if they are
    kernels: dict[str, Path]
    sizes: dict[str, int]  # kernel or scale label -> BTF bytes
    types: dict[str, int]
    dwarf: dict[str, Path] = field(default_factory=dict)  # label -> vmlinux with DWARF
    pairs: list[tuple[str, str]] = field(default_factory=list)
    renumbered: dict[str, Path] = field(default_factory=dict)  # "label~" -> its file
    fallbacks: dict[str, list[int]] = field(default_factory=dict)  # "label command" -> per run
    scaled: dict[int, tuple[Path, Path]] = field(default_factory=dict)
    targets: dict[str, Target] = field(default_factory=dict)
    findings: dict[int, int] = field(default_factory=dict)  # check's lines per scale

    def record(self, what: str, kind: str, limit: float, ours: float, ref: float = 1.0) -> str:
        target = self.targets.setdefault(what, Target(what, kind, limit))
        target.values.append((ours, ref))
        return target.show(ours, ref)

    def path(self, label: str) -> Path:
        """A kernel's file, or for "label~" its renumbered copy."""
        return self.renumbered.get(label) or self.kernels[label]

    def count_fallbacks(self, what: str, m: Measure) -> None:
        self.fallbacks.setdefault(what, []).append(m.fallbacks)


def ours_argv(command: str, btf: Path, out: Path) -> tuple[list[str], Path | None, tuple]:
    """argv, stdout file and accepted exit statuses of one of our per-file commands."""
    if command.startswith("sort"):
        extra = ["--dedup"] if command == "sort --dedup" else []
        return canonbtf_argv("sort", *extra, str(btf), "-o", str(out)), None, (0,)
    if command.startswith("dump"):
        return canonbtf_argv("dump", str(btf), "--format", command.split()[1]), out, (0,)
    if command == "check":
        return canonbtf_argv("check", str(btf)), out, (0, 1)
    if command == "read+write":
        return [sys.executable, "-c", READ_WRITE, str(btf), str(out)], None, (0,)
    raise ValueError(command)


def bpftool_argv(bpftool: str, fmt: str, btf: Path) -> list[str]:
    return [bpftool, "btf", "dump", "file", str(btf), "format", fmt]


def time_pahole(tmp: Path, vmlinux: Path) -> Measure:
    """`pahole -j2 --btf_encode_detached` of a kernel with DWARF, as bench_encode runs it."""
    args = argparse.Namespace(jobs=[2], elf=str(vmlinux), skip_ours=True, modules=[],
                              python=[], pure=False)
    ((_, _, m, _),) = bench_encode.measure_all(args, need("pahole"), str(tmp))
    return Measure(m["wall"], m["cpu"], m["one"])


def measure_kernel(bench: Bench, label: str) -> tuple[list[tuple], list[str]]:
    """One run's rows for one kernel, (command, Measure, reference, its Measure, target
    value), and notes on what was skipped or differs."""
    btf, tmp, bpftool = bench.kernels[label], bench.tmp, bench.bpftool
    refs = {"bpftool raw > /dev/null": (bpftool_argv(bpftool, "raw", btf), None),
            "bpftool raw": (bpftool_argv(bpftool, "raw", btf), tmp / "bpftool.txt"),
            "bpftool c": (bpftool_argv(bpftool, "c", btf), tmp / "bpftool.h")}
    plan = [("read+write", "bpftool raw > /dev/null", 2.0, tmp / "rw.btf"),
            ("dump raw", "bpftool raw", 1.5, tmp / "ours.txt"),
            ("dump c", "bpftool c", 2.0, tmp / "ours.h"),
            ("check", None, CHECK_SECONDS, tmp / "check.txt")]
    measured: dict[str, Measure] = {}
    notes = []
    sorts = [("sort", "pahole -j2 encode", 0.1, tmp / "sorted.btf"),
             ("sort --dedup", "pahole -j2 encode", 0.2, tmp / "dedup.btf")]
    if label in bench.dwarf and bench.pahole_note is None:
        progress(f"  {label}: pahole -j2 --btf_encode_detached {bench.dwarf[label]}")
        measured["pahole -j2 encode"] = time_pahole(tmp, bench.dwarf[label])
    elif label in bench.dwarf:
        notes.append(f"sort ratios skipped: {bench.pahole_note}")
    else:
        notes.append("sort: no pahole reference, no vmlinux with DWARF given for this kernel "
                     "(pahole encodes DWARF, not BTF): times are absolute")
    rows = []
    for command, ref, limit, out in plan + sorts:
        if ref in refs and ref not in measured:
            progress(f"  {label}: {ref}")
            measured[ref] = run_once(refs[ref][0], refs[ref][1])
        progress(f"  {label}: canonbtf {command}")
        argv, stdout, ok = ours_argv(command, btf, out)
        m = run_once(argv, stdout, ok)
        bench.count_fallbacks(f"{label} {command}", m)
        rows.append((command, m, ref, measured.get(ref), limit))
    if not filecmp.cmp(tmp / "rw.btf", btf, shallow=False):
        sys.exit(f"bench_all: read + write of {btf} does not give its bytes back")
    if not filecmp.cmp(tmp / "ours.txt", tmp / "bpftool.txt", shallow=False):
        notes.append("dump --format raw DIFFERS from bpftool's raw dump")
    return rows, notes


HEADER = (f"  {'command':<14}{'wall s':>7}{'cpu s':>7}{'peak MB':>8}{'limit':>6}   "
          f"{'reference':<24}{'wall s':>7}{'cpu s':>7}   {'wall ratio':<16}{'cpu x':>6}   "
          f"{'target':<16}fallbacks")


def print_row(command: str, m: Measure, limit_mb: float, ref: str | None,
              ref_m: Measure | None, value: str, goal: str) -> None:
    """One line of a kernel's table; the CPU ratio is for reading a loaded machine's
    figures, the targets are judged on wall time."""
    refs = cpu_ratio = ""
    if ref is not None:
        refs = f"{ref:<24}" + (f"{ref_m.wall:>7.2f}{ref_m.cpu:>7.2f}" if ref_m else "")
    if ref_m is not None:
        cpu_ratio = f"{m.cpu / ref_m.cpu:.3g}x"
    print(f"  {command:<14}{m.wall:>7.2f}{m.cpu:>7.2f}{m.peak:>8.0f}{limit_mb:>6.0f}   "
          f"{refs:<38}   {value:<16}{cpu_ratio:>6}   {goal:<16}{m.fallbacks}")


def report_kernel(bench: Bench, label: str, rows: list[tuple], notes: list[str]) -> None:
    """Prints one kernel's table of a run and records its targets."""
    size = bench.sizes[label]
    print(f"{label}: {bench.kernels[label].name}, {bench.types[label]} types, "
          f"{size / MB:.2f} MB")
    print(HEADER)
    limit_mb = memory_limit(size)
    for command, m, ref, ref_m, limit in rows:
        if ref is None:
            value = bench.record(f"{label} {command} <= {limit} s", "seconds", limit, m.wall)
            goal = f"<= {limit} s"
        elif ref_m is None:
            value, goal = "-", "(no reference)"
        else:
            value = bench.record(f"{label} {command} <= {limit} x {ref}", "ratio", limit,
                                 m.wall, ref_m.wall)
            goal = f"<= {limit} x"
        bench.record(f"{label} {command} peak RSS <= {limit_mb:.0f} MB", "memory", limit_mb,
                     m.peak)
        print_row(command, m, limit_mb, ref, ref_m, value, goal)
    for note in notes:
        print(f"  note: {note}")


def measure_diff(bench: Bench, old_label: str, new_label: str) -> None:
    """diff of one pair beside bpftool's C dump of both; prints and records it."""
    old, new = bench.path(old_label), bench.path(new_label)
    pair = f"{old_label} {new_label}"
    progress(f"  diff {pair}: bpftool C dump of both")
    refs = [run_once(bpftool_argv(bench.bpftool, "c", p), bench.tmp / f"b{i}.h")
            for i, p in enumerate((old, new))]
    ref = Measure(sum(m.wall for m in refs), sum(m.cpu for m in refs), max(m.peak for m in refs))
    progress(f"  diff {pair}: canonbtf diff")
    m = run_once(canonbtf_argv("diff", str(old), str(new)), bench.tmp / "diff.txt", (0, 1))
    bench.count_fallbacks(f"diff {pair}", m)
    size = old.stat().st_size + new.stat().st_size
    limit_mb = memory_limit(size)
    value = bench.record(f"diff {pair} <= 1 x bpftool C dump of both", "ratio", 1.0,
                         m.wall, ref.wall)
    bench.record(f"diff {pair} peak RSS <= {limit_mb:.0f} MB", "memory", limit_mb, m.peak)
    print(f"diff {pair} (both files, {size / MB:.2f} MB)")
    print(HEADER)
    print_row("diff", m, limit_mb, "bpftool C dump of both", ref, value, "<= 1.0 x")


class _Strings:
    """A string section being built: the source's own bytes, then appended names."""

    def __init__(self, data: bytes):
        self.pieces, self.size = [data], len(data)
        self.offset_of: dict[str, int] = {"": 0}

    def add(self, name: str) -> int:
        offset = self.offset_of.get(name)
        if offset is None:
            offset = self.offset_of[name] = self.size
            encoded = name.encode("latin-1") + b"\0"
            self.pieces.append(encoded)
            self.size += len(encoded)
        return offset


class _Renamed(dict):
    """Source string offset -> offset of the name with `suffix`, added on first use."""

    def __init__(self, names, suffix: str, strings: _Strings):
        super().__init__()
        self.names, self.suffix, self.strings = names, suffix, strings

    def __missing__(self, offset: int) -> int:
        name = self.names(offset)
        new = self[offset] = self.strings.add(name + self.suffix if name else name)
        return new


def synthesize(source: Path, copies: int) -> tuple[list[Type], _Strings]:
    """`copies` renamed copies of `source`'s types, and their strings."""
    from canonbtf.btf import reader

    btf = reader.load(str(source))
    n = len(btf.types)
    strings = _Strings(btf.strings.data())
    types = list(btf.types)
    for copy in range(1, copies):
        renamed = _Renamed(btf.names, f"__c{copy}", strings)
        new_id = [0, *range(copy * n + 1, copy * n + n + 1)]
        types.extend(t.remap(new_id, renamed) for t in btf.types)
    return types, strings


def variant(types: list[Type], strings: _Strings) -> Btf:
    """The diff scaling's second file: a few structs lose their last member, an INT is new."""
    from canonbtf.btf import format as btf_format
    from canonbtf.btf.model import Btf, Type
    from canonbtf.btf.strings import StringTable

    changed = list(types)
    candidates = [i for i, t in enumerate(types)
                  if t.kind == btf_format.STRUCT and t.name_off and len(t.items) >= 2]
    step = max(len(candidates) // VARIANT_CHANGES, 1)
    for i in candidates[::step][:VARIANT_CHANGES]:
        t = changed[i]
        changed[i] = Type(t.kind, t.name_off, t.kflag, t.size_or_type, t.extra, t.items[:-1])
    changed.append(Type(btf_format.INT, strings.size, 0, 4, 32))
    return Btf(changed, StringTable(b"".join([*strings.pieces, b"bench_all_new_int\0"])))


def write_synthetic(copies: int, path: str, other: str) -> int:
    """(In a child process.) Writes `copies` x the 6.1 vmlinux and its diff variant."""
    from canonbtf.btf import writer
    from canonbtf.btf.model import Btf
    from canonbtf.btf.strings import StringTable
    from canonbtf.gcpause import paused_gc

    with paused_gc():
        types, strings = synthesize(KERNELS["6.1"], copies)
        Path(path).write_bytes(writer.write(Btf(types, StringTable(b"".join(strings.pieces)))))
        Path(other).write_bytes(writer.write(variant(types, strings)))
    return len(types)


def in_child(*args: str) -> str:
    """This script's `--child ARGS` in a child process (see above); its stdout."""
    done = subprocess.run([sys.executable, __file__, "--child", *args], cwd=REPO,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_all: --child {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def child(args: list[str]) -> int:
    """`--child count PATH` prints the type count; `--child renumber IN OUT` writes IN
    renumbered; `--child synth K OUT VARIANT` writes the scaled BTFs."""
    if args[0] == "count":
        from canonbtf.btf import reader

        print(len(reader.load(args[1])))
    elif args[0] == "renumber":
        from canonbtf.btf import reader, writer
        from tests.shuffle import shuffle

        Path(args[2]).write_bytes(writer.write(shuffle(reader.load(args[1]), RENUMBER_SEED)))
    else:
        print(write_synthetic(int(args[1]), args[2], args[3]))
    return 0


def prepare_scaled(bench: Bench) -> None:
    """Writes the synthetic BTFs and their diff variants into the temporary directory."""
    for k in bench.args.scales:
        progress(f"synthesising {k} x the 6.1 vmlinux")
        path, other = bench.tmp / f"scaled-{k}x.btf", bench.tmp / f"scaled-{k}x-variant.btf"
        bench.types[f"{k}x"] = int(in_child("synth", str(k), str(path), str(other)))
        bench.scaled[k] = (path, other)
        bench.sizes[f"{k}x"] = path.stat().st_size


def measure_scaled(bench: Bench) -> dict[tuple[str, int], Measure]:
    """Every command at every size, once: {(command, k): Measure}."""
    out: dict[tuple[str, int], Measure] = {}
    tmp = bench.tmp
    for k, (path, other) in bench.scaled.items():
        for command in SCALED_COMMANDS:
            progress(f"  {k} x: {command}")
            if command.startswith("bpftool"):
                fmt = command.split()[1]
                argv, stdout, ok = bpftool_argv(bench.bpftool, fmt, path), tmp / "b.out", (0,)
            elif command == "diff":
                argv, stdout, ok = (canonbtf_argv("diff", str(path), str(other)),
                                    tmp / "diff.out", (1,))
            else:
                argv, stdout, ok = ours_argv(command, path, tmp / "scaled-out")
            out[command, k] = run_once(argv, stdout, ok)
            if command == "check":
                with open(stdout, "rb") as fh:
                    bench.findings[k] = sum(not line.endswith(b"rules\n") for line in fh)
    return out


def report_scaled(bench: Bench, times: dict[tuple[str, int], Measure]) -> None:
    """One run's scaling table; records the growth (CPU time) and the largest size's memory."""
    scales = bench.args.scales
    first, last = scales[0], scales[-1]
    n = bench.types[f"{first}x"]
    ratio = last / first
    bound = GROWTH_TOLERANCE * ratio * math.log(ratio * n) / math.log(n)
    print(f"scaling: wall s, cpu s, peak MB per size; exponents and growth from CPU time; "
          f"met: cpu t({last}x)/t({first}x) <= {bound:.1f} = {GROWTH_TOLERANCE} x "
          f"{ratio:.0f} ln({ratio:.0f}n)/ln(n)")
    sizes = "".join(f"{k}x: {bench.types[str(k) + 'x'] / 1000:.0f}k types".rjust(21)
                    for k in scales)
    print(f"  {'':<14}{sizes}")
    steps = "".join(f"{f'exp {a}-{b}x':>11}" for a, b in zip(scales, scales[1:]))
    print(f"  {'command':<14}{'   wall    cpu   peak' * len(scales)}{steps}"
          f"{'growth wall':>13}{'cpu':>7}   verdict")
    for command in SCALED_COMMANDS:
        m = {k: times[command, k] for k in scales}
        cells = "".join(f"{m[k].wall:>7.2f}{m[k].cpu:>7.2f}{m[k].peak:>7.0f}" for k in scales)
        exps = "".join(f"{math.log(m[b].cpu / m[a].cpu) / math.log(b / a):>11.2f}"
                       for a, b in zip(scales, scales[1:]))
        verdict = "(reference)" if command.startswith("bpftool") else "-"
        if verdict == "-" and last > first:
            verdict = bench.record(f"scaling {command}: cpu t({last}x)/t({first}x) "
                                   f"<= {bound:.1f}", "growth", bound, m[last].cpu, m[first].cpu)
        if not command.startswith("bpftool"):
            size = bench.sizes[f"{last}x"] * (2 if command == "diff" else 1)
            limit_mb = memory_limit(size)
            bench.record(f"scaling {command} {last}x peak RSS <= {limit_mb:.0f} MB", "memory",
                         limit_mb, m[last].peak)
        print(f"  {command:<14}{cells}{exps}{m[last].wall / m[first].wall:>13.1f}"
              f"{m[last].cpu / m[first].cpu:>7.1f}   {verdict}")
    found = ", ".join(f"{k}x {bench.findings[k]}" for k in scales)
    print(f"  check's findings (kernel limits the synthetic BTF crosses; printing them is part "
          f"of its time): {found}")


def fallback_summary(bench: Bench) -> None:
    """Every command and kernel whose run fell back to the reference, with the counts."""
    found = {what: counts for what, counts in bench.fallbacks.items() if any(counts)}
    if not found:
        print(f"fallbacks to the reference: none ({len(bench.fallbacks)} commands x kernels, "
              f"every run)")
        return
    print("fallbacks to the reference (per run; each is a bug to fix):")
    for what, counts in found.items():
        print(f"  {what}: {' '.join(map(str, counts))}")


def summary(bench: Bench) -> None:
    runs = bench.args.runs
    print(f"\nsummary ({runs} run{'s' * (runs > 1)}; best = best-of-{runs} times, ours over "
          f"the reference's, and the largest peak RSS; verdict: met in every run or not)")
    heads = "".join(f"{f'run {i}':<17}" for i in range(1, runs + 1))
    print(f"  {'target':<58}{heads}{'best':<17}verdict")
    missed = 0
    for target in bench.targets.values():
        cells = "".join(f"{target.show(o, r):<17}" for o, r in target.values)
        ok = all(o / r <= target.limit for o, r in target.values)
        missed += not ok
        print(f"  {target.what:<58}{cells}{target.show(*target.best()):<17}"
              f"{'met' if ok else 'MISSED'}")
    print(f"{len(bench.targets) - missed} of {len(bench.targets)} targets met in every run")


def setup(args: argparse.Namespace, tmp: Path) -> Bench:
    kernels = dict(args.kernel) or {k: v for k, v in KERNELS.items()
                                     if not args.quick or k == "6.1"}
    dwarf = dict(args.dwarf) if args.kernel else {"6.1": FETCHED_VMLINUX}
    # --quick keeps 6.1 alone, and the default diff pair needs 6.12: none then.
    pairs = args.pair if args.kernel else [] if args.quick else [("6.1", "6.12")]
    for path in [*kernels.values(), *dwarf.values()]:
        if not path.exists():
            sys.exit(f"bench_all: {path} not found")
    for label in [*dwarf, *(side.removesuffix(RENUMBERED) for pair in pairs for side in pair)]:
        if label not in kernels:
            sys.exit(f"bench_all: {label} is no --kernel label")
    note = None
    if shutil.which("pahole") is None:
        note = "pahole is not installed (apt-get install dwarves)"
    bench = Bench(args, tmp, need("bpftool"), note, kernels, {}, {}, dwarf, pairs)
    for label in {side for pair in pairs for side in pair if side.endswith(RENUMBERED)}:
        out = tmp / f"renumbered-{len(bench.renumbered)}.btf"
        progress(f"renumbering {label.removesuffix(RENUMBERED)}")
        in_child("renumber", str(kernels[label.removesuffix(RENUMBERED)]), str(out))
        bench.renumbered[label] = out
    # As an installed package runs: every module already compiled to bytecode (a
    # PYTHONDONTWRITEBYTECODE environment would otherwise compile the changed ones anew
    # in every timed run).
    compileall.compile_dir(str(REPO / "canonbtf"), quiet=1)
    for label, path in kernels.items():
        bench.sizes[label] = path.stat().st_size
        bench.types[label] = int(in_child("count", str(path)))
    return bench


def labelled(text: str) -> tuple[str, Path]:
    label, sep, path = text.partition("=")
    if not sep or not label or label.endswith(RENUMBERED):
        raise argparse.ArgumentTypeError(f"{text}: LABEL=PATH expected (LABEL not ending in ~)")
    return label, Path(path)


def paired(text: str) -> tuple[str, str]:
    old, sep, new = text.partition(":")
    if not sep or not old or not new:
        raise argparse.ArgumentTypeError(f"{text}: OLD:NEW expected")
    return old, new


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="full runs (default 2)")
    parser.add_argument("--quick", action="store_true", help="6.1 only, sizes 1x and 4x")
    parser.add_argument("--scales", type=int, nargs="+", default=None,
                        help="type-count multiples to synthesise (default 1 4 16)")
    parser.add_argument("--kernel", type=labelled, action="append", default=[],
                        metavar="LABEL=PATH", help="a kernel's BTF (default: the corpus')")
    parser.add_argument("--dwarf", type=labelled, action="append", default=[],
                        metavar="LABEL=VMLINUX", help="its vmlinux with DWARF (sort ratios)")
    parser.add_argument("--pair", type=paired, action="append", default=[],
                        metavar="OLD:NEW", help="a diff to time (LABEL~: renumbered)")
    parser.add_argument("--diff-only", action="store_true",
                        help="only the pairs' diffs (no per-kernel tables)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    if args.kernel and not args.scales:
        args.scales = []
    else:
        args.scales = sorted(args.scales or ([1, 4] if args.quick else [1, 4, 16]))
    with tempfile.TemporaryDirectory(prefix="bench_all-") as tmp:
        bench = setup(args, Path(tmp))
        tools = [[bench.bpftool, "version"], canonbtf_argv("--version")]
        if shutil.which("pahole"):
            tools.append(["pahole", "--version"])
        versions = [subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
                    .stdout.split("\n")[0] for argv in tools]
        print(f"bench_all: {' / '.join(versions)}; {os.cpu_count()} CPUs, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        prepare_scaled(bench)
        for run in range(1, args.runs + 1):
            print(f"\n=== run {run} of {args.runs} ===")
            for label in [] if args.diff_only else bench.kernels:
                progress(f"run {run}: {label}")
                report_kernel(bench, label, *measure_kernel(bench, label))
            for old, new in bench.pairs:
                progress(f"run {run}: diff {old} {new}")
                measure_diff(bench, old, new)
            if args.scales:
                progress(f"run {run}: scaling")
                report_scaled(bench, measure_scaled(bench))
        summary(bench)
        fallback_summary(bench)
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
