"""Reader and writer: write(read(x)) == x byte for byte on real BTF, both byte orders."""

from __future__ import annotations

import struct
import sys

import pytest

from canonbtf.btf import format as f
from canonbtf.btf import reader, writer
from canonbtf.btf.builder import BtfBuilder

from .conftest import load_cached, real_inputs, resolve_input


@pytest.mark.parametrize("name", real_inputs())
def test_round_trip_is_byte_exact(name):
    path, base = resolve_input(name)
    btf = load_cached(path, base)
    assert writer.write(btf) == path.read_bytes()


def byteswap_blob(blob: bytes) -> bytes:
    """Swap a little-endian BTF blob to big-endian by hand: header fields, then every word."""
    hdr = struct.unpack_from("<HBBIIIII", blob)
    hdr_len, type_off, type_len = hdr[3], hdr[4], hdr[5]
    out = bytearray(blob)
    struct.pack_into(">HBBIIIII", out, 0, *hdr)
    start = hdr_len + type_off
    words = struct.unpack_from(f"<{type_len // 4}I", blob, start)
    struct.pack_into(f">{type_len // 4}I", out, start, *words)
    return bytes(out)


def test_big_endian_read_and_write():
    b = BtfBuilder()
    i32 = b.int("int", 4, f.INT_SIGNED)
    b.struct("s", 8, [("a", i32, 0), ("b", i32, 32, 3)])
    b.enum("e", 8, [("BIG", 1 << 40), ("NEG", -1)], signed=True)
    b.decl_tag("tag", i32 + 1, 0)
    little = writer.write(b.build())
    big = byteswap_blob(little)
    assert big[:2] == b"\xeb\x9f"
    parsed = reader.parse(big, "big.btf")
    assert parsed.byteorder == ">"
    assert writer.write(parsed) == big
    assert writer.write(parsed, "<") == little
    assert parsed.types == reader.parse(little).types


def test_corpus_blob_survives_byteswap():
    from .conftest import corpus_path

    blob = corpus_path("vmlinux-6.1.0-56-cloud-amd64.btf").read_bytes()
    big = byteswap_blob(blob)
    parsed = reader.parse(big, "swapped")
    assert writer.write(parsed) == big
    assert writer.write(parsed, "<") == blob


def test_long_header_with_layout_section_is_kept():
    b = BtfBuilder()
    b.int("int", 4, f.INT_SIGNED)
    plain = writer.write(b.build())
    hdr = list(struct.unpack_from("<HBBIIIII", plain))
    body = plain[24:]
    layout = bytes([12, 0, 0, 0] * 4)
    hdr[3] = 32
    blob = struct.pack("<HBBIIIII", *hdr) + struct.pack("<II", len(body), len(layout))
    blob += body + layout
    parsed = reader.parse(blob, "long-header")
    assert parsed.layout == layout
    assert writer.write(parsed) == blob


@pytest.mark.skipif(sys.byteorder != "little", reason="host byte order assumption")
def test_split_btf_ids_and_strings_continue_after_base():
    base = BtfBuilder()
    i32 = base.int("int", 4, f.INT_SIGNED)
    base_btf = base.build()
    split = BtfBuilder(base_btf)
    p = split.ptr(i32)
    s = split.struct("mod_s", 8, [("p", p, 0)])
    split_btf = split.build()
    assert (p, s) == (2, 3)
    assert split_btf.strings.start == base_btf.strings.end
    blob = writer.write(split_btf)
    again = reader.parse(blob, "split", base_btf)
    assert again.name(again.type_by_id(3).name_off) == "mod_s"
    assert again.type_by_id(1).kind == f.INT


@pytest.mark.parametrize("kind", [f.INT, f.VAR, f.FUNC])
def test_tuple_extra_where_a_word_goes_is_a_value_error(kind):
    b = BtfBuilder()
    i32 = b.int("int", 4, f.INT_SIGNED)
    b.add(kind, "bad", i32 if kind == f.VAR else 4, extra=(1, 2, 3))
    with pytest.raises(ValueError, match=r"type 2 \((INT|VAR|FUNC) 'bad'\)"):
        writer.write(b.build())
