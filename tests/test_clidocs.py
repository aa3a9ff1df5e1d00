"""Man pages, bash completion and `canonbtf --help`, generated from the parsers.

Judges: the parsers themselves (every command and option appears, so nothing can drift),
groff (the pages render without warnings), bash (the completion function, called as
bash-completion calls it, on partial lines), pip and man (a fresh install puts the pages
and completion under <prefix>/share, where `man` finds them).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from canonbtf import clidocs
from canonbtf.cli import build_parser, main
from canonbtf.pahole import front as pahole_front

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    share = tmp_path_factory.mktemp("share")
    clidocs.write_files(str(share))
    return share


def test_pahole_options_are_read_from_its_parser():
    options = clidocs.pahole_options()
    for option in ("-J", "-j", "--btf_base", "--btf_encode_detached", "--btf_features",
                   "--lang_exclude", "--version", *pahole_front.LEGACY_FLAGS):
        assert option in options, option
    assert "-" not in options and "--" not in options
    # Every option the parser takes is described.
    assert set(options) <= set(clidocs.PAHOLE_HELP), set(options) - set(clidocs.PAHOLE_HELP)
    # ... and each one listed is accepted by the parser.
    for option in options:
        value = {"--btf_base": ["b"], "--btf_encode_detached": ["=f"],
                 "--btf_features": ["=var"], "--btf_features_strict": ["=var"],
                 "--lang_exclude": ["=rust"]}.get(option, [])
        argv = [option + value[0]] if value and value[0].startswith("=") else [option, *value]
        pahole_front.parse_args([*argv, "vmlinux"])


def test_man_page_has_every_command_and_option(generated):
    page = (generated / "man/man1/canonbtf.1").read_text()
    for name, _, sub in clidocs.commands(build_parser()):
        assert f'.SH "CANONBTF {name.upper()}"' in page, name
        for action in sub._actions:
            for option in set(action.option_strings) - {"-h", "--help"}:
                assert f"\\fB{option.replace('-', chr(92) + '-')}\\fR" in page, option
    pahole = (generated / "man/man1/canonbtf-pahole.1").read_text()
    for option in clidocs.pahole_options():
        assert f"\\fB{option.replace('-', chr(92) + '-')}\\fR" in pahole, option


@pytest.mark.parametrize("page", ["canonbtf.1", "canonbtf-pahole.1"])
def test_man_pages_render_without_warnings(generated, page):
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    done = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z",
                           str(generated / "man/man1" / page)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr


def complete(script: Path, function: str, line: str, cwd: Path) -> list[str]:
    """What `function` offers for the last word of `line` (a line ending in a space
    completes an empty word), as bash-completion calls it."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    words = shlex.split(line) + ([""] if line.endswith(" ") else [])
    program = (f"source {shlex.quote(str(script))}\n"
               f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\nCOMP_LINE={shlex.quote(line)}\n"
               f"COMP_POINT={len(line)}\n{function}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    done = subprocess.run([bash, "--norc", "-c", program], capture_output=True, text=True,
                          cwd=cwd)
    assert done.returncode == 0, done.stderr
    return sorted(w for w in done.stdout.split("\n") if w)


def test_completion_on_partial_lines(generated, tmp_path):
    script = generated / "bash-completion/completions/canonbtf"
    (tmp_path / "vmlinux.btf").write_bytes(b"")
    (tmp_path / "vmlinux.h").write_bytes(b"")
    (tmp_path / "other").write_bytes(b"")
    cases = {
        "canonbtf ": ["check", "diff", "dump", "encode", "sort"],
        "canonbtf d": ["diff", "dump"],
        "canonbtf -": ["--help", "--version"],
        "canonbtf dump --fo": ["--format"],
        "canonbtf dump --format ": ["c", "json", "raw"],
        "canonbtf dump -f j": ["json"],
        "canonbtf sort --order ": ["kind", "name"],
        "canonbtf diff --format ": ["json", "text"],
        "canonbtf dump --types-f": ["--types-from"],
        "canonbtf dump vm": ["vmlinux.btf", "vmlinux.h"],
        "canonbtf dump --format c -o vmlinux.": ["vmlinux.btf", "vmlinux.h"],
        "canonbtf encode -j ": [],
        "canonbtf check --k": ["--kernel"],
    }
    for line, expected in cases.items():
        assert complete(script, "_canonbtf", line, tmp_path) == expected, line
    pahole = generated / "bash-completion/completions/canonbtf-pahole"
    assert complete(pahole, "_canonbtf_pahole", "canonbtf-pahole --btf_f", tmp_path) == [
        "--btf_features", "--btf_features_strict"]
    assert complete(pahole, "_canonbtf_pahole", "canonbtf-pahole -J oth", tmp_path) == [
        "other"]


def test_help_lists_each_command_with_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for name, summary, sub in clidocs.commands(build_parser()):
        lines = [line for line in text.splitlines() if line.startswith(f"  {name} ")]
        assert len(lines) == 1, name
        assert summary in lines[0] and f"canonbtf {name} " in lines[0], lines[0]
        assert sub.epilog == f"Example: {clidocs.example(sub)}"


def test_pip_install_puts_pages_and_completion_under_share(tmp_path):
    """A fresh venv, `pip install .` (no network: --no-deps, this setuptools): the files
    appear under <venv>/share, and man finds the pages through PATH."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps",
                           "--no-build-isolation", str(ROOT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    share = venv / "share"
    for relative in clidocs.generated_files():
        assert (share / relative).is_file(), relative
    man = shutil.which("man")
    if man is None:
        pytest.skip("man is not installed: the pages were installed, not looked up")
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}")
    env.pop("MANPATH", None)
    for page in ("canonbtf", "canonbtf-pahole"):
        found = subprocess.run([man, "-w", page], capture_output=True, text=True, env=env)
        assert found.stdout.strip() == str(share / "man/man1" / f"{page}.1"), found.stderr


def test_generated_files_do_not_depend_on_the_terminal(monkeypatch):
    """argparse wraps to the terminal's width; the installed files must not."""
    monkeypatch.setenv("COLUMNS", "40")
    narrow = clidocs.generated_files()
    monkeypatch.setenv("COLUMNS", "200")
    assert clidocs.generated_files() == narrow
