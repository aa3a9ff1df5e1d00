"""The base's part of a module's dedup, kept on disk between runs.

Encoding a kernel module (split BTF over vmlinux's) spends most of its dedup on the
base's 95 k types, which are the same for every module of that kernel: their labels,
edges, abstract keys, declaration flags and kinds (dedup.BaseIndex). They are computed
once and kept under $XDG_CACHE_HOME/canonbtf (else ~/.cache/canonbtf), in a file named
after the sha256 of the base's bytes, of the code that computes the index and of the
interpreter (marshal's format). Only the pure path reads it: the compiled part keys the
base itself in a module's every run (accel.keyed_types, 0.04 s for vmlinux's 95 k
types), so a build where no cache can be written (HOME missing) is no slower.

The cache can only save time: a file that is missing, unreadable, damaged (its own
sha256 does not match) or of the wrong shape is computed again and replaced, and what is
read is exactly what would be computed. `CANONBTF_CACHE=0` turns it off.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
from pathlib import Path

from ..btf import format as f
from ..btf import model, writer
from ..btf.model import Btf
from . import dedup, labels
from .dedup import BaseIndex

CACHE_ENV = "CANONBTF_CACHE"
MAGIC = b"canonbtf base index 4\n"
KEEP = 4


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/canonbtf, else ~/.cache/canonbtf; None without an absolute one, or
    when the home directory does not exist (Debian's sbuild sets HOME to such a path: a
    cache is not made there, nor anywhere shared such as /tmp, where another user could
    plant one)."""
    root = os.environ.get("XDG_CACHE_HOME")
    if not root:
        home = os.path.expanduser("~")
        if not os.path.isdir(home):
            return None
        root = os.path.join(home, ".cache")
    return Path(root) / "canonbtf" if os.path.isabs(root) else None


def _code_digest() -> bytes:
    """What the index depends on besides the base: the code that computes it."""
    h = hashlib.sha256(sys.version.encode())
    h.update(str(marshal.version).encode())
    for module in (dedup, labels, model, f, sys.modules[__name__]):
        h.update(Path(module.__file__).read_bytes())
    return h.digest()


def cache_path(base: Btf) -> Path | None:
    """The file that holds `base`'s index (None: no cache directory, or no code files to
    tell this version's index from another's)."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        h = hashlib.sha256(_code_digest())
    except (OSError, TypeError):
        return None
    h.update(writer.write(base))
    return directory / f"base-{h.hexdigest()}.idx"


def base_index(base: Btf) -> BaseIndex:
    """`BaseIndex.of(base)`, from the cache when it holds it (and then stored there)."""
    path = None if os.environ.get(CACHE_ENV) == "0" else cache_path(base)
    if path is None:
        return BaseIndex.of(base)
    index = _read(path, base)
    if index is None:
        index = BaseIndex.of(base)
        _write(path, index)
    return index


def _read(path: Path, base: Btf) -> BaseIndex | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 32
    if not data.startswith(MAGIC) or hashlib.sha256(data[head:]).digest() != data[len(MAGIC):head]:
        return None
    try:
        fields = marshal.loads(data[head:])
        index = BaseIndex(*fields)
    except (ValueError, EOFError, TypeError):
        return None
    return index if index.fits(base) else None


def _write(path: Path, index: BaseIndex) -> None:
    """Store `index` atomically (a temporary file renamed); a cache that cannot be written
    is only a slower next run."""
    payload = marshal.dumps(tuple(index))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".base-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except OSError:
        pass


def _prune(directory: Path) -> None:
    """Keep the KEEP most recently written indexes: each base, and each version of the code,
    writes one of about 10 MB."""
    files = sorted(directory.glob("base-*.idx"), key=lambda p: p.stat().st_mtime,
                   reverse=True)
    for old in files[KEEP:]:
        old.unlink(missing_ok=True)
