"""Command line: parses arguments and calls the layers; no BTF logic lives here.

Exit status: 0 done, 1 a finding (`check` found violations, `diff` found differences),
2 the job could not be done (bad input, missing file, unusable environment).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Iterator
from typing import TextIO

from . import ORDER_VERSION, __version__
from .btf import reader
from .dwarf.core import missing_core_note
from .errors import InputError
from .native import active_core
from .output import atomic_output, refuse_overwriting_input

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_TROUBLE = 2


def _add_input(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", nargs="?", default=reader.DEFAULT_INPUT, metavar="IN",
                   help="raw BTF, an ELF with a .BTF section, or split BTF with --base "
                        f"(default: {reader.DEFAULT_INPUT})")
    _add_base(p)


def _add_base(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", "-B", metavar="BASE",
                   help="base BTF (raw or ELF) when IN is split BTF, e.g. a kernel module's")


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """The library's InputErrors name no file: the one the command read is the one."""
    try:
        yield
    except InputError as e:
        if e.path is not None:
            raise
        raise InputError(path, e.message) from None


@contextlib.contextmanager
def _text_output(path: str | None) -> Iterator[TextIO]:
    with atomic_output(path) as raw:
        text = io.TextIOWrapper(raw, encoding="latin-1", newline="\n", write_through=False)
        try:
            yield text
        finally:
            text.flush()
            text.detach()


def cmd_check(args: argparse.Namespace) -> int:
    from .check.validator import violation_lines
    from .gcpause import paused_gc

    btf = reader.load_with_base(args.input, args.base)
    # Written as found, in chunks however stdout is buffered: a damaged BTF can have a
    # million violations.
    found = False
    with paused_gc(), _text_output(None) as out:
        write = out.write
        for line in violation_lines(btf):
            write(f"{args.input}: {line}\n")
            found = True
    status = EXIT_FINDING if found else EXIT_OK
    if not found:
        print(f"{args.input}: {len(btf)} types, no violations of the kernel's rules")
    if args.kernel:
        from .btf import kernel

        verdict = kernel.check_btf(btf, reader.btf_bytes(args.input))
        print(f"{args.input}: kernel: {verdict.summary()}")
        if verdict.log_tail:
            print(verdict.log_tail)
        if verdict.accepted is None:
            status = max(status, EXIT_TROUBLE)
        elif not verdict.accepted:
            status = max(status, EXIT_FINDING)
    return status


def cmd_dump(args: argparse.Namespace) -> int:
    slim = args.types or args.types_from
    if slim and args.format != "c":
        raise InputError(None, "--types and --types-from need --format c")
    if args.cflags is not None and not any(p.endswith(".c") for p in args.types_from or ()):
        raise InputError(None, "--cflags goes with --types-from PROG.bpf.c")
    inputs = args.inputs or [reader.DEFAULT_INPUT]
    args.input = inputs[0]
    if len(inputs) > 1:
        if args.format != "c":
            raise InputError(None, "several inputs (a base and its modules) need --format c")
        if args.base:
            raise InputError(None, "--base goes with one module; with several inputs the "
                             "first is the base")
    refuse_overwriting_input_paths(args, inputs[1:])
    btf = _merged_inputs(inputs) if len(inputs) > 1 else reader.load_with_base(args.input,
                                                                                args.base)
    if slim:
        return _dump_slim(args, btf)
    if args.format == "raw":
        from .emit.raw import dump_raw as emit
    elif args.format == "json":
        from .emit.json import dump_json as emit
    else:
        from .emit.c.header import dump_c as emit
    with _naming(args.input), _text_output(args.output) as out:
        emit(btf, out)
    return EXIT_OK


def _merged_inputs(paths: list[str]):
    """The base (first path) and its modules (split BTF over it) as one BTF."""
    from .canon.merge import merged

    base = reader.load(paths[0])
    modules = [reader.load(path, base) for path in paths[1:]]
    with _naming(paths[0]):
        return merged(base, modules)


def _dump_slim(args: argparse.Namespace, btf) -> int:
    from .emit import slim

    with _naming(args.input):
        selection = slim.Selection()
        for path in args.types_from or ():
            if path.endswith(".c"):
                from .emit.slim_source import select_source

                select_source(btf, path, args.cflags, selection)
            else:
                slim.select_object(btf, path, selection)
        for text in args.types or ():
            slim.select_names(btf, slim.split_names(text), selection)
    with _naming(args.input), _text_output(args.output) as out:
        slim.dump_slim(btf, selection, out)
    return EXIT_OK


