"""The one table of kinds (canonbtf/spec/) and the C generated from it.

The committed C (native/csrc/kinds.def, features.def, func_flags.def, dwarf_numbers.def,
wanted_attrs.def, check_keys.def) is what spec/gen_c.py writes from the spec today, so no
test needs to read C source; spec/ imports nothing else of canonbtf; and a kind added as one
row reaches both implementations: in a copy of the package with a made-up row, the Python
modules and a C program compiled against the regenerated header (gcc: the judge of what the
C side reads) see its words, roles, name and sets.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

from canonbtf.spec import gen_c
from canonbtf.spec import kinds as spec

from .conftest import REPO, need_tool

SPEC = REPO / "canonbtf" / "spec"


def test_the_committed_c_is_what_the_spec_writes():
    for name, text in gen_c.generated().items():
        assert (gen_c.OUT / name).read_text() == text, f"run python -m canonbtf.spec.gen_c ({name})"


def test_the_committed_kind_functions_are_what_the_table_makes():
    """btf/kind_functions.py is generate()'s source, and what the hot paths run."""
    from canonbtf.btf import kinds, model
    from canonbtf.dwarf import fragment

    path = REPO / "canonbtf" / "btf" / kinds.GENERATED
    assert path.read_text() == kinds.generated_module(), "run python -m canonbtf.btf.kinds"
    model.per_kind()
    for table in (model.REFS, model.REMAP, fragment.RECORD_REFS, fragment.RECORD_REMAP):
        assert {f.__module__ for f in table} == {"canonbtf.btf.kind_functions"}


def test_the_spec_imports_nothing_else_of_canonbtf():
    for path in SPEC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1, f"{path.name} imports from outside spec/"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [getattr(node, "module", None) or "", *(a.name for a in node.names)]
                assert not any(n.startswith("canonbtf") for n in names), path.name


def test_each_kinds_number_is_its_row():
    for row in spec.ROWS:
        assert getattr(spec, row.name) == row.number
        assert row.extra is None or len(row.extra) == row.fixed_words
        assert len(row.item) <= row.item_words and bool(row.item) == bool(row.item_words)
    assert spec.QUALIFIER < spec.MODIFIER and spec.TAGGED < spec.C_NAMED


# A made-up kind: a type id in size_or_type, two fixed words (a value and a type id),
# items of (type id, name, value), a qualifier that needs resolving.
FAKE_ROW = ('    Kind(FAKE, "FAKE", TYPE, fixed_words=2, item_words=3, extra=(VALUE, TYPE),\n'
            '         item=(TYPE, NAME, VALUE), modifier=True, qualifier=True,\n'
            '         needs_resolve=True),\n')

PYTHON_SIDE = r"""
import json
from canonbtf.btf import format as f, kinds, writer
from canonbtf.btf.model import Type
from canonbtf.check import env
from canonbtf.spec import kinds as spec
k = spec.FAKE
t = Type(k, 5, 0, 3, (7, 4), [(2, 6, 9), (8, 0, 1)])
print(json.dumps({
    "number": k, "name": f.kind_name(k), "max_kind": f.MAX_KIND,
    "refs": t.refs(), "names": t.name_offsets(),
    "remap": kinds.specialise("remap", "record")[k]((k, "n", 0, 3, (7, 4), ((2, "m", 9),)),
                                                     list(range(0, 100, 10))),
    "words": len(writer._words([Type(k, 0, 0, 3, (1, 2), [(2, 6, 9)])])),
    "modifier": env.MODIFIER[k], "needs_resolve": env.NEEDS_RESOLVE[k],
    "ahead": kinds.specialise("refs", "type")[k].__module__ == "canonbtf.btf.kind_functions",
}))
"""

C_SIDE = r"""
#include <stdio.h>
#include "kinds.h"
int main(void)
{
    printf("%d %s %u %u %s %s %d %d %d %d %d\n", K_FAKE, kind_name(K_FAKE), K_MAX,
           kind_fixed_words(K_FAKE), kind_fixed_roles(K_FAKE), kind_item_roles(K_FAKE),
           (int)kind_item_words(K_FAKE), kind_in(KINDS_TYPED, K_FAKE),
           kind_in(KINDS_QUALIFIER, K_FAKE), kind_in(KINDS_SINGLE_REF, K_FAKE),
           kind_in(KINDS_ITEMS_NAMED, K_FAKE));
    return 0;
}
"""


def package_with_fake_kind(tmp_path: Path) -> Path:
    """A copy of canonbtf (Python only) whose spec/kinds.py has one more row, FAKE."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "canonbtf", root / "canonbtf",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    path = root / "canonbtf" / "spec" / "kinds.py"
    text = path.read_text()
    numbers = "TYPE_TAG, ENUM64) = range(20)"
    last = '    Kind(ENUM64, "ENUM64", SIZE, item_words=3, item=_ENUMERATORS, **_TAGGED),\n'
    assert numbers in text and last in text
    text = text.replace(numbers, "TYPE_TAG, ENUM64, FAKE) = range(21)")
    path.write_text(text.replace(last, last + FAKE_ROW))
    return root


def test_a_new_kind_is_one_row_for_python_and_c(tmp_path):
    root = package_with_fake_kind(tmp_path)
    env = {"PYTHONPATH": str(root), "CANONBTF_PURE": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", PYTHON_SIDE], env=env, cwd=root,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert not seen.pop("ahead")  # kind_functions.py does not know the row: generated here
    assert seen["number"] == seen["max_kind"] == 20 and seen["name"] == "FAKE"
    assert seen["refs"] == [3, 4, 2, 8]
    assert seen["names"] == [5, 6, 0]
    assert seen["remap"] == [20, "n", 0, 30, [7, 40], [[20, "m", 9]]]
    assert seen["words"] == 3 + 2 + 3
    assert seen["modifier"] and seen["needs_resolve"]
    # The same from the kind functions generated ahead, once written for the new row.
    subprocess.run([sys.executable, "-m", "canonbtf.btf.kinds"], env=env, cwd=root, check=True)
    again = subprocess.run([sys.executable, "-c", PYTHON_SIDE], env=env, cwd=root,
                           capture_output=True, text=True, check=True)
    seen_again = json.loads(again.stdout)
    assert seen_again.pop("ahead") and seen_again == seen

    gcc = need_tool("gcc")
    subprocess.run([sys.executable, "-m", "canonbtf.spec.gen_c"], env=env, cwd=root, check=True)
    csrc = root / "canonbtf" / "native" / "csrc"
    assert "KIND(FAKE, 20, 2, 3, \"VT\", \"TNV\")" in (csrc / "kinds.def").read_text()
    (tmp_path / "fake.c").write_text(C_SIDE)
    subprocess.run([gcc, "-Wall", "-Werror", "-I", str(csrc), str(tmp_path / "fake.c"),
                    "-o", str(tmp_path / "fake")], check=True)
    out = subprocess.run([str(tmp_path / "fake")], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["20", "FAKE", "20", "2", "VT", "TNV", "3", "1", "1", "0", "0"]
