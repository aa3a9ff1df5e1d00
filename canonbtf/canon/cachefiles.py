"""The cache directory and the files kept in it (canon/basecache.py's for the pure path,
canon/csrc/basekeys.c's for the compiled part).

Apart from basecache because the compiled part's door (canon/accel.py) keeps its files
here too, and basecache needs the dedup, which needs accel: one module for both would
close an import cycle.
"""

from __future__ import annotations

import os
import sys

CACHE_ENV = "CANONBTF_CACHE"
KEEP = 4
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path
    from types import ModuleType


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/canonbtf, else ~/.cache/canonbtf, else (no home directory, as
    under Debian's sbuild) a directory of this user's own under $TMPDIR or /tmp (see
    `_private_temp`); None without an absolute or safe one."""
    from pathlib import Path  # not at import: the compiled part's module runs need no pathlib

    root = _cache_root()
    return None if root is None else Path(root)


def _cache_root() -> str | None:
    """cache_dir as a string."""
    root = os.environ.get("XDG_CACHE_HOME")
    if root:
        return os.path.join(root, "canonbtf") if os.path.isabs(root) else None
    home = os.path.expanduser("~")
    if os.path.isdir(home):
        return os.path.join(home, ".cache", "canonbtf")
    return _private_temp()


def _private_temp() -> str | None:
    """$TMPDIR/canonbtf-UID (/tmp without an absolute TMPDIR), made mode 0700: a build
    without a home directory (sbuild) keeps its base's keys there for its next modules.
    Used only while it is a directory, not a link, that this user owns and nobody else
    may write to, in a directory where nobody else may replace it (sticky, as /tmp, or
    writable by its owner alone): so no other user can plant a file in it (a planted
    file with a right checksum and wrong keys would change the bytes)."""
    import stat

    parent = os.environ.get("TMPDIR", "")
    if not os.path.isabs(parent):
        parent = "/tmp"
    uid = os.geteuid()
    path = os.path.join(parent, f"canonbtf-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        here, above = os.lstat(path), os.stat(parent)
    except OSError:
        return None
    others_replace = above.st_mode & 0o022 and not above.st_mode & stat.S_ISVTX
    if (not stat.S_ISDIR(here.st_mode) or here.st_uid != uid or here.st_mode & 0o077
            or others_replace or above.st_uid not in (uid, 0)):
        return None
    return path


def keep(path: str, data: bytes, prefix: str, suffix: str) -> None:
    """`data` written to `path` atomically (a new temporary file in its directory, O_EXCL
    and mode 0600, renamed over it), then old files of its kind pruned; a cache that
    cannot be written is only a slower next run."""
    from ..output import new_temporary

    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = new_temporary(directory, ".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(directory, prefix, suffix)
    except OSError:
        pass


def _prune(directory: str, prefix: str, suffix: str) -> None:
    """Keep the KEEP most recently written files `prefix`*`suffix`: each base, and each
    version of the code, writes one of a few MB."""
    kept = []
    for name in os.listdir(directory):
        if name.startswith(prefix) and name.endswith(suffix):
            path = os.path.join(directory, name)
            try:
                kept.append((os.stat(path).st_mtime, path))
            except OSError:
                continue
    for _, old in sorted(kept, reverse=True)[KEEP:]:
        try:
            os.unlink(old)
        except OSError:
            pass


def kept_keys_path(module: ModuleType, base_words: object,
                   base_strings: list[tuple[int, bytes]]) -> str | None:
    """The file of the compiled part's kept keys of a base (canon/csrc/basekeys.c): None
    without a cache directory or with `CANONBTF_CACHE=0`."""
    if os.environ.get(CACHE_ENV) == "0":
        return None
    directory = _cache_root()
    if directory is None:
        return None
    try:
        built = os.stat(module.__file__)
    except (OSError, TypeError):
        return None
    salt = f"{sys.version}:{built.st_size}:{built.st_mtime_ns}".encode()
    data = b"".join(bytes(section) for _, section in base_strings)
    return os.path.join(directory, f"keys-{module.keys_name(base_words, data, salt)}.bin")


def keep_keys(path: str, data: bytes) -> None:
    """Store the compiled part's kept keys (see _keep)."""
    keep(path, data, "keys-", ".bin")