def cmd_sort(args: argparse.Namespace) -> int:
    from .btf import writer
    from .canon import canonicalize
    from .output import write_atomically

    btf = reader.load_with_base(args.input, args.base)
    if args.output is None or args.output == "-":
        if sys.stdout.isatty():
            raise InputError(None, "refusing to write binary BTF to a terminal; give -o OUT")
    elif args.in_place:
        refuse_overwriting_input(args.output, [args.base])
    else:
        refuse_overwriting_input_paths(args)
    with _naming(args.input):
        result = canonicalize(btf, dedup=args.dedup, order=args.order)
    write_atomically(args.output, writer.write(result))
    if args.dedup and args.output not in (None, "-"):
        print(f"{args.input}: {len(btf)} types in, {len(result)} types out", file=sys.stderr)
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from .gcpause import paused_gc

    with paused_gc():
        from .diff import compiled_report, diff_btfs

        old = reader.load_with_base(args.old, args.base_old)
        new = reader.load_with_base(args.new, args.base_new)
        made = compiled_report(old, new, json=args.format == "json")
        if made is not None:
            with atomic_output(None) as out:
                out.write(made[0])
            return EXIT_FINDING if made[1] else EXIT_OK
        result = diff_btfs(old, new)
    from .diff.text import render_json, render_text

    with _text_output(None) as out:
        (render_json if args.format == "json" else render_text)(result, out)
    return EXIT_FINDING if result else EXIT_OK


def cmd_encode(args: argparse.Namespace) -> int:
    from .btf import writer
    from .dwarf.encode import encode_file, kind_counts, shuffle_seed_from_env
    from .dwarf.features import describe, parse_features
    from .output import write_atomically

    if args.list_features:
        sys.stdout.write(describe())
        return EXIT_OK
    if args.input is None:
        raise InputError(None, "encode: the ELF file to encode is missing")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(None, f"-j must be at least 1, not {args.jobs}")
    features = parse_features(args.features)
    # Raw BTF goes to -o, or to stdout when neither -o nor --elf-out says where to go.
    to_stdout = args.output == "-" or (args.output is None and args.elf_out is None)
    if to_stdout and sys.stdout.isatty():
        raise InputError(None, "refusing to write binary BTF to a terminal; give -o OUT")
    if args.output not in (None, "-"):
        refuse_overwriting_input(args.output, [args.input, args.base])
    if args.elf_out is not None:
        from .elf.write import find_objcopy, laid_out_here

        if not laid_out_here(args.input):
            find_objcopy()  # none: fail now, not after the encode
        if not args.in_place:
            refuse_overwriting_input(args.elf_out, [args.input, args.base])
    note = missing_core_note()
    if note:
        print(f"canonbtf: {note}", file=sys.stderr)
    base = reader.load(args.base) if args.base else None
    btf, stats = encode_file(args.input, args.jobs, shuffle_seed_from_env(),
                             args.dwarf_reader, progress=sys.stderr.isatty(),
                             features=features, base=base)
    try:
        data = writer.write(btf)
    except ValueError as e:
        raise InputError(args.input, f"its DWARF gives BTF it cannot hold: {e}") from None
    if to_stdout or args.output is not None:
        write_atomically(None if to_stdout else args.output, data)
    if args.elf_out is not None:
        from .elf.write import find_objcopy, write_elf_with_btf

        for message in write_elf_with_btf(find_objcopy, args.input, data, args.elf_out):
            print(f"canonbtf: {args.elf_out}: objcopy: {message}", file=sys.stderr)
    kinds = ", ".join(f"{kind} {count}" for kind, count in kind_counts(btf).items())
    seconds = stats.seconds_workers + stats.seconds_merge
    print(f"canonbtf: {args.input}: {len(btf)} types ({kinds}) from {stats.units} units "
          f"({stats.type_dies} type DIEs), {len(data)} bytes, {seconds:.1f}s "
          f"(units {stats.seconds_workers:.1f}s, "
          f"merge {stats.seconds_merge:.1f}s)", file=sys.stderr)
    report = stats.functions
    if report.inconsistent or report.nocall or report.overlapping_variables:
        dropped = [f"{len(report.inconsistent)} with prototypes that differ between units",
                   f"{len(report.nocall)} marked DW_CC_nocall",
                   f"{report.overlapping_variables} overlapping variables"]
        print(f"canonbtf: {args.input}: functions: {report.kept} encoded; dropped "
              f"{', '.join(dropped)}", file=sys.stderr)
    if stats.skips:
        skipped = "; ".join(f"{reason} x{count}" for reason, count in sorted(stats.skips.items()))
        print(f"canonbtf: {args.input}: skipped: {skipped}", file=sys.stderr)
    return EXIT_OK


