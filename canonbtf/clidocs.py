"""Man pages and bash completion, generated from the command lines themselves.

`canonbtf(1)` and the completion of `canonbtf` read cli.build_parser()'s argparse
definitions; `canonbtf-pahole(1)` and its completion read the options pahole/front.py's
parser compares its arguments with (its code, parsed), so an option added there appears
here without a second list to keep. setup.py writes the files at build time
(`python3 -m canonbtf.clidocs DIR`: DIR/man/man1/*.1, DIR/bash-completion/completions/*),
and they are installed under <prefix>/share.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
import textwrap
from pathlib import Path

from .cli import EXIT_STATUS_TEXT, build_parser, commands, example

# Value placeholders that are not file names: the completion offers nothing for them.
_NOT_FILES = {"N", "LIST", "FLAGS", "NAME[,NAME...]"}
# canonbtf-pahole's options: what each does here and the value it takes. Only those its
# parser accepts are printed (pahole_options()); tests/test_clidocs.py checks every one it
# accepts has a line here.
PAHOLE_HELP = {
    "-J": ("", "encode BTF (pahole's --btf_encode); with no --btf_encode_detached, the "
               ".BTF section is written into FILE in place (a module laid out again "
               "in-process, vmlinux via objcopy)"),
    "--btf_encode": ("", "as -J"),
    "--btf_encode_detached": ("=FILE", "write the raw BTF to FILE instead (gen-btf.sh, "
                                       "kernels since 2026: then in name order)"),
    "--btf_base": (" FILE", "encode FILE (a module) as split BTF over this base (vmlinux)"),
    "-j": ("[N]", "N worker processes (no N: one per CPU); the output is the same for "
                  "every N"),
    "--jobs": ("[=N]", "as -j"),
    "--btf_features": ("=LIST", "pahole's feature names (docs/PAHOLE.md); unknown ones are "
                                "ignored, as pahole ignores them"),
    "--btf_features_strict": ("=LIST", "as --btf_features, an unknown name is an error"),
    "--lang_exclude": ("=LANGS", "skip units in these DWARF languages (e.g. rust)"),
    "--btf_gen_floats": ("", "legacy flag: encode FLOAT types"),
    "--skip_encoding_btf_vars": ("", "legacy flag: no VAR/DATASEC"),
    "--skip_encoding_btf_inconsistent_proto": ("", "legacy flag: no FUNC for functions "
                                                   "whose prototypes differ between units"),
    "--btf_gen_optimized": ("", "legacy flag: accepted; optimized clones get no FUNC"),
    "--skip_encoding_btf_enum64": ("", "legacy flag: no ENUM64"),
    "--skip_encoding_btf_type_tag": ("", "legacy flag: no TYPE_TAG"),
    "--skip_encoding_btf_decl_tag": ("", "legacy flag: no DECL_TAG"),
    "--btf_encode_force": ("", "legacy flag: accepted (what BTF cannot hold is skipped "
                               "anyway)"),
    "-V": ("", "verbose: what was skipped and why, and the phases' times"),
    "--verbose": ("", "as -V"),
    "--version": ("", "print the pahole version this front acts as, for Kbuild"),
    "--supported_btf_features": ("", "print the --btf_features names accepted"),
}


def pahole_options() -> list[str]:
    """Every option canonbtf-pahole accepts, in the order its parser tests them: the
    strings `parse_args` and `_parse_long` compare an argument with (`arg == "-J"`,
    `name in LEGACY_FLAGS`, `arg.startswith("-j")`)."""
    from .pahole import front as pahole_front

    found: dict[str, None] = {}
    for function in (pahole_front.parse_args, pahole_front._parse_long):
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        for node in ast.walk(tree):
            for value in _compared_strings(node, pahole_front):
                if value.startswith("-") and len(value) > 1 and value != "--":
                    found.setdefault(value, None)
    return list(found)


def _compared_strings(node: ast.AST, module) -> list[str]:
    if isinstance(node, ast.Compare) and _is_argument(node.left):
        values = []
        for right in node.comparators:
            if isinstance(right, ast.Name):
                values.extend(str(v) for v in getattr(module, right.id, ()))
            else:
                values.extend(c.value for c in ast.walk(right)
                              if isinstance(c, ast.Constant) and isinstance(c.value, str))
        return values
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith" and _is_argument(node.func.value)
            and node.args and isinstance(node.args[0], ast.Constant)):
        return [node.args[0].value]
    return []


def _is_argument(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("arg", "name")


# ---- the commands of canonbtf ------------------------------------------------------------

def _options(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in sub._actions if not isinstance(a, (argparse._HelpAction,
                                                          argparse._SubParsersAction))]


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _value_words(action: argparse.Action) -> list[str] | None:
    """Words that complete an option's value; None: file names; []: nothing."""
    if action.choices:
        return list(action.choices)
    if action.type is int or action.metavar in _NOT_FILES:
        return []
    return None


