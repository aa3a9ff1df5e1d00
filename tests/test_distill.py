"""Distilled base BTF and relocation (canonbtf/canon/distill.py) on the corpus modules: the
round trip, what the distilled base holds, and the kernel's refusals."""

from __future__ import annotations

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.model import Btf, Type
from canonbtf.btf.strings import StringTable
from canonbtf.canon import canonicalize
from canonbtf.canon.distill import distill_base, relocate
from canonbtf.errors import InputError
from tests.conftest import BASE_61, MODULE_BLOBS, corpus_path, load_cached


def distilled(name: str) -> tuple[Btf, Btf, Btf]:
    """(full base, distilled base, split over it) for a corpus module, through bytes."""
    base = load_cached(corpus_path(BASE_61.name))
    split = load_cached(corpus_path(name), corpus_path(BASE_61.name))
    dist, dsplit = distill_base(split)
    dist = reader.parse(writer.write(dist))
    return base, dist, reader.parse(writer.write(dsplit), base=dist)


@pytest.mark.parametrize("name", MODULE_BLOBS)
def test_relocated_and_deduplicated_is_the_direct_split_btf(name):
    base, dist, dsplit = distilled(name)
    direct = canonicalize(load_cached(corpus_path(name), corpus_path(BASE_61.name)),
                          dedup=True)
    again = canonicalize(relocate(dsplit, base), dedup=True)
    assert writer.write(again) == writer.write(direct)


def test_distilled_base_holds_only_named_stand_ins():
    _, dist, dsplit = distilled("mod-6.1.0-56-cloud-virtio_net.btf")
    kinds = {t.kind for t in dist.types}
    assert kinds <= {f.INT, f.FLOAT, f.FWD, f.STRUCT, f.UNION, f.ENUM}
    assert all(t.name_off and not t.items for t in dist.types)
    assert f.STRUCT in kinds and len(dist) < 100
    # The pointers and typedefs the module used from vmlinux now live in the split part.
    assert any(t.kind == f.PTR for t in dsplit.types)


def _one_struct_base(size: int) -> Btf:
    strings, off = StringTable.build(["int", "sk_buff_head"])
    return Btf([Type(f.INT, off["int"], 0, 4, 0x01000020),
                Type(f.STRUCT, off["sk_buff_head"], 0, size)], strings)


def _module_embedding(dist: Btf) -> Btf:
    """Split BTF whose struct holds the base's sk_buff_head by value."""
    strings, off = StringTable.build(["holder", "q"], dist.strings.end)
    holder = Type(f.STRUCT, off["holder"], 0, 24, 0, [(off["q"], 2, 0)])
    return Btf([holder], strings, dist)


def test_embedded_struct_must_keep_its_size():
    module = _module_embedding(_one_struct_base(24))
    relocate(module, _one_struct_base(24))  # same size: fine
    with pytest.raises(InputError, match="'sk_buff_head'.*no match"):
        relocate(module, _one_struct_base(32))


def test_a_type_missing_from_the_new_base_is_refused():
    module = _module_embedding(_one_struct_base(24))
    strings, off = StringTable.build(["int"])
    with pytest.raises(InputError, match="'sk_buff_head'"):
        relocate(module, Btf([Type(f.INT, off["int"], 0, 4, 0x01000020)], strings))
