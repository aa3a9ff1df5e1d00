"""What a module's dedup keeps of its base on disk (canon/basecache.py): the pure path's
index (canon/dedup.BaseIndex) and the compiled part's kept keys (canon/csrc/basekeys.c).
Either way the same bytes with no cache, a cold cache, a warm one and a damaged one.
The tests run the pure path unless they say otherwise (`compiled`)."""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path

import pytest

from canonbtf import native
from canonbtf.btf import writer
from canonbtf.canon import basecache, cachefiles, canonicalize, canonicalize_checked
from canonbtf.canon.dedup import BaseIndex
from canonbtf.dwarf.encode import encode_file, encode_fragments, merge_fragments
from canonbtf.dwarf.sections import open_dwarf

from .conftest import BASE_61, FETCHED_DEBUG, REPO, corpus_path, load_cached

GOLDEN = REPO / "golden" / "obj"
VIRTIO = (FETCHED_DEBUG / "lib" / "modules" / "6.1.0-56-cloud-amd64" / "kernel" / "drivers"
          / "net" / "virtio_net.ko")


@pytest.fixture(autouse=True)
def pure_path(monkeypatch):
    monkeypatch.setenv(native.PURE_ENV, "1")


def test_the_compiled_path_keeps_only_its_keys(tmp_path, monkeypatch, compiled):
    """A module's encode by the compiled part keeps its base's keys (one file, mode 0600)
    and not the pure path's index; the bytes are the pure path's."""
    base = golden_base()
    expected = encode_split(base)
    [kept] = (tmp_path / "canonbtf").iterdir()
    assert kept.name.startswith("keys-") and kept.name.endswith(".bin")
    assert kept.stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert encode_split(base) == expected
    assert basecache.cache_path(base).exists()