# ---- roff ---------------------------------------------------------------------------------

def _roff(text: str) -> str:
    """Text escaped for roff: backslashes, hyphens, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line
                     for line in text.split("\n"))


def _option_label(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"\\fI{_roff(action.metavar or action.dest)}\\fR"
    names = ", ".join(f"\\fB{_roff(o)}\\fR" for o in action.option_strings)
    if not _takes_value(action):
        return names
    value = "{" + ",".join(action.choices) + "}" if action.choices else (
        action.metavar or action.dest.upper())
    return f"{names} \\fI{_roff(str(value))}\\fR"


def canonbtf_man(parser: argparse.ArgumentParser, version: str) -> str:
    """canonbtf(1): a section per command, each with its usage, description, options
    and example."""
    out = [f'.TH CANONBTF 1 "" "canonbtf {version}" "User Commands"',
           ".SH NAME", "canonbtf \\- canonical, reproducible BTF",
           ".SH SYNOPSIS", ".B canonbtf", ".I COMMAND", "[\\fIOPTIONS\\fR] [\\fIFILE\\fR...]",
           ".br", ".B canonbtf \\-\\-version",
           ".SH DESCRIPTION", _roff(parser.description or ""), ".PP",
           "Commands, each with an example:"]
    for name, summary, sub in commands(parser):
        out += [".TP", f"\\fB{name}\\fR", _roff(summary), ".br",
                f"\\fB{_roff(example(sub))}\\fR"]
    for name, _, sub in commands(parser):
        # Wrapped here, not by argparse, whose width follows the terminal's.
        usage = textwrap.fill(" ".join(sub.format_usage().removeprefix("usage: ").split()),
                              78, subsequent_indent="    ", break_on_hyphens=False)
        out += [f'.SH "CANONBTF {name.upper()}"', ".nf", _roff(usage), ".fi", ".PP",
                _roff(sub.description or "")]
        for action in _options(sub):
            out += [".TP", _option_label(action), _roff(action.help or "")]
        if example(sub):
            out += [".PP", "Example:", ".PP", ".RS", ".nf", _roff(example(sub)), ".fi", ".RE"]
    out += [".SH EXIT STATUS", _roff(EXIT_STATUS_TEXT),
            ".SH ENVIRONMENT", ".TP", ".B CANONBTF_PURE",
            "When set (not 0), the pure\\-Python implementation runs instead of the "
            "compiled one; the output is the same.", ".TP", ".B CLANG",
            _roff("The clang that `dump --types-from PROG.bpf.c` asks (default: clang)."),
            ".SH SEE ALSO", "\\fBcanonbtf\\-pahole\\fR(1), \\fBpahole\\fR(1), "
            "\\fBbpftool\\-btf\\fR(8)"]
    return "\n".join(out) + "\n"


def pahole_man(version: str) -> str:
    """canonbtf-pahole(1): the options its parser accepts."""
    from .pahole.front import PAHOLE_VERSION

    out = [f'.TH CANONBTF\\-PAHOLE 1 "" "canonbtf {version}" "User Commands"',
           ".SH NAME", "canonbtf\\-pahole \\- pahole's BTF encoding for Kbuild, done by "
           "canonbtf",
           ".SH SYNOPSIS", ".B canonbtf\\-pahole", "[\\fIOPTIONS\\fR] \\fIFILE\\fR",
           ".br", ".B make PAHOLE=canonbtf\\-pahole",
           ".SH DESCRIPTION",
           _roff(f"Takes pahole's place in a kernel build: it accepts the options Kbuild "
                 f"passes to pahole (it reports itself as pahole {PAHOLE_VERSION}) and "
                 "writes canonical BTF, the same bytes for every -j and every build "
                 "machine. Any other option is refused with one line and exit status 2. "
                 "Every option, and since which kernel Kbuild passes it: docs/PAHOLE.md."),
           ".SH OPTIONS"]
    for option in pahole_options():
        value, text = PAHOLE_HELP.get(option, ("", ""))
        out += [".TP", f"\\fB{_roff(option)}\\fR\\fI{_roff(value)}\\fR", _roff(text)]
    out += [".SH EXIT STATUS", "0 done; 2 the job could not be done, with one line on "
            "stderr.", ".SH ENVIRONMENT", ".TP", ".B LLVM_OBJCOPY",
            "The objcopy to write .BTF into a file that is not relocatable, such as "
            "vmlinux (Kbuild sets it).", ".TP",
            ".B CANONBTF_PAHOLE_ORDER", "kind or name: the order of the output BTF.",
            ".SH SEE ALSO", "\\fBcanonbtf\\fR(1), \\fBpahole\\fR(1)"]
    return "\n".join(out) + "\n"


# ---- bash completion ----------------------------------------------------------------------

def _words(values) -> str:
    return " ".join(values)


def canonbtf_completion(parser: argparse.ArgumentParser) -> str:
    """The bash completion of canonbtf: commands, each command's options, the values of
    options with choices, and file names."""
    rows = commands(parser)
    names = [name for name, _, _ in rows]
    value_cases, option_cases, valued = [], [], []
    for name, _, sub in rows:
        opts = [o for a in _options(sub) for o in a.option_strings] + ["--help"]
        option_cases.append(f"        {name}) opts='{_words(opts)}' ;;")
        for action in _options(sub):
            if not action.option_strings or not _takes_value(action):
                continue
            words = _value_words(action)
            pattern = "|".join(f"{name}:{o}" for o in action.option_strings)
            valued.append(pattern)
            if words is not None:
                value_cases.append(f"        {pattern}) COMPREPLY=($(compgen -W "
                                   f"'{_words(words)}' -- \"$cur\")); return 0 ;;")
    return f"""# bash completion for canonbtf; generated by canonbtf.clidocs from its argument
