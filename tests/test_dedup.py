"""canon/dedup.py directly: declarations resolved in context (canon/twins.py).

A name with two different definitions leaves its declarations unresolved; copies of a
type that differ only in pointing at such a declaration or at one definition merge into
the more defined copy when it is the single one (libbpf's btf__dedup merges them too), and
stay apart when two different definitions compete.
"""

from __future__ import annotations

import random

from canonbtf.btf import format as f
from canonbtf.btf import writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.canon import canonicalize

from . import libbpf
from .shuffle import shuffle


def two_definitions(ambiguous_copy: bool = False) -> Btf:
    """`struct dma_chan` defined twice, differently; `struct ctrl` copied into one unit
    that saw the first definition and one that saw only a declaration (and, with
    `ambiguous_copy`, a third that saw the second definition)."""
    b = BtfBuilder()
    i32 = b.int("int", 4, f.INT_SIGNED)
    first = b.struct("dma_chan", 8, [("a", i32, 0), ("b", i32, 32)])
    second = b.struct("dma_chan", 4, [("x", i32, 0)])
    declared = b.fwd("dma_chan")
    ctrl_fwd = b.struct("ctrl", 16, [("dma", b.ptr(declared), 0), ("n", i32, 64)])
    ctrl_def = b.struct("ctrl", 16, [("dma", b.ptr(first), 0), ("n", i32, 64)])
    if ambiguous_copy:
        b.struct("ctrl", 16, [("dma", b.ptr(second), 0), ("n", i32, 64)])
    b.struct("other", 8, [("chan", b.ptr(second), 0)])  # keeps both definitions in use
    if not ambiguous_copy:
        # readers of the two copies merge with them (a reader's copies would also decide
        # for the ambiguous ctrl: in their context it has one twin)
        b.struct("dev", 8, [("ctrl", b.ptr(ctrl_fwd), 0)])
        b.struct("dev", 8, [("ctrl", b.ptr(ctrl_def), 0)])
    return b.build()


def names_of(btf: Btf, kind: int) -> list[str]:
    return sorted(btf.names(t.name_off) for t in btf.types if t.kind == kind)


def test_a_declared_copy_merges_into_its_single_defined_twin():
    btf = canonicalize(two_definitions(), dedup=True)
    assert names_of(btf, f.STRUCT) == ["ctrl", "dev", "dma_chan", "dma_chan", "other"]
    assert names_of(btf, f.FWD) == []  # the declaration went with its twin's definition
    assert len(btf.types) <= libbpf.libbpf_dedup_count(writer.write(two_definitions()))


def test_two_competing_definitions_keep_the_declared_copy_apart():
    btf = canonicalize(two_definitions(ambiguous_copy=True), dedup=True)
    assert names_of(btf, f.STRUCT) == ["ctrl", "ctrl", "ctrl", "dma_chan", "dma_chan",
                                       "other"]
    assert names_of(btf, f.FWD) == ["dma_chan"]


def test_the_result_does_not_depend_on_ids():
    reference = writer.write(canonicalize(two_definitions(), dedup=True))
    for seed in range(5):
        again = canonicalize(shuffle(two_definitions(), seed), dedup=True)
        assert writer.write(again) == reference


def test_kept_ids_are_the_own_ids_nothing_merges_away():
    """canonicalize's runs between merged ids equal a test per id (ids outside the BTF's
    own range in the merge map are the base's, or none)."""
    from array import array
    from types import SimpleNamespace

    from canonbtf.canon import _kept_ids

    rng = random.Random("kept ids")
    for _ in range(2000):
        first = rng.choice([1, 5, 100])
        btf = SimpleNamespace(first_id=first, last_id=first + rng.randrange(0, 60) - 1)
        into = {rng.randrange(1, btf.last_id + 3): 1 for _ in range(rng.randrange(0, 20))}
        expected = array("I", (n for n in range(first, btf.last_id + 1) if n not in into))
        assert _kept_ids(btf, into) == expected
