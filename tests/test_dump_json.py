"""`dump --format json`: valid JSON, one object per type, names resolved, exact shape."""

from __future__ import annotations

import io
import json

import pytest

from canonbtf.btf import format as f
from canonbtf.btf.builder import BtfBuilder
from canonbtf.emit.json import dump_json
from canonbtf.spec import kinds as spec

from .conftest import load_cached, resolve_input


def as_json(btf) -> str:
    out = io.StringIO()
    dump_json(btf, out)
    return out.getvalue()


@pytest.mark.parametrize("name", ["vmlinux-6.12.113-cloud-amd64.btf", "sysfs",
                                  "mod-6.1.0-56-cloud-xfs.btf"])
def test_one_object_per_type_with_names(name):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    text = as_json(btf)
    doc = json.loads(text)
    types = doc["types"]
    assert len(types) == len(btf)
    assert doc["first_id"] == btf.first_id and doc["last_id"] == btf.last_id
    for obj, (type_id, t) in zip(types, btf.own()):
        assert obj["id"] == type_id
        assert obj["kind"] == spec.KIND_NAMES[t.kind]
        assert obj["name"].encode("latin-1") == btf.type_name(t).encode("latin-1")
        if t.kind in (f.STRUCT, f.UNION):
            assert [m["name"] for m in obj["members"]] == [btf.name(m[0]) for m in t.items]
    # Streaming: every line between the header and the closing line is one type.
    lines = text.splitlines()
    assert len(lines) == len(btf) + 2
    assert json.loads(lines[1].rstrip(","))["id"] == btf.first_id
    assert text.isascii()


def test_hand_made_btf_gives_exact_json():
    b = BtfBuilder()
    u32 = b.int("unsigned int", 4)
    ptr = b.ptr(0)
    b.struct("flags", 4, [("ready", u32, 0, 1), ("count", u32, 1, 7)])
    b.enum("sign", 4, [("MINUS", -2), ("ZERO", 0)], signed=True)
    proto = b.func_proto(u32, [("p", ptr), ("", 0)])
    b.func("f\xe9", proto, f.LINKAGE_GLOBAL)
    var = b.var("counter", u32, f.LINKAGE_STATIC)
    b.datasec(".data..percpu", 4, [(var, 0, 4)])
    b.fwd("later", union=True)
    b.decl_tag("tag", u32 + 2, 1)
    b.enum("wide", 8, [("BIG", 1 << 40)])
    b.array(u32, u32, 3)
    b.float("double", 8)
    b.type_tag("user", u32)
    expected = """\
{"canonbtf_json":1,"first_id":1,"last_id":15,"types":[
{"id":1,"kind":"INT","name":"unsigned int","kind_flag":0,"size":4,"bits_offset":0,"nr_bits":32,"encoding":[]},
{"id":2,"kind":"PTR","name":"","kind_flag":0,"type_id":0},
{"id":3,"kind":"STRUCT","name":"flags","kind_flag":1,"size":4,"vlen":2,"members":[{"name":"ready","type_id":1,"bits_offset":0,"bitfield_size":1},{"name":"count","type_id":1,"bits_offset":1,"bitfield_size":7}]},
{"id":4,"kind":"ENUM","name":"sign","kind_flag":1,"encoding":"SIGNED","size":4,"vlen":2,"values":[{"name":"MINUS","val":-2},{"name":"ZERO","val":0}]},
{"id":5,"kind":"FUNC_PROTO","name":"","kind_flag":0,"ret_type_id":1,"vlen":2,"params":[{"name":"p","type_id":2},{"name":"","type_id":0}]},
{"id":6,"kind":"FUNC","name":"f\\u00e9","kind_flag":0,"type_id":5,"linkage":"global"},
{"id":7,"kind":"VAR","name":"counter","kind_flag":0,"type_id":1,"linkage":"static"},
{"id":8,"kind":"DATASEC","name":".data..percpu","kind_flag":0,"size":4,"vlen":1,"vars":[{"type_id":7,"name":"counter","offset":0,"size":4}]},
{"id":9,"kind":"FWD","name":"later","kind_flag":1,"fwd_kind":"union"},
{"id":10,"kind":"DECL_TAG","name":"tag","kind_flag":0,"type_id":3,"component_idx":1},
{"id":11,"kind":"ENUM64","name":"wide","kind_flag":0,"encoding":"UNSIGNED","size":8,"vlen":1,"values":[{"name":"BIG","val":1099511627776}]},
{"id":12,"kind":"ARRAY","name":"","kind_flag":0,"type_id":1,"index_type_id":1,"nr_elems":3},
{"id":13,"kind":"FLOAT","name":"double","kind_flag":0,"size":8},
{"id":14,"kind":"TYPE_TAG","name":"user","kind_flag":0,"type_id":1},
{"id":15,"kind":"INT","name":"int","kind_flag":0,"size":4,"bits_offset":0,"nr_bits":32,"encoding":["SIGNED"]}
]}
"""  # noqa: E501
    b.int("int", 4, f.INT_SIGNED)
    text = as_json(b.build())
    assert text == expected
    assert json.loads(text)["types"][5]["name"] == "f\xe9"


def test_empty_split_btf_is_valid_json():
    base = BtfBuilder()
    base.int("int", 4, f.INT_SIGNED)
    split = BtfBuilder(base.build()).build()
    doc = json.loads(as_json(split))
    assert doc == {"canonbtf_json": 1, "first_id": 2, "last_id": 1, "types": []}
