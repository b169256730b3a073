"""The layout of the package shows its design: no import circle among neardup's modules (imports
inside functions count too), no module over 600 lines, and `import neardup` does not import
Dask. Read from the source files with ast, not from what an import happens to load."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "neardup"

#: The most lines of one module.
MOST_LINES = 600


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``), and the
    compiled core by its stub."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyi")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.setdefault(".".join(parts), path)
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in the file."""

    def known(dotted: str) -> str | None:
        # `from . import x` names a module or a name of the package: the longest module it is.
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    wanted: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            wanted += [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            wanted += [alias.name for alias in node.names]
    targets = {known(w) for w in wanted if w == "neardup" or w.startswith("neardup.")}
    return {t for t in targets if t is not None and t != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_is_read_from_every_module():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # The checks below see imports inside functions too, and the package's own layout.
    assert "neardup.dask.against" in graph["neardup.cli.dedup_dask"]
    assert "neardup.dask.driver" in graph["neardup.dask"]
    assert "neardup.sources" in graph["neardup.dedup"]


def test_no_import_cycle_among_neardup_modules():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_a_cycle_is_found_when_there_is_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_over_600_lines():
    lengths = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert lengths and {p: n for p, n in lengths.items() if n > MOST_LINES} == {}


def test_importing_neardup_does_not_import_dask():
    done = subprocess.run(
        [sys.executable, "-c", "import neardup, sys; print('dask' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_every_public_name_is_the_object_its_module_defines():
    """The package's names load on first use (PEP 562): each of ``__all__`` is found, is the
    object of the module that defines it (also after that module was imported by name, which
    binds the submodule as the package's attribute: ``neardup.dedup`` stays the function), and
    the listed names are exactly those the package loads."""
    probe = """
import importlib, sys
import neardup.dedup, neardup.tune, neardup.normalize, neardup.threshold_table
import neardup
for name in neardup.__all__:
    value = getattr(neardup, name)
    home = importlib.import_module("neardup." + neardup._HOMES[name])
    assert value is getattr(home, name), name
    assert not isinstance(value, type(sys)), name
assert set(neardup.__all__) == set(neardup._HOMES) - {"__version__"}
assert neardup.kernels is sys.modules["neardup.kernels"]
print(len(neardup.__all__), neardup.dedup(["a b c d", "a b c d"]).keep.tolist())
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["37", "[True,", "False]"]


def test_the_package_pickles_by_name_as_a_module_does():
    """A task whose function names the package (its globals hold ``neardup``) is pickled for a
    Dask worker: the package goes by name, as a plain module does."""
    import pickle

    import cloudpickle

    import neardup

    def task() -> object:
        return neardup.dedup

    assert pickle.loads(pickle.dumps(neardup)) is neardup
    assert cloudpickle.loads(cloudpickle.dumps(task))() is neardup.dedup
