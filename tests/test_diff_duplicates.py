"""`canonbtf diff` where names repeat: the report depends on the types, never on the ids.

Repeated names come as equivalent copies (pahole's dedup leftovers: two `struct
intel_pinctrl`, each pointing at its own `struct intel_pinctrl_context`) and as different
types of one name (two `struct irq_info`, static functions).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf
from canonbtf.cli import main
from canonbtf.diff import diff_btfs

from .conftest import corpus_path, load_cached
from .leftovers import with_leftovers
from .shuffle import shuffle

# Debian's 6.1 generic-flavour kernel (linux-image-6.1.0-56-amd64-dbg, fetched with
# ../shared/tools/fetch-kernel-dbg): its BTF has 427 repeated (kind, name) groups.
GENERIC_VMLINUX = Path(
    "/root/.cache/canonbtf-corpus/linux-image-6.1.0-56-amd64-dbg/usr/lib/debug/boot/"
    "vmlinux-6.1.0-56-amd64")


def leftovers(b: BtfBuilder, i32: int, copies: int = 3) -> None:
    """`copies` equivalent pairs: struct pinctrl -> its own struct ctx, and a function
    taking each, as a parallel dedup leaves them."""
    for _ in range(copies):
        ctx = b.struct("ctx", 4, [("v", i32, 0)])
        pinctrl = b.struct("pinctrl", 8, [("context", b.ptr(ctx), 0)])
        b.func("probe", b.func_proto(i32, [("pc", b.ptr(pinctrl))]), f.LINKAGE_STATIC)


def distinct(b: BtfBuilder, i32: int, second_b_offset: int = 32) -> None:
    """Three different `struct dup`, and a struct holding a pointer to each."""
    one = b.struct("dup", 4, [("a", i32, 0)])
    two = b.struct("dup", 12, [("a", i32, 0), ("b", i32, second_b_offset)])
    three = b.struct("dup", 8, [("c", i32, 0), ("d", i32, 32)])
    b.struct("user", 24, [("p", b.ptr(three), 0), ("q", b.ptr(one), 64),
                          ("r", b.ptr(two), 128)])


def built(*parts, base: Btf | None = None) -> Btf:
    """A BTF of an `int` and what each part(builder, int id) adds."""
    b = BtfBuilder(base)
    i32 = b.int("int", 4, f.INT_SIGNED)
    for part in parts:
        part(b, i32)
    return b.build()


def write(tmp_path: Path, name: str, btf: Btf) -> str:
    path = tmp_path / name
    path.write_bytes(writer.write(btf))
    return str(path)


def cli_reports_nothing(tmp_path: Path, capsys, old: Btf, new: Btf, base: Btf | None = None
                        ) -> None:
    """Exit 0 and an empty report, in text and in JSON."""
    argv = ["diff", write(tmp_path, "old.btf", old), write(tmp_path, "new.btf", new)]
    if base is not None:
        base_path = write(tmp_path, "base.btf", base)
        argv += ["--base-old", base_path, "--base-new", base_path]
    assert main(argv) == 0
    assert capsys.readouterr().out == ""
    assert main(argv + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == {"added": 0, "removed": 0, "changed": 0}
    assert doc["types"] == []


@pytest.mark.parametrize("seed", range(6))
def test_renumbered_equivalent_copies_report_nothing(seed, tmp_path, capsys):
    btf = built(leftovers, distinct)
    cli_reports_nothing(tmp_path, capsys, btf, shuffle(btf, seed))


@pytest.mark.parametrize("seed", range(4))
def test_renumbered_split_btf_with_copies_reports_nothing(seed, tmp_path, capsys):
    base = built(distinct)
    module = built(leftovers, distinct, base=base)
    cli_reports_nothing(tmp_path, capsys, module, shuffle(module, seed), base)


@pytest.mark.parametrize("seed", range(4))
def test_change_in_one_of_several_same_named_structs_is_reported_once(seed):
    old = built(leftovers, distinct)
    new = shuffle(built(leftovers, lambda b, i32: distinct(b, i32, 64)), seed)
    result = diff_btfs(old, new)
    assert [(c.title, [(d.change, d.path, d.old, d.new) for d in c.details])
            for c in result.changes] == [("struct dup#3", [("member_moved", "b", 32, 64)])]
    # #N follows the types, so the same struct has the same tag in every renumbering.
    assert diff_btfs(shuffle(old, seed + 10), new).changes[0].title == "struct dup#3"


def test_one_copy_changed_among_equivalent_copies_is_one_change():
    old = built(leftovers)
    # The same three copies, but the last ctx grew: one pinctrl now differs from the rest.
    b = BtfBuilder()
    i32 = b.int("int", 4, f.INT_SIGNED)
    leftovers(b, i32, copies=2)
    ctx = b.struct("ctx", 8, [("v", i32, 0)])
    pinctrl = b.struct("pinctrl", 8, [("context", b.ptr(ctx), 0)])
    b.func("probe", b.func_proto(i32, [("pc", b.ptr(pinctrl))]), f.LINKAGE_STATIC)
    for seed in range(4):
        result = diff_btfs(old, shuffle(b.build(), seed))
        assert [(c.title, [(d.change, d.old, d.new) for d in c.details])
                for c in result.changes] == [("struct ctx#3", [("size_changed", 4, 8)])]


def test_same_named_structs_pair_by_best_overall_match():
    def build(structs):
        b = BtfBuilder()
        i32 = b.int("int", 4, f.INT_SIGNED)
        for members in structs:
            b.struct("dup", 12, [(name, i32, offset) for name, offset in members])
        return b.build()

    old = build([[("d", 0), ("b", 32), ("c", 64)], [("c", 64)]])
    new = build([[("b", 0), ("d", 32), ("c", 64)], [("d", 0), ("b", 32), ("a", 64)]])
    changes = {frozenset((d.change, d.path) for d in c.details)
               for c in diff_btfs(old, new).changes}
    # Taking the best pair first ({d, b, c} with {b, d, c}) would leave {c} to pair with
    # {d, b, a}, sharing nothing: 5 facts in common in all, against 8 for this pairing.
    assert changes == {
        frozenset({("member_removed", "c"), ("member_added", "a")}),
        frozenset({("member_added", "b"), ("member_added", "d")}),
    }


def test_corpus_kernel_with_dedup_leftovers_renumbered_reports_nothing():
    btf = with_leftovers(load_cached(corpus_path("vmlinux-6.1.0-56-cloud-amd64.btf")), 1)
    repeated = sum(1 for t in btf.types if t.name_off) - len(
        {(t.kind, btf.name(t.name_off)) for t in btf.types if t.name_off})
    assert repeated > 1000
    assert not diff_btfs(btf, shuffle(btf, 5))


def test_generic_flavour_kernel_renumbered_reports_nothing(tmp_path, capsys):
    if not GENERIC_VMLINUX.exists():
        pytest.skip(f"{GENERIC_VMLINUX} not fetched (../shared/tools/fetch-kernel-dbg "
                    "linux-image-6.1.0-56-amd64-dbg)")
    btf = reader.load(str(GENERIC_VMLINUX))
    cli_reports_nothing(tmp_path, capsys, btf, shuffle(btf, 11))


@pytest.mark.parametrize("seed", range(3))
def test_small_groups_pair_as_networkx_pairs_them(seed, monkeypatch):
    """_best_match settles stars and small groups without networkx: always a pairing of
    networkx's maximum total weight; the very pairing networkx picks for a star (ties
    included) and wherever one pairing is best; among tied best pairings of a group,
    the one that takes the earliest scored pair, then the next (found here by listing
    every pairing)."""
    import itertools
    import random

    import networkx as nx

    from canonbtf.diff import pairing as diff_pairing
    from canonbtf.diff.pairing import Root

    rng = random.Random(seed)
    for _ in range(600):
        n_old, n_new = rng.choice([(1, rng.randint(1, 5)), (rng.randint(1, 5), 1),
                                   (rng.randint(2, 3), rng.randint(2, 3))])
        olds = [Root(i, "func", "f", ((("param", k), ("", "int")) for k in range(4)))
                for i in range(n_old)]
        for i, root in enumerate(olds):
            root.sort_key = ("f", "", i)
        news = [Root(j, "func", "f") for j in range(n_new)]
        scored = sorted((-rng.randint(1, 3), i, j) for i in range(n_old)
                        for j in range(n_new) if rng.random() < 0.7)
        graph = nx.Graph()
        graph.add_nodes_from((0, i) for i in range(n_old))
        graph.add_nodes_from((1, j) for j in range(n_new))
        for score, i, j in scored:
            graph.add_edge((0, i), (1, j), weight=-score)
        expected = sorted(tuple(node[1] for node in sorted(edge))
                          for edge in nx.max_weight_matching(graph))
        monkeypatch.setattr(diff_pairing, "_scores", lambda *_a, s=scored, **_k: s)
        found = sorted((a.type_id, b.type_id) for a, b in diff_pairing._best_match(olds, news))
        weight = {(i, j): -score for score, i, j in scored}
        assert sum(weight[p] for p in found) == sum(weight[p] for p in expected), scored
        pairings = [taken for taken in itertools.product((1, 0), repeat=len(scored))
                    if len({i for t, (_, i, _) in zip(taken, scored) if t}) == sum(taken)
                    == len({j for t, (_, _, j) in zip(taken, scored) if t})]
        top = max(sum(-score for t, (score, _, _) in zip(taken, scored) if t)
                  for taken in pairings)
        best = [taken for taken in pairings
                if sum(-score for t, (score, _, _) in zip(taken, scored) if t) == top]
        if min(n_old, n_new) == 1 or len(best) == 1:
            assert found == expected, scored
        else:
            first = max(best)
            assert found == sorted((i, j) for t, (_, i, j) in zip(first, scored) if t), scored
