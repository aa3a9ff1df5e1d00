#!/usr/bin/env python3
"""Coverage-guided fuzzing of canonbtf._btf, the compiled type-section part (atheris).

Each input damages a valid BTF blob, plain or split over a small base, or that base
(words overwritten at a chosen place, or the blob cut short), then reads and sorts it
(with and without dedup, either order) with the compiled part and with the Python reference.
Both must end alike: the same bytes, or the same error message. A blob without a base is also
dumped as C (emit/c/csrc/cdump.c against emit/c/header.py): the same header or the same
message. Every input is also dumped raw (emit/csrc/rawdump.c against emit/raw.py, split BTF
over its base too): the same text or the same message. It also checks it: the compiled
validator of `check` (check/csrc/check.c) must give the Python validator's findings, and the
Python validator must never raise; and its diff against the undamaged blob, where the compiled
report (diff/csrc/diffreport.c) takes the pair, must be the reference's, as text and JSON.
Anything else stops the run with the input saved.
Build and run it as tools/fuzz_core.py says (CANONBTF_SANITIZE=fuzzer with clang,
atheris's ASan preloaded), naming this script: libFuzzer then steers by the C's coverage.
"""

from __future__ import annotations

import io
import os
import random
import sys
from pathlib import Path

import atheris

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from canonbtf import native  # noqa: E402
from canonbtf.btf import reader, writer  # noqa: E402
from canonbtf.canon import canonicalize  # noqa: E402
from canonbtf.check import validator  # noqa: E402
from canonbtf.diff import compiled_report, diff_btfs  # noqa: E402
from canonbtf.diff.text import render_json, render_text  # noqa: E402
from canonbtf.errors import InputError  # noqa: E402
from tests.fuzzing import handmade_btf  # noqa: E402
from tests.test_compiled_dump import dump, random_c_btf  # noqa: E402
from tests.test_compiled_order import random_btf  # noqa: E402
from tests.test_compiled_raw import outcome as raw_outcome  # noqa: E402

BASE = writer.write(random_btf(random.Random(9), 40))
# (blob, its base's blob or None).
SEEDS = [(writer.write(handmade_btf()), None), (writer.write(handmade_btf(), ">"), None),
         *((writer.write(random_btf(random.Random(n), 60)), None) for n in range(4)),
         (writer.write(random_btf(random.Random(10), 30, reader.parse(BASE))), BASE),
         *((writer.write(random_c_btf(random.Random(n), 80)), None) for n in range(4))]


def parsed(blob: bytes, base: bytes | None):
    """`blob` read afresh (over a fresh base: the reference decodes what it reads)."""
    return reader.parse(blob, "<fuzz>", reader.parse(base, "base") if base else None)


def outcome(blob: bytes, base: bytes | None, dedup: bool, order: str) -> tuple[str, object]:
    try:
        return "ok", writer.write(canonicalize(parsed(blob, base), dedup=dedup, order=order))
    except InputError as e:
        return "error", str(e)


def both(make, *args) -> tuple:
    """`make(*args)` with the reference, then with the compiled part."""
    os.environ[native.PURE_ENV] = "1"
    reference = make(*args)
    del os.environ[native.PURE_ENV]
    return reference, make(*args)


def check_agrees(blob: bytes, base: bytes | None) -> None:
    """The Python validator ends (findings, not a traceback); where the compiled one takes
    the BTF, it gives the same lines."""
    try:
        btf = parsed(blob, base)
    except InputError:
        return
    compiled = None
    if validator.compiled_findings(btf) is not None:
        compiled = list(validator.violation_lines(btf))
    reference = [str(v) for v in validator.validate_in_python(parsed(blob, base))]
    assert compiled in (None, reference), f"compiled {compiled[:3]} vs Python {reference[:3]}"


def diff_agrees(old: bytes, new: bytes, base: bytes | None) -> None:
    """Where the compiled report takes the pair, its text and JSON are the reference's."""
    try:
        made = [compiled_report(parsed(old, base), parsed(new, base), json) for json in (0, 1)]
    except InputError:
        return
    if made[0] is None:
        return
    texts = io.StringIO(), io.StringIO()
    os.environ[native.PURE_ENV] = "1"
    result = diff_btfs(parsed(old, base), parsed(new, base))
    del os.environ[native.PURE_ENV]
    render_text(result, texts[0])
    render_json(result, texts[1])
    for (report, _), text in zip(made, texts):
        assert report.decode("latin-1") == text.getvalue(), "diff: compiled vs reference"


def damaged(fdp: atheris.FuzzedDataProvider, blob: bytes) -> bytes:
    """`blob` cut short, or with a few runs of bytes overwritten."""
    if fdp.ConsumeIntInRange(0, 7) == 0:
        return blob[:fdp.ConsumeIntInRange(0, len(blob))]
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        at = fdp.ConsumeIntInRange(0, len(blob))
        patch = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 8))
        blob = blob[:at] + patch + blob[at + len(patch):]
    return blob


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    blob, base = SEEDS[fdp.ConsumeIntInRange(0, len(SEEDS) - 1)]
    seed = blob
    # The validator takes a base's types as valid, whatever they are: a damaged base that
    # still reads (a FLOAT of size 0, a FUNC of type 0) must give findings, not tracebacks.
    if base is not None and fdp.ConsumeIntInRange(0, 3) == 0:
        base = damaged(fdp, base)
    else:
        blob = damaged(fdp, blob)
    dedup = fdp.ConsumeBool()
    order = "name" if fdp.ConsumeBool() else "kind"
    check_agrees(blob, base)
    diff_agrees(seed, blob, base)
    reference, fast = both(outcome, blob, base, dedup, order)
    assert fast == reference, f"compiled {fast[0]} vs reference {reference[0]}"
    reference, fast = both(raw_outcome, blob, base)
    assert fast == reference, f"raw dump: compiled {fast[0]} vs reference {reference[0]}"
    if base is None:
        try:
            reader.parse(blob, "blob")
        except InputError:
            return
        reference, fast = both(dump, blob)
        assert fast == reference, f"C header: compiled {fast[0]} vs reference {reference[0]}"


if __name__ == "__main__":
    if native.compiled("canonbtf._btf", "order") is None:
        sys.exit("fuzz_btf: canonbtf._btf is not built (or CANONBTF_PURE is set)")
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
