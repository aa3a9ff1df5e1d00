"""Every fast path that can leave its input to the pure reference counts it
(native.FALLBACKS), and says so on stderr with CANONBTF_FALLBACKS set: tools/bench_all.py
counts those lines per command and kernel, where any is a bug to fix.

A fallback is provoked here by a BTF no compiled part can read: a hand-made enumerator
below zero, which no 32-bit word of the type section holds (writer.section_words gives
None), so every compiled part declines and the reference runs.
"""

from __future__ import annotations

import io

import pytest

from canonbtf import native
from canonbtf.btf import format as f
from canonbtf.btf.builder import BtfBuilder
from canonbtf.btf.model import Btf, Type
from canonbtf.check import validator
from canonbtf.diff import compiled_report, diff_btfs
from canonbtf.emit import raw
from canonbtf.emit.c.accel import CompiledSpelling

pytestmark = pytest.mark.skipif(native.compiled("canonbtf._btf", "diff_report") is None,
                                reason="canonbtf._btf is not built (no compiler, PyPy, or "
                                       "CANONBTF_PURE set)")


def unreadable() -> Btf:
    """A BTF whose enum holds -1 as a Python int: no word section holds it as is."""
    b = BtfBuilder()
    b.struct("s", 4, [("v", b.int("int", 4, f.INT_SIGNED), 0)])
    btf = b.build()
    name = btf.types[0].name_off
    return Btf([*btf.types, Type(f.ENUM, name, 0, 4, 0, [(name, -1)])], btf.strings)


def counted(monkeypatch, capsys, part: str, run) -> str:
    """`run()`'s stderr with fallbacks printed, after checking it counted one of `part`."""
    monkeypatch.setenv(native.FALLBACK_ENV, "1")
    before = native.FALLBACKS[part]
    run()
    assert native.FALLBACKS[part] == before + 1
    return capsys.readouterr().err


def test_diff_report_fallback_is_counted_and_printed(monkeypatch, capsys):
    btf = unreadable()
    err = counted(monkeypatch, capsys, "diff report", lambda: compiled_report(btf, btf))
    assert err == "canonbtf: fallback: diff report: types not packed as read\n"
    assert not diff_btfs(btf, btf)  # the reference does the job


def test_raw_dump_fallback_is_counted(monkeypatch, capsys):
    err = counted(monkeypatch, capsys, "dump raw",
                  lambda: raw._compiled_dump(unreadable(), io.StringIO()))
    assert err.startswith("canonbtf: fallback: dump raw: ")


def test_c_dump_fallback_is_counted(monkeypatch, capsys):
    err = counted(monkeypatch, capsys, "dump c", lambda: CompiledSpelling.of(unreadable()))
    assert err == "canonbtf: fallback: dump c: types no longer packed as read\n"


def test_check_fallback_is_counted(monkeypatch, capsys):
    err = counted(monkeypatch, capsys, "check",
                  lambda: validator.compiled_findings(unreadable()))
    assert err == "canonbtf: fallback: check: a level not packed as read\n"


def test_nothing_is_printed_without_the_variable(monkeypatch, capsys):
    monkeypatch.delenv(native.FALLBACK_ENV, raising=False)
    before = native.FALLBACKS["dump c"]
    CompiledSpelling.of(unreadable())
    assert native.FALLBACKS["dump c"] == before + 1
    assert capsys.readouterr().err == ""


def test_pure_path_is_no_fallback(monkeypatch):
    """CANONBTF_PURE asks for the reference: nothing declined, nothing counted."""
    monkeypatch.setenv(native.PURE_ENV, "1")
    before = sum(native.FALLBACKS.values())
    btf = unreadable()
    compiled_report(btf, btf)
    raw._compiled_dump(btf, io.StringIO())
    CompiledSpelling.of(btf)
    validator.compiled_findings(btf)
    assert sum(native.FALLBACKS.values()) == before


def test_pairing_fallback_is_counted(monkeypatch, capsys):
    """diff_joint refuses words it cannot read: the reference pairs (from the types)."""
    from canonbtf.diff.pairing import Lookup, Root, _compiled_joint

    btf = unreadable()
    side = Lookup(btf.all_types(), btf.names, (b"\0\0\0", [(0, b"\0")]))
    groups = [[Root(1, "struct", "s"), Root(1, "struct", "s")]]
    err = counted(monkeypatch, capsys, "diff pairing",
                  lambda: _compiled_joint(side, side, groups, groups))
    assert err.startswith("canonbtf: fallback: diff pairing: ")
