"""What a BPF program's source uses of vmlinux.h, asked of clang (`--types-from prog.bpf.c`).

An object cannot tell everything its slim header needs: enumerators used as constants,
the typedefs libbpf's headers declare helpers with and the types inline helpers of
included headers read leave no trace in its BTF. The source can. clang preprocesses
the translation unit with the program's own flags against the full header canonbtf
makes; every identifier outside vmlinux.h that names one of its typedefs, enumerators or
kfuncs is kept, and every `struct`/`union`/`enum` tag it spells (defined when used by
value, declared when only pointed to). clang then compiles the translation unit against
the slim header: each type it reports incomplete is defined, until it compiles.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..btf import format as f
from ..btf.model import Btf
from ..errors import InputError
from .c.header import dump_c

HEADER_NAME = "vmlinux.h"
# Rounds of "define what clang says is incomplete" before giving up: each adds at least
# one definition, and real programs settle in two or three.
_MAX_ROUNDS = 50
_LINE_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"')
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_TOKEN = re.compile(r"[A-Za-z_]\w*|->|\.\.\.|[^\sA-Za-z_]")
_INCOMPLETE = re.compile(r"(?:incomplete|forward declaration).*?'(struct|union) (\w+)'")
_TAG_WORDS = ("struct", "union", "enum")


def clang_command() -> str:
    """The clang to ask: $CLANG, else `clang` on PATH; an InputError when there is none."""
    found = shutil.which(os.environ.get("CLANG", "clang"))
    if found is None:
        raise InputError(None, "--types-from with a C source needs clang ($CLANG or clang "
                         "on PATH)")
    return found


def source_flags(cflags: str | None) -> list[str]:
    """The program's compiler flags, with `-target bpf` unless they name a target."""
    flags = shlex.split(cflags or "")
    if not any(a in ("-target", "--target") or a.startswith("--target=") for a in flags):
        flags = ["-target", "bpf", *flags]
    # -M* and -o would make clang write files; -c/-S are replaced by ours.
    kept, skip = [], False
    for a in flags:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif a not in ("-c", "-S", "-E", "-MD", "-MMD", "-M", "-MM", "-MP"):
            kept.append(a)
    return kept


class SourceUse:
    """Names a translation unit uses of vmlinux.h: tags to define, tags to declare,
    and plain identifiers (typedefs, enumerators, kfuncs)."""

    def __init__(self) -> None:
        self.defined: set[tuple[str, str]] = set()
        self.pointed: set[tuple[str, str]] = set()
        self.declared_here: set[tuple[str, str]] = set()
        self.plain: set[str] = set()

    def read(self, text: str) -> None:
        """Add the uses in preprocessed C `text` (vmlinux.h's own lines left out)."""
        tokens = _TOKEN.findall(_LITERAL.sub(" ", text))
        for i, token in enumerate(tokens):
            if token in _TAG_WORDS:
                if i + 1 < len(tokens) and _is_name(tokens[i + 1]):
                    name = tokens[i + 1]
                    after = tokens[i + 2] if i + 2 < len(tokens) else ""
                    # `struct foo *p` needs only a declaration, `struct foo;` is one.
                    target = (self.pointed if after == "*" else self.declared_here
                              if after == ";" else self.defined)
                    target.add((token, name))
            elif _is_name(token) and (i == 0 or tokens[i - 1] not in (".", "->", *_TAG_WORDS)):
                self.plain.add(token)


def _is_name(token: str) -> bool:
    return token[0].isalpha() or token[0] == "_"


def outside_header(preprocessed: str, header_paths: set[str]) -> Iterator[str]:
    """The lines of clang -E output that come from files other than `header_paths`."""
    inside = False
    for line in preprocessed.splitlines():
        marker = _LINE_MARKER.match(line)
        if marker:
            inside = _unescape(marker.group(2)) in header_paths
            continue
        if line.startswith("#"):
            continue  # #pragma lines
        if not inside:
            yield line


def _unescape(path: str) -> str:
    return re.sub(r"\\(.)", r"\1", path)