def refuse_overwriting_input_paths(args: argparse.Namespace, more: list[str] = ()) -> None:
    if args.output and args.output != "-":
        refuse_overwriting_input(args.output, [args.input, getattr(args, "base", None),
                                               *(getattr(args, "types_from", None) or ()),
                                               *more])


EXIT_STATUS_TEXT = ("Exit status: 0 done, 1 check found violations or diff found "
                    "differences, 2 the job could not be done.")


def commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line summary, parser) of each command, in the parser's order."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(name, sub.summary, sub) for name, sub in action.choices.items()]


def example(sub: argparse.ArgumentParser) -> str:
    """A command's example: its epilog, `Example: canonbtf ...`."""
    return (sub.epilog or "").removeprefix("Example: ")


def command_table(parser: argparse.ArgumentParser) -> str:
    """`canonbtf --help`'s list: one line per command, its summary and an example."""
    rows = commands(parser)
    width = max(len(name) for name, _, _ in rows)
    summary_width = max(len(summary) for _, summary, _ in rows)
    lines = [f"  {name:<{width}}  {summary:<{summary_width}}  {example(sub)}"
             for name, summary, sub in rows]
    return "commands (canonbtf COMMAND --help for its options):\n" + "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="canonbtf",
        description="Canonical, reproducible BTF: a total order on types that depends only on "
                    "what the types are, so the same types always give the same bytes.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version",
                        version=f"canonbtf {__version__} (canonical order v{ORDER_VERSION}, "
                                f"{active_core()})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                help="one of the commands below")
    sub.required = True
    for add_command in (_add_check, _add_dump, _add_sort, _add_diff, _add_encode):
        add_command(sub)
    parser.epilog = command_table(parser) + "\n\n" + EXIT_STATUS_TEXT
    return parser


def _command(sub, name: str, func, summary: str, description: str,
             example: str) -> argparse.ArgumentParser:
    """A subcommand's parser, `func` running it, `example` its epilog (and its line in
    `canonbtf --help`, the man page and nowhere else)."""
    parser = sub.add_parser(name, description=description, epilog=f"Example: {example}")
    parser.set_defaults(func=func)
    parser.summary = summary
    return parser


def _add_check(sub) -> None:
    p = _command(sub, "check", cmd_check, "validate BTF against the kernel's rules",
                 "Validate BTF against the kernel's rules; with --kernel also ask the running "
                 "kernel (BPF_BTF_LOAD, needs root).",
                 "canonbtf check /sys/kernel/btf/vmlinux --kernel")
    _add_input(p)
    p.add_argument("--kernel", action="store_true",
                   help="also load the blob into the running kernel and print its verdict")


def _add_dump(sub) -> None:
    p = _command(sub, "dump", cmd_dump, "print BTF as bpftool-style raw text, JSON or C",
                 "Print BTF: 'raw' is what `bpftool btf dump file IN format raw` prints, "
                 "'json' the form in docs/JSON.md, 'c' a vmlinux.h (with modules after the "
                 "base: one header for all).",
                 "canonbtf dump --format c --types-from prog.bpf.c -o vmlinux.h")
    p.add_argument("inputs", nargs="*", metavar="IN",
                   help="raw BTF, an ELF with a .BTF section, or split BTF with --base "
                        f"(default: {reader.DEFAULT_INPUT}); with --format c, further files "
                        "are modules' split BTF over the first (raw, ELF, "
                        "/sys/kernel/btf/MODULE), all in one header")
    _add_base(p)
    p.add_argument("--format", "-f", choices=("raw", "json", "c"), default="raw",
                   help="output format (default: raw)")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")
    p.add_argument("--types", action="append", metavar="NAME[,NAME...]",
                   help="with --format c: a slim header of these types ('struct foo' or "
                        "'foo'; kfuncs and enumerators too) and what they need")
    p.add_argument("--types-from", action="append", metavar="PROG.bpf.o|PROG.bpf.c",
                   help="with --format c: a slim header of the types a BPF program uses: "
                        "of an object, its CO-RE relocations and BTF; of a C source (.c), "
                        "what clang finds it uses; repeatable, adds to --types")
    p.add_argument("--cflags", metavar="FLAGS",
                   help="with --types-from PROG.bpf.c: the flags the program is compiled "
                        "with (one string, shell-quoted; -target bpf unless it names one)")


