"""`encode --elf-out` and `canonbtf-pahole -J`: a copy of the input ELF with its .BTF
section added or replaced.

A relocatable file (a kernel module, a .o) is laid out again in this process
(relayout.py). Anything else (vmlinux, an executable, a file relayout does not take
whole) is written by binutils' objcopy (or llvm-objcopy), the tool kernel builds already
use for this: `$OBJCOPY` when set, else `objcopy`, else `llvm-objcopy` from PATH. objcopy
reads the input and writes a temporary file beside the output, which is renamed into
place only when objcopy succeeded, so the input is never modified and a failed run
leaves no output. A section that exists is replaced with `--update-section` (type, flags
and address kept); a new one is added with `--add-section` as a non-allocated, read-only
PROGBITS section, as pahole adds it to kernel modules.
"""

from __future__ import annotations

import os
import stat

from ..errors import InputError
from ..output import atomic_output, new_temporary
from .read import ET_REL, MAGIC, ElfImage, Unusual
from .relayout import Extent, planned

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

OBJCOPY_ENV = "OBJCOPY"
OBJCOPY_NAMES = ("objcopy", "llvm-objcopy")
SECTION = ".BTF"


def configured_command(variable: str) -> list[str] | None:
    """The command environment `variable` names (words split as a shell would, the first
    found in PATH), None when it is unset or empty; InputError when it names none."""
    import shlex
    import shutil

    configured = os.environ.get(variable)
    if not configured:
        return None
    command = shlex.split(configured)
    found = shutil.which(command[0]) if command else None
    if not found:
        raise InputError(None, f"{variable}={configured!r} is not a command found in PATH")
    return [found, *command[1:]]


def find_objcopy() -> list[str]:
    """The objcopy command to run; InputError (exit 2) when there is none."""
    import shutil

    configured = configured_command(OBJCOPY_ENV)
    if configured:
        return configured
    for name in OBJCOPY_NAMES:
        path = shutil.which(name)
        if path:
            return [path]
    raise InputError(None, "--elf-out needs binutils objcopy (or llvm-objcopy) to write the "
                           f".BTF section, and neither is in PATH; install binutils or set "
                           f"{OBJCOPY_ENV}=/path/to/objcopy")


def has_section(path: str, name: str = SECTION) -> bool:
    """Whether the ELF file `path` has section `name`; InputError if it is no ELF file."""
    with open(path, "rb") as fh:
        try:
            return name in ElfImage(fh).by_name
        except Unusual:  # pyelftools judges it
            pass
    from elftools.common.exceptions import ELFError, ELFParseError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as fh:
            return ELFFile(fh).get_section_by_name(name) is not None
    except (ELFError, ELFParseError) as e:
        raise InputError(path, f"not an ELF file ({e})") from None


def laid_out_here(path: str) -> bool:
    """Whether `path` is a relocatable ELF file, which relayout.py writes without
    objcopy (callers look for objcopy before a long encode only for the others)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(18)
    except OSError:
        return False
    if len(head) < 18 or head[:4] != MAGIC or head[5] not in (1, 2):
        return False
    return int.from_bytes(head[16:18], "little" if head[5] == 1 else "big") == ET_REL


def write_elf_with_btf(objcopy: Callable[[], list[str]], source: str, btf: bytes,
                       out_path: str) -> list[str]:
    """Write `source` with `btf` as its .BTF section to `out_path` (atomically); returns
    objcopy's warnings (its stderr lines) for the caller to show, if it ran."""
    return write_elf_with_sections(objcopy, source, {SECTION: btf}, out_path)


def write_elf_with_sections(objcopy: Callable[[], list[str]], source: str,
                            sections: dict[str, bytes], out_path: str) -> list[str]:
    """Write `source` with each of `sections` (name -> contents) added or replaced to
    `out_path`, atomically: laid out here when relayout.py takes the file, else in one
    run of the command `objcopy()` gives; returns objcopy's warnings."""
    if os.path.isdir(os.path.realpath(out_path)):
        raise InputError(out_path, "output is a directory")
    try:  # `planned` reads the header and says None for a file that is not ET_REL
        src = os.open(source, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        src = None  # objcopy says what is wrong with it
    if src is not None:
        try:
            try:
                st = os.fstat(src)
                pieces = planned(lambda offset, size: os.pread(src, size, offset), st.st_size,
                                 sections)
            except OSError as e:
                raise InputError(source, f"cannot read: {e.strerror or e}") from None
            if pieces is not None:
                with atomic_output(out_path, stat.S_IMODE(st.st_mode)) as fh:
                    for piece in pieces:
                        if isinstance(piece, Extent):
                            _copy_extent(source, src, fh, piece)
                        else:
                            fh.write(piece)
                return []
        finally:
            os.close(src)
    return _with_objcopy(objcopy(), source, sections, out_path)


def _copy_extent(source: str, src: int, out: BinaryIO, extent: Extent) -> None:
    """Bytes `extent` of the file open as `src` appended to `out`: copied by the kernel
    (copy_file_range) where it can, without passing through this process (btrfs.ko's
    35 MB were read in 21 ms and written again), else read and written a MB at a time."""
    out.flush()
    offset, size = extent.offset, extent.size
    copy = getattr(os, "copy_file_range", None)
    while size:
        done = 0
        if copy is not None:
            try:
                done = copy(src, out.fileno(), size, offset)
            except OSError:  # not on this file system or kernel: the plain way from here
                copy = None
                continue
        else:
            try:
                chunk = os.pread(src, min(size, 1 << 20), offset)
            except OSError as e:
                raise InputError(source, f"cannot read: {e.strerror or e}") from None
            out.write(chunk)
            done = len(chunk)
        if not done:
            raise InputError(source, "changed while it was read: shorter than its section "
                                     "table says")
        offset += done
        size -= done


def _section_edit(name: str, path: str, replace: bool) -> list[str]:
    if replace:
        return ["--update-section", f"{name}={path}"]
    return ["--add-section", f"{name}={path}", "--set-section-flags", f"{name}=readonly"]


def _with_objcopy(objcopy: list[str], source: str, sections: dict[str, bytes],
                  out_path: str) -> list[str]:
    import subprocess

    target = os.path.realpath(out_path)
    directory = os.path.dirname(target)
    temps: list[str] = []
    try:
        edit: list[str] = []
        for name, data in sections.items():
            fd, path = new_temporary(directory, ".sec")
            temps.append(path)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            edit += _section_edit(name, path, has_section(source, name))
        fd_out, tmp_out = new_temporary(directory, ".elf")
        temps.append(tmp_out)
        os.close(fd_out)
        result = subprocess.run([*objcopy, *edit, source, tmp_out], capture_output=True,
                                text=True, errors="replace")
        messages = [line for line in result.stderr.splitlines() if line.strip()]
        if result.returncode != 0:
            detail = messages[-1] if messages else f"exit status {result.returncode}"
            names = ", ".join(sections)
            raise InputError(source, f"objcopy could not write {names}: {detail}")
        os.chmod(tmp_out, stat.S_IMODE(os.stat(source).st_mode))
        os.replace(tmp_out, target)
        return messages
    except OSError as e:
        raise InputError(out_path, f"cannot write output: {e.strerror or e}") from None
    finally:
        for path in temps:
            try:
                os.unlink(path)
            except OSError:
                pass
