"""No import cycles inside canonbtf (issue 29), judged on the source with `ast`.

An import counts wherever it is written: at module level and inside functions (a lazy
import is still a dependency; it only moves when it happens). Imports under
`if TYPE_CHECKING:` are not counted: they never run and name types for annotations only.
`from package import name` counts as importing the submodule `package.name` when that
is a module, else as importing `package`.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "canonbtf"


def modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, whether it is a package's __init__.py)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _runtime_nodes(tree: ast.AST):
    """Every node except what sits under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imported(name: str, path: Path, is_package: bool, known: dict) -> set[str]:
    """The canonbtf modules that module `name` imports."""
    here = name if is_package else name.rpartition(".")[0]
    out = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here.split(".")
                base = parts[:len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                out.add(sub if sub in known else module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {module for module in out if module in known and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, is_package, known)
            for name, (path, is_package) in known.items()}


def test_the_walk_sees_imports():
    """The walk itself: it finds relative, absolute, lazy and submodule imports."""
    graph = import_graph()
    assert "canonbtf.btf.reader" in graph["canonbtf.cli"]              # module level
    assert "canonbtf.canon" in graph["canonbtf.cli"]                   # inside a function
    assert "canonbtf.native" in graph["canonbtf.canon.accel"]       # `from .. import native`
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(import_graph()) == []