def _add_sort(sub) -> None:
    p = _command(sub, "sort", cmd_sort, "put BTF into the canonical order (docs/ORDER.md)",
                 f"Write IN's types in canonical order v{ORDER_VERSION} (docs/ORDER.md), every "
                 "reference renumbered and the string section rebuilt; the same types always "
                 "give the same bytes. Split BTF: only the module's types move.",
                 "canonbtf sort vmlinux --dedup -o vmlinux.btf")
    _add_input(p)
    p.add_argument("-o", "--output", metavar="OUT",
                   help="where to write the raw BTF (written atomically; '-' for stdout)")
    p.add_argument("--dedup", action="store_true",
                   help="merge structurally identical types and resolve forward declarations")
    p.add_argument("--order", choices=("kind", "name"), default="kind",
                   help="primary key: kind (default) or name (the kernel's 2026 name order)")
    p.add_argument("--in-place", action="store_true",
                   help="allow -o to name the input file itself")


def _add_diff(sub) -> None:
    p = _command(sub, "diff", cmd_diff, "what changed between two BTFs, type by type",
                 "Compare two BTFs type by type: types are matched by kind and name "
                 "(anonymous ones through the named types holding them), never by id, so "
                 "renumbered but identical types are not reported. Exit status like diff(1): "
                 "0 same, 1 different, 2 trouble.",
                 "canonbtf diff old/vmlinux new/vmlinux")
    p.add_argument("old", metavar="OLD", help="the old BTF (raw, ELF with .BTF, or split)")
    p.add_argument("new", metavar="NEW", help="the new BTF")
    p.add_argument("--base-old", metavar="B1", help="base BTF of OLD when OLD is split BTF")
    p.add_argument("--base-new", metavar="B2", help="base BTF of NEW when NEW is split BTF")
    p.add_argument("--format", "-f", choices=("text", "json"), default="text",
                   help="text for people (default), json for tools")


def _add_encode(sub) -> None:
    p = _command(sub, "encode", cmd_encode, "DWARF to canonical BTF, in parallel",
                 "Encode the DWARF types of an ELF file (vmlinux, a .o) as deduplicated BTF in "
                 "canonical order: the same bytes for every -j and every run. Progress goes to "
                 "stderr when it is a terminal, then a one-line summary.",
                 "canonbtf encode -j4 vmlinux -o vmlinux.btf")
    p.add_argument("input", metavar="ELF", nargs="?",
                   help="an ELF file with DWARF (.debug_info): vmlinux, a module, a .o")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="where to write the raw BTF (written atomically; default stdout "
                        "unless it is a terminal or --elf-out is given)")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="worker processes (default: the number of CPUs; 1 runs in-process)")
    p.add_argument("--base", "-B", metavar="BASE",
                   help="base BTF (raw, or an ELF with .BTF: vmlinux): encode split BTF "
                        "for a module, referencing equal base types by their base ids")
    p.add_argument("--features", metavar="LIST",
                   help="edit the default feature set: name or +name on, -name off, all, "
                        "none, default (comma-separated; see --list-features, "
                        "docs/ENCODE.md)")
    p.add_argument("--list-features", action="store_true",
                   help="print every feature with 'default' or 'optional' and exit")
    p.add_argument("--elf-out", metavar="ELF_OUT",
                   help="also write a copy of the input ELF with the .BTF section added or "
                        "replaced (a module or .o laid out in-process; anything else needs "
                        "objcopy: $OBJCOPY, objcopy or llvm-objcopy)")
    p.add_argument("--in-place", action="store_true",
                   help="allow --elf-out to name the input file itself")
    p.add_argument("--dwarf-reader", choices=("fast", "pyelftools"), default="fast",
                   help="DIE decoder: the fast one (default) or pyelftools' own, slow, "
                        "for cross-checking")


def _inputs(args: argparse.Namespace) -> str:
    if hasattr(args, "old"):
        return f"{args.old}, {args.new}"
    return args.input


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as e:
        print(f"canonbtf: {e}", file=sys.stderr)
        return EXIT_TROUBLE
    except RecursionError:
        # The layers follow references recursively where real BTF nests a few dozen deep;
        # input nested thousands deep ends here rather than in a traceback.
        print(f"canonbtf: {_inputs(args)}: types are nested too deeply to process",
              file=sys.stderr)
        return EXIT_TROUBLE
    except MemoryError:
        print(f"canonbtf: {_inputs(args)}: out of memory", file=sys.stderr)
        return EXIT_TROUBLE
    except KeyboardInterrupt:
        print("canonbtf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            sys.stdout = None
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
