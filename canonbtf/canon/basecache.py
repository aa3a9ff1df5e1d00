"""The base's part of a module's dedup, kept on disk between runs.

Encoding a kernel module (split BTF over vmlinux's) spends most of its dedup on the
base's 95 k types, which are the same for every module of that kernel. Both paths keep
what they read of them under $XDG_CACHE_HOME/canonbtf (else ~/.cache/canonbtf):
- the pure path, dedup.BaseIndex (labels, edges, abstract keys, declaration flags and
  kinds), marshalled, in `base-<sha256>.idx`: the sha256 of the base's bytes, of the code
  that computes the index and of the interpreter (marshal's format);
- the compiled part, the base's abstract keys as flat u32 arrays with the tables a
  module's keys continue them from (canon/csrc/basekeys.c), mapped and read in place by C, in
  `keys-<hash>.bin`: named after hash_bytes of the base's words and strings and of the
  compiled part's file (its size and mtime) and the interpreter. C checks the file's
  header and checksum and compares every entry it finds in full. Where no cache can be
  written the compiled part keys the base with the module in one section, as before.

The cache can only save time: a file that is missing, unreadable, damaged (its own
sha256 or checksum does not match) or of the wrong shape is computed again and replaced,
and what is read is exactly what would be computed. `CANONBTF_CACHE=0` turns it off.
Files are written whole under a temporary name (O_EXCL, mode 0600) and renamed, so 12
modules encoded at once over a cold cache each read a whole file or none (the directory
and the writing: canon/cachefiles.py).
"""

from __future__ import annotations

import os
import sys

from ..btf import format as f
from ..btf import model, writer
from ..btf.model import Btf
from . import dedup, labels
from .cachefiles import CACHE_ENV, cache_dir, keep
from .dedup import BaseIndex

MAGIC = b"canonbtf base index 4\n"
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path


def _code_digest() -> bytes:
    """What the index depends on besides the base: the code that computes it."""
    import hashlib
    import marshal
    from pathlib import Path

    h = hashlib.sha256(sys.version.encode())
    h.update(str(marshal.version).encode())
    for module in (dedup, labels, model, f, sys.modules[__name__]):
        h.update(Path(module.__file__).read_bytes())
    return h.digest()


def cache_path(base: Btf) -> Path | None:
    """The file that holds `base`'s index (None: no cache directory, or no code files to
    tell this version's index from another's)."""
    import hashlib

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
    import hashlib
    import marshal

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
    import hashlib
    import marshal

    payload = marshal.dumps(tuple(index))
    keep(str(path), MAGIC + hashlib.sha256(payload).digest() + payload, "base-", ".idx")


