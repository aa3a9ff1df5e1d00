#!/usr/bin/env python3
"""The long fuzz campaign: N mutated BTF inputs, each run through every command, and N
damaged object files through `encode`.

The mutations and the judge are tests/fuzzing.py's (the seeded pytest part runs a few
hundred of the same inputs). Runs happen in worker processes (2 by default), in-process
through canonbtf.cli.main with a watchdog (SIGALRM) per run and a memory limit per worker;
every K-th input also runs as `python -m canonbtf` subprocesses, as a user runs it. Where
the kernel can be asked (root), inputs it accepts must stay accepted after sort and
sort --dedup. Prints a table of what happened per command; failing inputs are saved.

Usage: tools/fuzz_campaign.py [-n 10000] [-j 2] [--seeds handmade,virtio_net,...]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import importlib
import multiprocessing
import os
import pkgutil
import random
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import canonbtf  # noqa: E402
from canonbtf.btf import reader  # noqa: E402
from tests import fuzzing  # noqa: E402

SHARED = Path(os.environ.get("CANONBTF_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
BASE_61 = CORPUS / "vmlinux-6.1.0-56-cloud-amd64.btf"
MODULES = {"virtio_net": "mod-6.1.0-56-cloud-virtio_net.btf",
           "bridge": "mod-6.1.0-56-cloud-bridge.btf"}
STANDALONE = {"handmade": lambda: fuzzing.handmade_seed(),
              "handmade-be": lambda: fuzzing.handmade_seed(">"),
              "handmade-elf": fuzzing.elf_seed,
              "handmade-layout": fuzzing.layout_seed}
DEFAULT_SEEDS = "handmade,handmade-be,handmade-elf,handmade-layout,virtio_net"
GOLDEN = REPO / "golden" / "obj"
COMMANDS = (*fuzzing.COMMANDS, "encode")
CHUNK = 20


@dataclass
class Run:
    """One command on one input."""

    index: int
    seed: str
    mutations: list[str]
    command: str
    mode: str  # "in-process" or "subprocess"
    status: int | None
    seconds: float
    problems: list[str]


@dataclass
class KernelCheck:
    index: int
    seed: str
    command: str
    accepted: bool | None


@dataclass
class CompileCheck:
    """A C header dumped from an input `check` passes, given to a compiler."""

    index: int
    seed: str
    compiler: str
    error: str  # the first error line, "" when it compiled


@dataclass
class ChunkResult:
    runs: list[Run] = field(default_factory=list)
    kernel: list[KernelCheck] = field(default_factory=list)
    compiles: list[CompileCheck] = field(default_factory=list)
    peak_rss_mb: float = 0.0


# ---- in the workers ------------------------------------------------------------------

_seeds: dict[str, fuzzing.Seed] = {}
_objects: list[fuzzing.ElfSeed] = []
_bases: dict[str, object] = {}
_options: argparse.Namespace | None = None


def _start_worker(seed_names: list[str], options: argparse.Namespace) -> None:
    global _options
    _options = options
    if options.memory_mb:  # 0: no limit (AddressSanitizer reserves terabytes of addresses)
        limit = options.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if "encode" in options.commands:
        _objects.extend(fuzzing.ElfSeed(GOLDEN / name) for name in fuzzing.GOLDEN_OBJECTS
                        if (GOLDEN / name).exists())
    base = None
    for name in seed_names:
        if name in STANDALONE:
            _seeds[name] = STANDALONE[name]()
            continue
        if base is None:
            base = reader.load(str(BASE_61))
            _bases[str(BASE_61)] = base
        _seeds[name] = fuzzing.split_seed(name, CORPUS / MODULES[name], BASE_61, base)


def _run_chunk(indices: list[int], seed_names: list[str], encode: bool) -> ChunkResult:
    options = _options
    result = ChunkResult()
    with tempfile.TemporaryDirectory(prefix="canonbtf-fuzz-") as tmp:
        for index in indices:
            if encode:
                _run_encode(index, Path(tmp), options, result)
            else:
                _run_input(index, seed_names, Path(tmp), options, result)
    result.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _sampled(index: int, every: int, seeds: int) -> bool:
    """Every `every`-th round of the seeds: each seed gets its share of the samples."""
    return bool(every) and (index // seeds) % every == 0


def _run_input(index: int, seed_names: list[str], directory: Path,
               options: argparse.Namespace, result: ChunkResult) -> None:
    seed = _seeds[seed_names[index % len(seed_names)]]
    rnd = random.Random(f"{options.rng_seed}:{index}")
    blob, mutations = fuzzing.mutate(seed, rnd)
    case = fuzzing.Case(seed, blob, directory, mutations)
    case.write()
    modes = ["in-process"]
    if _sampled(index, options.subprocess_every, len(seed_names)):
        modes.append("subprocess")
    ask_kernel = _sampled(index, options.kernel_every, len(seed_names))
    compile_c = _sampled(index, options.compile_every, len(seed_names))
    sorted_outputs: dict[str, bytes] = {}
    for command in options.commands:
        if command == "encode":
            continue
        for mode in modes:
            case.clean()
            argv = case.argv(command)
            if mode == "in-process":
                outcome = fuzzing.run_in_process(argv, options.limit, _bases)
            else:
                outcome = fuzzing.run_subprocess(argv, options.limit)
            problems = fuzzing.judge(command, case, outcome, options.limit)
            result.runs.append(Run(index, seed.name, mutations, command, mode, outcome.status,
                                   outcome.seconds, problems))
            if problems and options.save_dir:
                _save(options.save_dir, index, seed, blob, command, mode, problems, outcome)
            if (ask_kernel and mode == "in-process" and command in ("sort", "sort-dedup")
                    and outcome.status == 0 and case.out_path.exists()):
                sorted_outputs[command] = case.out_path.read_bytes()
            if (compile_c and mode == "in-process" and command == "dump-c"
                    and outcome.status == 0 and case.valid()):
                result.compiles += _compile(index, seed, case.out_path.read_text("latin-1"),
                                            options)
    case.clean()
    if sorted_outputs:
        result.kernel += _kernel_checks(index, seed, case, sorted_outputs)


def _run_encode(index: int, directory: Path, options: argparse.Namespace,
                result: ChunkResult) -> None:
    """`encode` of a damaged golden object (in-process with -j1; every K-th also as a
    subprocess with -j2, so a worker meets the damage)."""
    seed = _objects[index % len(_objects)]
    data, mutation = fuzzing.mutate_object(seed, random.Random(f"{options.rng_seed}:{index}"))
    path = directory / "input.o"
    out = directory / "out.btf"
    modes = ["in-process"]
    if _sampled(index, options.subprocess_every, len(_objects)):
        modes.append("subprocess")
    for mode in modes:
        for old in directory.iterdir():
            old.unlink()
        path.write_bytes(data)
        if mode == "in-process":
            outcome = fuzzing.run_in_process(["encode", "-j1", str(path), "-o", str(out)],
                                             options.limit)
        else:
            outcome = fuzzing.run_subprocess(["encode", "-j2", str(path), "-o", str(out)],
                                             options.limit)
        problems = fuzzing.judge_encode(outcome, out, directory, options.limit)
        result.runs.append(Run(index, seed.name, [mutation], "encode", mode, outcome.status,
                               outcome.seconds, problems))
        if problems and options.save_dir:
            stem = Path(options.save_dir) / f"encode-{seed.name}-{index}"
            stem.parent.mkdir(parents=True, exist_ok=True)
            stem.with_suffix(".o").write_bytes(data)
            stem.with_suffix(".txt").write_text(f"{mutation} ({mode}): {problems}\n"
                                                f"{outcome.stderr}\n{outcome.error or ''}")


COMPILERS = {"clang -target bpf": ["clang", "-target", "bpf"], "gcc": ["gcc"]}


_base_headers: dict[str, str] = {}


def _compile(index: int, seed: fuzzing.Seed, header: str, options: argparse.Namespace
             ) -> list[CompileCheck]:
    """The header of a kernel-valid input must compile (DESIGN: with clang and gcc); a
    module's header follows its base's, as it is meant to be included."""
    import io
    import shutil
    import subprocess

    if seed.base is not None:
        if seed.base_path not in _base_headers:
            from canonbtf.emit.c.header import dump_c

            text = io.StringIO()
            dump_c(seed.base, text)
            _base_headers[seed.base_path] = text.getvalue()
        header = _base_headers[seed.base_path] + header
    checks = []
    for label, argv in COMPILERS.items():
        if shutil.which(argv[0]) is None:
            continue
        proc = subprocess.run([*argv, "-fsyntax-only", "-x", "c", "-"], input=header,
                              capture_output=True, text=True, timeout=120)
        errors = [line for line in proc.stderr.splitlines() if "error" in line]
        error = (errors[0] if errors else proc.stderr.strip()[:200]) if proc.returncode else ""
        checks.append(CompileCheck(index, seed.name, label, error))
        if error and options.save_dir:
            stem = Path(options.save_dir) / f"c-{seed.name}-{index}"
            stem.parent.mkdir(parents=True, exist_ok=True)
            stem.with_suffix(".h").write_text(header, "latin-1")
            with open(stem.with_suffix(".txt"), "a") as fh:
                fh.write(f"{label}: {error}\n")
    return checks


def _kernel_checks(index: int, seed: fuzzing.Seed, case: fuzzing.Case,
                   outputs: dict[str, bytes]) -> list[KernelCheck]:
    from canonbtf.btf import kernel

    btf = case.parsed()
    verdict = kernel.check_btf(btf)
    checks = [KernelCheck(index, seed.name, "input", verdict.accepted)]
    if verdict.accepted:
        for command, data in outputs.items():
            out = reader.parse(data, command, seed.base)
            checks.append(KernelCheck(index, seed.name, command,
                                      kernel.check_btf(out).accepted))
    return checks


def _save(save_dir: str, index: int, seed: fuzzing.Seed, blob: bytes, command: str,
          mode: str, problems: list[str], outcome: fuzzing.Outcome) -> None:
    directory = Path(save_dir)
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"{seed.name}-{index}"
    stem.with_suffix(".btf").write_bytes(blob)
    argv = fuzzing.command_argv(command, f"{stem}.btf", "OUT", "SEED", seed.base_path)
    note = (f"command: canonbtf {' '.join(argv)} ({mode})\nproblems: {problems}\n"
            f"stderr: {outcome.stderr}\n{outcome.error or ''}\n")
    with open(stem.with_suffix(".txt"), "a") as fh:
        fh.write(note)


# ---- in the parent -----------------------------------------------------------------

def _table(runs: list[Run], limit: float) -> str:
    rows = collections.OrderedDict()
    for run in runs:
        key = run.command if run.mode == "in-process" else f"{run.command} (subprocess)"
        row = rows.setdefault(key, collections.Counter())
        row["runs"] += 1
        row[f"exit {run.status}"] += 1
        row["max ms"] = max(row["max ms"], int(run.seconds * 1000))
        row["total s"] += run.seconds
        for problem in run.problems:
            if problem.startswith("traceback"):
                row["tracebacks"] += 1
            elif problem.startswith("over "):
                row["over limit"] += 1
            elif "left behind" in problem:
                row["left behind"] += 1
            else:
                row["other"] += 1
    columns = ["runs", "exit 0", "exit 1", "exit 2", "tracebacks", "over limit",
               "left behind", "other", "max ms"]
    width = max(len(k) for k in rows) if rows else 10
    lines = [f"{'command':<{width}}  " + "  ".join(f"{c:>11}" for c in columns)]
    for key, row in sorted(rows.items()):
        lines.append(f"{key:<{width}}  " + "  ".join(f"{row[c]:>11}" for c in columns))
    lines.append(f"(over limit: runs longer than {limit:g} s; a subprocess's time includes "
                 "starting Python and reading the base)")
    return "\n".join(lines)


def _kernel_table(checks: list[KernelCheck]) -> str:
    inputs = [c for c in checks if c.command == "input"]
    if not inputs:
        return "kernel invariant: not checked"
    if all(c.accepted is None for c in inputs):
        return "kernel invariant: the kernel could not be asked (needs root / CAP_BPF)"
    accepted = sum(1 for c in inputs if c.accepted)
    lines = [f"kernel invariant: {len(inputs)} inputs asked, {accepted} accepted by the kernel"]
    for command in ("sort", "sort-dedup"):
        outs = [c for c in checks if c.command == command]
        rejected = sum(1 for c in outs if not c.accepted)
        lines.append(f"  {command}: {len(outs)} outputs of accepted inputs asked, "
                     f"{rejected} rejected")
    return "\n".join(lines)


def _compile_table(checks: list[CompileCheck]) -> str:
    if not checks:
        return "C headers of valid inputs: not compiled"
    lines = []
    for label in COMPILERS:
        mine = [c for c in checks if c.compiler == label]
        failed = [c for c in mine if c.error]
        lines.append(f"C headers of valid inputs, {label}: {len(mine)} compiled, "
                     f"{len(failed)} failed")
        for error, count in collections.Counter(c.error for c in failed).most_common(5):
            lines.append(f"  {count} x {error}")
    return "\n".join(lines)


def _options() -> tuple[argparse.Namespace, list[str]]:
    """The command line, checked: the options and the seed names."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--inputs", type=int, default=10_000,
                    help="mutated inputs; each runs through every command (default 10000)")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--seeds", default=DEFAULT_SEEDS,
                    help=f"comma-separated seeds, used in turn (default {DEFAULT_SEEDS}; "
                         f"also: {', '.join(sorted(MODULES))})")
    ap.add_argument("--commands", default=",".join(COMMANDS),
                    help="which of them to run (default: all; encode runs on damaged "
                         "golden objects instead of BTF)")
    ap.add_argument("--limit", type=float, default=10.0, help="seconds per run (default 10)")
    ap.add_argument("--memory-mb", type=int, default=4096,
                    help="address space per worker, 0 for none (a sanitizer build)")
    ap.add_argument("--subprocess-every", type=int, default=100,
                    help="also run the inputs of every K-th round of the seeds as "
                         "subprocesses (0: never)")
    ap.add_argument("--kernel-every", type=int, default=5,
                    help="ask the kernel about the inputs of every K-th round of the seeds "
                         "and their sorted outputs")
    ap.add_argument("--compile-every", type=int, default=0,
                    help="compile the C headers of the inputs of every K-th round of the "
                         "seeds that pass check, with clang -target bpf and gcc (0: never)")
    ap.add_argument("--rng-seed", default="0")
    ap.add_argument("--save-dir", help="where to keep inputs that broke the rules")
    ap.add_argument("--start", type=int, default=0, help="first input index")
    options = ap.parse_args()
    options.commands = options.commands.split(",")
    unknown = set(options.commands) - set(COMMANDS)
    seed_names = options.seeds.split(",")
    unknown |= set(seed_names) - set(STANDALONE) - set(MODULES)
    if unknown:
        ap.error(f"unknown: {', '.join(sorted(unknown))}")
    if any(name in MODULES for name in seed_names) and not BASE_61.exists():
        ap.error(f"{BASE_61} not found (needed by the module seeds)")
    return options, seed_names