class _Workspace:
    """A directory holding the header clang reads as vmlinux.h, and the overlay that
    puts it in place of every other vmlinux.h the program would include."""

    def __init__(self, root: str, clang: str, source: str, flags: list[str]):
        self.clang, self.source, self.flags = clang, source, flags
        self.header = os.path.join(root, "include", HEADER_NAME)
        os.makedirs(os.path.dirname(self.header))
        self.overlay = os.path.join(root, "overlay.json")
        self.replaced: set[str] = set()

    def run(self, args: list[str]) -> subprocess.CompletedProcess:
        command = [self.clang, *self.flags, "-I", os.path.dirname(self.header)]
        if self.replaced:
            command += ["-ivfsoverlay", self.overlay]
        try:
            return subprocess.run([*command, *args, self.source], capture_output=True,
                                  text=True, encoding="latin-1")
        except OSError as e:
            raise InputError(self.source, f"could not run {self.clang}: {e}") from None

    def preprocess(self) -> str:
        """clang -E of the program with the header in place; the overlay grows until
        every vmlinux.h the program includes is ours."""
        while True:
            done = self.run(["-E"])
            found = {_unescape(m.group(2)) for m in
                     map(_LINE_MARKER.match, done.stdout.splitlines()) if m}
            others = {p for p in found if os.path.basename(p) == HEADER_NAME
                      and p != self.header and os.path.isfile(p)} - self.replaced
            if others:
                # An old vmlinux.h found first (beside the source): ours goes in its place.
                self.replaced |= {os.path.realpath(p) for p in others} | others
                self._write_overlay()
                continue
            if done.returncode != 0:
                raise InputError(self.source, "clang could not preprocess it: "
                                 + _first_error(done.stderr))
            if self.header not in found and not self.replaced:
                raise InputError(self.source, f"it does not include {HEADER_NAME}")
            return done.stdout

    def _write_overlay(self) -> None:
        roots = [{"name": path, "type": "file", "external-contents": self.header}
                 for path in sorted(self.replaced)]
        with open(self.overlay, "w", encoding="utf-8") as out:
            json.dump({"version": 0, "case-sensitive": "true", "roots": roots}, out)

    def paths(self) -> set[str]:
        return {self.header, *self.replaced}


def _first_error(stderr: str) -> str:
    for line in stderr.splitlines():
        if "error" in line:
            return line.strip()
    return stderr.strip().splitlines()[0] if stderr.strip() else "(no message)"


def select_source(btf: Btf, path: str, cflags: str | None, selection) -> None:
    """Add to `selection` what the C source `path`, compiled with `cflags`, uses of
    `btf`'s header (see the module docstring); an InputError when clang cannot compile it
    against the full header, or its slim header does not compile it."""
    from . import slim

    if not os.path.isfile(path):
        raise InputError(path, "no such file")
    clang = clang_command()
    flags = source_flags(cflags)
    with tempfile.TemporaryDirectory(prefix="canonbtf-slim-") as root:
        work = _Workspace(root, clang, os.path.abspath(path), flags)
        with open(work.header, "w", encoding="latin-1", newline="\n") as out:
            dump_c(btf, out)
        use = SourceUse()
        use.read("\n".join(outside_header(work.preprocess(), work.paths())))
        full = work.run(["-fsyntax-only"])
        if full.returncode != 0:
            raise InputError(path, "clang cannot compile it against the full header: "
                             + _first_error(full.stderr))
        apply_use(slim.slim_index(btf), use, selection)
        _complete(work, btf, selection, path)


def apply_use(index, use: SourceUse, selection) -> None:
    """Add the definitions and declarations `use` names that the header has."""
    types = index.header.types
    for word, name in use.defined:
        selection.defs.update(index.tag(word, name))
    for word, name in use.pointed - use.defined - use.declared_here:
        for d in index.tag(word, name):
            (selection.declare if types[d].kind in (f.STRUCT, f.UNION)
             else selection.defs).add(d)
    for name in use.plain:
        typedefs = [d for d in index.plain.get(name, ()) if types[d].kind == f.TYPEDEF]
        if typedefs:
            selection.defs.update(typedefs)
        elif name in index.kfuncs:
            selection.kfuncs.add(index.kfuncs[name])
        else:
            d = index.enumerator(name)
            if d is not None:
                selection.defs.add(d)


def _complete(work: _Workspace, btf: Btf, selection, path: str) -> None:
    """Compile against the slim header; define each struct or union clang finds
    incomplete, until it compiles."""
    import io

    from . import slim

    index = slim.slim_index(btf)
    for _ in range(_MAX_ROUNDS):
        text = io.StringIO()
        slim.dump_slim(btf, selection, text)
        with open(work.header, "w", encoding="latin-1", newline="\n") as out:
            out.write(text.getvalue())
        done = work.run(["-fsyntax-only", "-ferror-limit=0"])
        if done.returncode == 0:
            return
        before = len(selection.defs)
        for word, name in set(_INCOMPLETE.findall(done.stderr)):
            selection.defs.update(index.tag(word, name))
        if len(selection.defs) == before:
            raise InputError(path, "its slim header does not compile it: "
                             + _first_error(done.stderr))
    raise InputError(path, f"its slim header still does not compile it after "
                     f"{_MAX_ROUNDS} rounds")


def libbpf_probe_source() -> str:
    """A program that includes vmlinux.h and libbpf's BPF headers and uses nothing."""
    return "".join(f"#include {h}\n" for h in
                   ('"vmlinux.h"', "<bpf/bpf_helpers.h>", "<bpf/bpf_tracing.h>",
                    "<bpf/bpf_core_read.h>", "<bpf/bpf_endian.h>"))


def write_probe(directory: str) -> str:
    """`libbpf_probe_source()` written to `directory`; its path."""
    path = Path(directory) / "libbpf_probe.bpf.c"
    path.write_text(libbpf_probe_source(), encoding="ascii")
    return str(path)