@pytest.fixture
def compiled(tmp_path, monkeypatch):
    """The compiled part, with a cache of its own under tmp_path."""
    monkeypatch.delenv(native.PURE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(basecache.CACHE_ENV, raising=False)
    if native.compiled("canonbtf._btf", "order") is None:
        pytest.skip("the compiled part is not built")


def kept_file(tmp_path):
    [kept] = (tmp_path / "canonbtf").glob("keys-*.bin")
    return kept


def damaged(good: bytes) -> dict[str, bytes]:
    """The ways a kept file may come back: cut short, a bit flipped in each part, another
    version, another base's, empty, not one at all."""
    words = len(good) // 4
    flips = {f"bit {at}": at for at in (4 * 13 + 1, 4 * 20, len(good) // 2, len(good) - 1)}
    out = {name: good[:at] + bytes([good[at] ^ 1]) + good[at + 1:] for name, at in flips.items()}
    version = (int.from_bytes(good[4:8], sys.byteorder) + 1).to_bytes(4, sys.byteorder)
    count = (int.from_bytes(good[8:12], sys.byteorder) - 1).to_bytes(4, sys.byteorder)
    out.update({"cut": good[:-7], "cut to a word": good[:4 * (words - 1)],
                "header only": good[:56], "version": good[:4] + version + good[8:],
                "count": good[:8] + count + good[12:], "empty": b"", "garbage": b"garbage"})
    return out


def test_compiled_cold_warm_and_damaged_kept_keys_give_the_same_bytes(tmp_path, monkeypatch,
                                                                     compiled):
    base = golden_base()
    cold = encode_split(base)
    kept = kept_file(tmp_path)
    good = kept.read_bytes()
    monkeypatch.setenv(basecache.CACHE_ENV, "0")
    assert encode_split(base) == cold  # no cache at all
    monkeypatch.delenv(basecache.CACHE_ENV)
    kept_again = []
    keep = cachefiles.keep
    monkeypatch.setattr(cachefiles, "keep", lambda *args: kept_again.append(args))
    assert encode_split(base) == cold  # warm: read, never made again
    assert kept_again == []
    monkeypatch.setattr(cachefiles, "keep", keep)
    for name, bad in damaged(good).items():
        kept.write_bytes(bad)
        assert encode_split(base) == cold, name
        assert kept.read_bytes() == good, name  # replaced by a whole one


@pytest.mark.parametrize("which", ["golden", "virtio_net"])
def test_compiled_kept_keys_over_a_real_base(tmp_path, monkeypatch, compiled, which):
    """Over a kernel's base: cold, warm and without a cache, the module's bytes are the
    pure path's."""
    _, btf = split_case(which)
    made = [writer.write(canonicalize(btf, dedup=True)) for _ in range(2)]
    assert kept_file(tmp_path).exists()
    monkeypatch.setenv(basecache.CACHE_ENV, "0")
    made.append(writer.write(canonicalize(btf, dedup=True)))
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert made == [writer.write(canonicalize(btf, dedup=True))] * 3


def golden_base():
    return encode_file(str(GOLDEN / "funcs.gcc-dwarf5.o"), 1)[0]


def encode_split(base, path=GOLDEN / "funcs_b.gcc-dwarf5.o") -> bytes:
    return writer.write(encode_file(str(path), 1, base=base)[0])


def split_case(which: str):
    """(base, a module's merged types over it): the golden pair, or virtio_net over the
    6.1 kernel (skipped where not fetched)."""
    if which == "golden":
        base, path = golden_base(), GOLDEN / "funcs_b.gcc-dwarf5.o"
    elif VIRTIO.exists():
        base, path = load_cached(corpus_path(BASE_61.name)), VIRTIO
    else:
        pytest.skip(f"{VIRTIO} not fetched")
    return base, merged_over(path, base)


def merged_over(path, base):
    dwarf = open_dwarf(str(path))
    groups, _ = encode_fragments(dwarf, 1)
    return merge_fragments(groups, base)


@pytest.mark.parametrize("which", ["golden", "virtio_net"])
def test_compiled_refinement_over_a_base_is_the_references(which, compiled):
    """A module's dedup refined in C (canon/csrc/refined.c, over the base's view and the
    module's) gives the ranks, stand-ins and classes of the reference's Partition."""
    from canonbtf.canon import accel
    from canonbtf.canon.dedup import _reference_inputs

    from .test_compiled_order import _refined_alike

    base, btf = split_case(which)
    fast = accel.keyed_types(btf)
    _refined_alike(btf, fast, _reference_inputs(btf, None, BaseIndex.of(base)))


@pytest.mark.parametrize("which", ["golden", "virtio_net"])
def test_dedup_with_a_base_index_is_the_dedup_without(which):
    """The classes found from a base's index continue its abstract keys: the merged and
    ordered types are those of a dedup that computes everything."""
    base, btf = split_case(which)
    plain = canonicalize(btf, dedup=True)
    indexed, _ = canonicalize_checked(btf, dedup=True, index=BaseIndex.of(base))
    assert len(indexed) < len(btf)  # something merged into the base
    assert writer.write(indexed) == writer.write(plain)


def test_cold_warm_and_damaged_cache_give_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(basecache.CACHE_ENV, raising=False)
    base = golden_base()
    path = basecache.cache_path(base)
    assert path.parent == tmp_path / "canonbtf"
    cold = encode_split(base)
    assert path.exists()
    monkeypatch.setenv(basecache.CACHE_ENV, "0")
    assert encode_split(base) == cold  # no cache at all
    monkeypatch.delenv(basecache.CACHE_ENV)

    computed = BaseIndex.of

    def not_again(base):
        raise AssertionError("the warm cache was not read")

    monkeypatch.setattr(BaseIndex, "of", classmethod(lambda cls, b: not_again(b)))
    assert encode_split(base) == cold  # warm: read, never computed
    monkeypatch.setattr(BaseIndex, "of", computed)

    good = path.read_bytes()
    for damage in (good[:-7],  # cut short
                   good[:100] + bytes([good[100] ^ 1]) + good[101:],  # one bit flipped
                   b"garbage"):
        path.write_bytes(damage)
        assert encode_split(base) == cold
        assert path.read_bytes() == good  # replaced by a good one

    # A sound file of the wrong shape (another base's index under this name).
    other = marshal.dumps(([()], [None], [0], {}, [0]))
    path.write_bytes(basecache.MAGIC + hashlib.sha256(other).digest() + other)
    assert encode_split(base) == cold
    assert path.read_bytes() == good


def test_unwritable_cache_is_only_slower(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file, not a directory
    monkeypatch.delenv(basecache.CACHE_ENV, raising=False)
    base = golden_base()
    monkeypatch.setenv(basecache.CACHE_ENV, "0")
    expected = encode_split(base)
    monkeypatch.delenv(basecache.CACHE_ENV)
    assert encode_split(base) == expected


def test_old_indexes_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(basecache.CACHE_ENV, raising=False)
    directory = tmp_path / "canonbtf"
    directory.mkdir()
    for i in range(cachefiles.KEEP + 3):
        stale = directory / f"base-{i:064x}.idx"
        stale.write_bytes(b"old")
        os.utime(stale, (1000 + i, 1000 + i))
    base = golden_base()
    encode_split(base)
    left = sorted(p.name for p in directory.glob("base-*.idx"))
    assert len(left) == cachefiles.KEEP
    assert basecache.cache_path(base).name in left
    assert f"base-{0:064x}.idx" not in left


def _path(monkeypatch, path: str) -> None:
    if path == "compiled":
        monkeypatch.delenv(native.PURE_ENV)
        if native.compiled("canonbtf._btf", "order") is None:
            pytest.skip("the compiled part is not built")


def _without_home(tmp_path, monkeypatch) -> Path:
    """HOME a directory that does not exist, as Debian's sbuild sets it; TMPDIR a
    directory of this test's (returned)."""
    monkeypatch.setenv("HOME", str(tmp_path / "nonexistent"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv(basecache.CACHE_ENV, raising=False)
    temp = tmp_path / "tmp"
    temp.mkdir(mode=0o1777)
    temp.chmod(0o1777)  # a sticky directory everybody writes to, as /tmp
    monkeypatch.setenv("TMPDIR", str(temp))
    return temp


@pytest.mark.parametrize("path", ["pure", "compiled"])
def test_no_cache_in_a_relative_directory(tmp_path, monkeypatch, path):
    """A relative $XDG_CACHE_HOME is not a place to write to: no index is kept, nothing
    is created, the bytes are the same."""
    _path(monkeypatch, path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.delenv(basecache.CACHE_ENV, raising=False)
    base = golden_base()
    assert basecache.cache_path(base) is None
    monkeypatch.setenv(basecache.CACHE_ENV, "0")
    expected = encode_split(base)
    monkeypatch.delenv(basecache.CACHE_ENV)
    assert encode_split(base) == expected
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", ["pure", "compiled"])
def test_without_a_home_the_cache_is_a_private_temporary(tmp_path, monkeypatch, path):
    """No home directory (sbuild): the cache is $TMPDIR/canonbtf-UID, made mode 0700,
    its files 0600, the bytes those of no cache."""
    _path(monkeypatch, path)
    temp = _without_home(tmp_path, monkeypatch)
    base = golden_base()
    monkeypatch.setenv(basecache.CACHE_ENV, "0")
    expected = encode_split(base)
    monkeypatch.delenv(basecache.CACHE_ENV)
    assert encode_split(base) == expected  # cold
    assert encode_split(base) == expected  # warm
    private = temp / f"canonbtf-{os.geteuid()}"
    assert [p.name for p in temp.iterdir()] == [private.name]
    assert private.stat().st_mode & 0o777 == 0o700
    [kept] = private.iterdir()
    assert kept.name.startswith("base-" if path == "pure" else "keys-")
    assert kept.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("unsafe", ["others write to it", "a link", "not sticky",
                                    "another owner"])
def test_a_temporary_cache_others_could_change_is_not_used(tmp_path, monkeypatch, unsafe):
    """A temporary cache another user could plant a file in (or swap) is neither read
    nor written: the bytes are those of no cache and the directory is left as found."""
    _path(monkeypatch, "compiled")
    temp = _without_home(tmp_path, monkeypatch)
    private = temp / f"canonbtf-{os.geteuid()}"
    if unsafe == "a link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        private.symlink_to(tmp_path / "elsewhere")
    else:
        private.mkdir(mode=0o700)
    if unsafe == "others write to it":
        private.chmod(0o777)
    elif unsafe == "not sticky":
        temp.chmod(0o777)
    elif unsafe == "another owner":
        if os.geteuid() != 0:
            pytest.skip("giving the directory to another user needs root")
        os.chown(private, 65534, 65534)
    base = golden_base()
    monkeypatch.setenv(basecache.CACHE_ENV, "0")
    expected = encode_split(base)
    monkeypatch.delenv(basecache.CACHE_ENV)
    assert encode_split(base) == expected
    assert list(private.iterdir()) == [] and list((tmp_path / "elsewhere").glob("*")) == []


@pytest.mark.parametrize("path", ["pure", "compiled"])
def test_parallel_cold_cache_encodes_give_the_bytes_of_no_cache(tmp_path, monkeypatch, path):
    """12 processes encoding a module over one base at once, the cache cold (each process
    may find it half-made by another): every output is the bytes of an encode with no
    cache, and the cache left behind is whole."""
    import subprocess

    if path == "compiled":
        monkeypatch.delenv(native.PURE_ENV)
        if native.compiled("canonbtf._btf", "order") is None:
            pytest.skip("the compiled part is not built")
    base = golden_base()
    (tmp_path / "base.btf").write_bytes(writer.write(base))
    module = GOLDEN / "funcs_b.gcc-dwarf5.o"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    env.pop(basecache.CACHE_ENV, None)
    env.pop(native.PURE_ENV, None)
    if path == "pure":
        env[native.PURE_ENV] = "1"
    command = [sys.executable, "-m", "canonbtf", "encode", "-j1", "--base",
               str(tmp_path / "base.btf"), str(module), "-o"]
    runs = [subprocess.Popen([*command, str(tmp_path / f"out{i}.btf")], env=env,
                             stderr=subprocess.PIPE) for i in range(12)]
    assert all(run.wait() == 0 for run in runs), [run.stderr.read() for run in runs]
    expected = encode_split(base, module)
    assert all((tmp_path / f"out{i}.btf").read_bytes() == expected for i in range(12))
    left = sorted(p.name for p in (tmp_path / "cache" / "canonbtf").iterdir())
    if path == "pure":
        [index] = (tmp_path / "cache" / "canonbtf").glob("base-*.idx")
        assert basecache._read(index, base) is not None
        return
    assert len(left) == 1 and left[0].startswith("keys-"), left  # no temporary left
    from canonbtf.canon import accel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(basecache.CACHE_ENV, raising=False)
    kept = []
    monkeypatch.setattr(cachefiles, "keep", lambda *args: kept.append(args))
    assert accel.keyed_types(merged_over(module, base)) is not None
    assert kept == []  # the file left behind is read, not made again