def main() -> int:
    options, seed_names = _options()

    # Every module is imported before the workers fork, so the whole campaign runs one
    # version of the code even if the files change meanwhile.
    for module in pkgutil.walk_packages(canonbtf.__path__, "canonbtf."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)

    indices = list(range(options.start, options.start + options.inputs))
    chunks = [(indices[i : i + CHUNK], False) for i in range(0, len(indices), CHUNK)
              if set(options.commands) - {"encode"}]
    if "encode" in options.commands:
        chunks += [(indices[i : i + CHUNK], True) for i in range(0, len(indices), CHUNK)]
    runs: list[Run] = []
    kernel_checks: list[KernelCheck] = []
    compiles: list[CompileCheck] = []
    died = 0
    peak = 0.0
    started = time.perf_counter()
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(
            options.workers, mp_context=context, initializer=_start_worker,
            initargs=(seed_names, options)) as pool:
        futures = {pool.submit(_run_chunk, chunk, seed_names, encode): chunk
                   for chunk, encode in chunks}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            try:
                result = future.result()
            except concurrent.futures.process.BrokenProcessPool:
                died += 1
                continue
            runs += result.runs
            kernel_checks += result.kernel
            compiles += result.compiles
            peak = max(peak, result.peak_rss_mb)
            if sys.stderr.isatty() or done % 25 == 0 or done == len(chunks):
                bad = sum(1 for r in runs if r.problems)
                print(f"\r{done}/{len(chunks)} chunks of {CHUNK} inputs, {len(runs)} runs, "
                      f"{bad} broke the rules, {time.perf_counter() - started:.0f}s",
                      end="\n" if not sys.stderr.isatty() else "", file=sys.stderr)
    print(file=sys.stderr)
    elapsed = time.perf_counter() - started
    used = list(seed_names) if set(options.commands) - {"encode"} else []
    if "encode" in options.commands:
        used += [name for name in fuzzing.GOLDEN_OBJECTS if (GOLDEN / name).exists()]
    print(f"fuzz campaign: {len(indices)} inputs per command (seeds, used in turn: "
          f"{', '.join(used)}), rng seed {options.rng_seed!r}, {options.workers} workers, "
          f"{elapsed:.0f}s")
    print(_table(runs, options.limit))
    print(_kernel_table(kernel_checks))
    print(_compile_table(compiles))
    print(f"peak RSS of a worker: {peak:.0f} MiB (limit {options.memory_mb} MiB); "
          f"worker processes lost: {died}")
    problems = collections.Counter(p for r in runs for p in r.problems)
    for problem, count in problems.most_common(20):
        print(f"  {count} x {problem}")
    rejected = sum(1 for c in kernel_checks if c.command != "input" and not c.accepted)
    return 1 if problems or died or rejected else 0


if __name__ == "__main__":
    sys.exit(main())