# parser (do not edit).
_canonbtf()
{{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local cmd="" i opts
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            {'|'.join(names)}) cmd="${{COMP_WORDS[i]}}"; break ;;
        esac
    done
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
        else
            COMPREPLY=($(compgen -W '{_words(names)}' -- "$cur"))
        fi
        return 0
    fi
    case "$cmd:$prev" in
{chr(10).join(value_cases)}
        {'|'.join(valued) or 'none:none'}) _canonbtf_files; return 0 ;;
    esac
    if [[ $cur == -* ]]; then
        case "$cmd" in
{chr(10).join(option_cases)}
        esac
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return 0
    fi
    _canonbtf_files
}}

_canonbtf_files()
{{
    compopt -o filenames 2>/dev/null
    local IFS=$'\\n'
    COMPREPLY=($(compgen -f -- "${{COMP_WORDS[COMP_CWORD]}}"))
}}

complete -F _canonbtf canonbtf
"""


def pahole_completion() -> str:
    """The bash completion of canonbtf-pahole: its options, and file names."""
    options = pahole_options()
    return f"""# bash completion for canonbtf-pahole; generated by canonbtf.clidocs from its
# option parser (do not edit).
_canonbtf_pahole()
{{
    local cur="${{COMP_WORDS[COMP_CWORD]}}"
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '{_words(options)}' -- "$cur"))
        return 0
    fi
    compopt -o filenames 2>/dev/null
    local IFS=$'\\n'
    COMPREPLY=($(compgen -f -- "$cur"))
}}

complete -F _canonbtf_pahole canonbtf-pahole
"""


def generated_files() -> dict[str, str]:
    """Path (under <prefix>/share) -> content of every generated file."""
    from . import __version__

    parser = build_parser()
    return {
        "man/man1/canonbtf.1": canonbtf_man(parser, __version__),
        "man/man1/canonbtf-pahole.1": pahole_man(__version__),
        "bash-completion/completions/canonbtf": canonbtf_completion(parser),
        "bash-completion/completions/canonbtf-pahole": pahole_completion(),
    }


def write_files(directory: str) -> list[str]:
    """Write generated_files() under `directory`; the paths written."""
    written = []
    for relative, text in generated_files().items():
        path = Path(directory) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(str(path))
    return written


if __name__ == "__main__":
    for written_path in write_files(sys.argv[1] if len(sys.argv) > 1 else "build/share"):
        print(written_path)
