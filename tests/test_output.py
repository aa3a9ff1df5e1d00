"""Output discipline for every command that writes (sort, dump, encode): the output appears
whole or not at all, an existing file is untouched on error, and `-o` naming an input
(also through a symlink or a hard link) is refused unless sort is told `--in-place`.

Run through the real command line (`python -m canonbtf`), except where an interruption
has to land at an exact moment.
"""

from __future__ import annotations

import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from canonbtf import cli, native
from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.output import TEMP_PREFIX, atomic_output

from .conftest import REPO, corpus_path
from .fuzzing import handmade_btf

GOLDEN_OBJECT = REPO / "golden" / "obj" / "arrays.gcc-dwarf5.o"

# command name -> the arguments after the input, before `-o OUT`
WRITERS = {
    "sort": ["sort"],
    "sort --dedup": ["sort", "--dedup"],
    "dump raw": ["dump", "--format", "raw"],
    "dump json": ["dump", "--format", "json"],
    "dump c": ["dump", "--format", "c"],
    "encode": ["encode"],
}


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "canonbtf", *args], capture_output=True,
                          env=env, timeout=300, cwd=cwd)


def writer_argv(name: str, input_path: Path, out: Path | str) -> list[str]:
    command, *options = WRITERS[name]
    return [command, str(input_path), *options, "-o", str(out)]


def input_for(name: str, tmp: Path) -> Path:
    """A file the command reads: BTF, or for encode an object file with DWARF."""
    if name == "encode":
        if not GOLDEN_OBJECT.exists():
            pytest.skip(f"{GOLDEN_OBJECT} is not present")
        path = tmp / "input.o"
        shutil.copy(GOLDEN_OBJECT, path)
    else:
        path = tmp / "input.btf"
        path.write_bytes(writer.write(handmade_btf()))
    return path


def assert_clean_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    stderr = proc.stderr.decode("latin-1")
    assert proc.returncode == 2, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("canonbtf: "), stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def no_temporary_files(directory: Path) -> bool:
    return not [p for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX)]


def link_to(input_path: Path, how: str) -> Path:
    """Another name for the input: the same path, a symlink, a hard link, a detour."""
    if how == "same-path":
        return input_path
    if how == "relative-detour":
        return Path("..") / input_path.parent.name / input_path.name
    other = input_path.with_name("other-name")
    if how == "symlink":
        other.symlink_to(input_path.name)
    else:
        os.link(input_path, other)
    return other


@pytest.mark.parametrize("how", ["same-path", "symlink", "hard-link", "relative-detour"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_output_naming_the_input_is_refused(name, how, tmp_path):
    input_path = input_for(name, tmp_path)
    before = input_path.read_bytes()
    out = link_to(input_path, how)
    proc = run_cli(*writer_argv(name, input_path, out), cwd=tmp_path)
    assert_clean_error(proc, "output file is also an input")
    assert input_path.read_bytes() == before
    assert not input_path.is_symlink()
    assert no_temporary_files(tmp_path)


def split_pair(tmp: Path) -> tuple[Path, Path]:
    """A base and a small module on it, as files."""
    base = handmade_btf()
    builder = BtfBuilder(base)
    builder.struct("module_thing", 8, [("n", 4, 0)])
    base_path, module_path = tmp / "base.btf", tmp / "module.btf"
    base_path.write_bytes(writer.write(base))
    module_path.write_bytes(writer.write(builder.build()))
    return base_path, module_path


@pytest.mark.parametrize("command", [["sort"], ["sort", "--in-place"],
                                     ["dump", "--format", "raw"]])
def test_output_naming_the_base_is_refused(command, tmp_path):
    """Even --in-place allows replacing only the input, never its base."""
    base_path, module_path = split_pair(tmp_path)
    before = base_path.read_bytes()
    proc = run_cli(command[0], str(module_path), "--base", str(base_path), *command[1:],
                   "-o", str(base_path))
    assert_clean_error(proc, "output file is also an input")
    assert base_path.read_bytes() == before


@pytest.mark.parametrize("dedup", [[], ["--dedup"]])
def test_sort_in_place_replaces_the_input_with_its_sorted_form(dedup, tmp_path):
    input_path = input_for("sort", tmp_path)
    input_path.chmod(0o600)
    expected = tmp_path / "expected.btf"
    assert run_cli("sort", str(input_path), *dedup, "-o", str(expected)).returncode == 0
    proc = run_cli("sort", str(input_path), *dedup, "--in-place", "-o", str(input_path))
    assert proc.returncode == 0, proc.stderr
    assert input_path.read_bytes() == expected.read_bytes()
    assert stat.S_IMODE(input_path.stat().st_mode) == 0o600
    assert no_temporary_files(tmp_path)


def test_sort_in_place_through_a_symlink_replaces_the_file_it_points_to(tmp_path):
    input_path = input_for("sort", tmp_path)
    link = link_to(input_path, "symlink")
    expected = tmp_path / "expected.btf"
    assert run_cli("sort", str(input_path), "-o", str(expected)).returncode == 0
    proc = run_cli("sort", str(link), "--in-place", "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink()
    assert input_path.read_bytes() == expected.read_bytes()


def bad_input(name: str, tmp: Path) -> Path:
    if name == "encode":
        path = tmp / "input.o"
        path.write_bytes(input_for("encode", tmp).read_bytes()[:200])
    else:
        path = tmp / "input.btf"
        path.write_bytes(writer.write(handmade_btf())[:-3])
    return path


@pytest.mark.parametrize("name", list(WRITERS))
def test_an_error_leaves_no_output_and_an_existing_file_untouched(name, tmp_path):
    input_path = bad_input(name, tmp_path)
    fresh = tmp_path / "fresh.out"
    assert_clean_error(run_cli(*writer_argv(name, input_path, fresh)), str(input_path))
    assert not fresh.exists()
    existing = tmp_path / "existing.out"
    existing.write_bytes(b"old contents\n")
    assert_clean_error(run_cli(*writer_argv(name, input_path, existing)), str(input_path))
    assert existing.read_bytes() == b"old contents\n"
    assert no_temporary_files(tmp_path)


@pytest.mark.parametrize("name", list(WRITERS))
def test_output_that_cannot_be_written_is_one_clean_line(name, tmp_path):
    input_path = input_for(name, tmp_path)
    a_directory = tmp_path / "a-directory"
    a_directory.mkdir()
    assert_clean_error(run_cli(*writer_argv(name, input_path, a_directory)), "directory")
    missing = tmp_path / "no-such-dir" / "out"
    assert_clean_error(run_cli(*writer_argv(name, input_path, missing)), "cannot create")
    if Path("/dev/full").exists():
        assert_clean_error(run_cli(*writer_argv(name, input_path, "/dev/full")),
                           "cannot write output")
    assert no_temporary_files(tmp_path)


@pytest.mark.parametrize("name", list(WRITERS))
def test_output_to_a_device_is_written_through(name, tmp_path):
    """/dev/null cannot be replaced by renaming, and as root it must never be."""
    input_path = input_for(name, tmp_path)
    proc = run_cli(*writer_argv(name, input_path, "/dev/null"))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_interrupted_dump_leaves_nothing(tmp_path, monkeypatch, capsys):
    """Ctrl-C halfway through writing: exit 130, no output file, no temporary file."""
    import canonbtf.emit.raw as raw

    def interrupted(btf, out):
        out.write("[1] INT 'int' size=4\n" * 1000)
        out.flush()
        raise KeyboardInterrupt

    monkeypatch.setattr(raw, "dump_raw", interrupted)
    input_path = input_for("dump raw", tmp_path)
    out = tmp_path / "out.txt"
    assert cli.main(["dump", str(input_path), "-o", str(out)]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists()
    assert no_temporary_files(tmp_path)


def test_atomic_output_appears_only_when_complete(tmp_path):
    out = tmp_path / "out.bin"
    with pytest.raises(RuntimeError), atomic_output(str(out)) as fh:
        fh.write(b"half")
        assert not out.exists()
        raise RuntimeError("stop")
    assert not out.exists()
    assert no_temporary_files(tmp_path)
    with atomic_output(str(out)) as fh:
        fh.write(b"whole")
    assert out.read_bytes() == b"whole"


def test_sigint_during_sort_leaves_no_output(tmp_path):
    """A real Ctrl-C (SIGINT) while sort --dedup works on a vmlinux."""
    vmlinux = corpus_path("vmlinux-6.1.0-56-cloud-amd64.btf")
    out = tmp_path / "out.btf"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "canonbtf", "sort", str(vmlinux),
                             "--dedup", "-o", str(out)], env=env, stderr=subprocess.PIPE)
    time.sleep(0.6)  # into the work: sort --dedup of a vmlinux takes about 1.4 s here
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    if proc.returncode == 0:
        pytest.skip("sort finished before the interrupt arrived")
    assert proc.returncode == 130, stderr
    assert stderr.decode().strip() == "canonbtf: interrupted"
    assert not out.exists()
    assert no_temporary_files(tmp_path)


def _ended_by_entry(code: str) -> subprocess.CompletedProcess:
    """A process that runs `code`, then ends as the entry points do (entry._exit_now, then
    sys.exit with the same status). Without `site`, whose .pth files may register atexit
    callbacks of their own."""
    script = ("import sys\nfrom canonbtf.entry import _exit_now\n" + code
              + "\n_exit_now(3)\nprint('teardown', flush=True)\nsys.exit(3)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-S", "-c", script], capture_output=True,
                          text=True, env=env, timeout=60)


def test_a_process_ended_early_flushes_its_output_and_keeps_its_status():
    # Piped stdout is block-buffered: without the flush the text would be lost.
    proc = _ended_by_entry("print('kept', end=''); print('also', file=sys.stderr, end='')")
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "kept", "also")


@pytest.mark.parametrize("code", [
    "import atexit; atexit.register(print, 'atexit ran')",
    "import threading, time; threading.Thread(target=lambda: (time.sleep(0.2), "
    "print('atexit ran'))).start()",
])
def test_python_ends_a_process_with_work_left_at_exit(code):
    """An atexit callback or a thread still running: Python's own exit, which runs them."""
    proc = _ended_by_entry(code)
    assert proc.returncode == 3, proc.stderr
    assert sorted(proc.stdout.split()) == ["atexit", "ran", "teardown"]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_takes_the_allocator_settings_of_a_short_process():
    """native.keep_freed_memory (canonbtf-pahole's runs): glibc accepts both settings
    (mallopt refuses a mapping threshold past its largest, which would leave it as it
    was); in a process of its own, as it changes how the whole process allocates."""
    module = native.compiled("canonbtf._btf", "keep_freed_memory")
    if module is None:
        pytest.skip("canonbtf._btf is not built (no compiler, PyPy, or CANONBTF_PURE set)")
    proc = _ended_by_entry("from canonbtf import _btf\nprint(_btf.keep_freed_memory())")
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "True\n", "")


def test_module_sorts_against_its_base_in_place(tmp_path):
    base_path, module_path = split_pair(tmp_path)
    proc = run_cli("sort", str(module_path), "--base", str(base_path), "--in-place", "-o",
                   str(module_path))
    assert proc.returncode == 0, proc.stderr
    module = reader.load(str(module_path), reader.load(str(base_path)))
    assert [t.kind for _, t in module.own()] == [f.STRUCT]
