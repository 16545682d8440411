"""The layering rule of docs/architecture.md, checked on the imports of src/sparkprov.

Each layer imports only the layers below it (function-local imports count, and so do
imports made for type annotations alone), and no two modules import each other in a
circle at run time (an import made for annotations alone, under ``TYPE_CHECKING``, runs
no code, so it does not count there).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "sparkprov"

# bottom first; a module belongs to the longest prefix that names it ("" is the
# package's root, the public names it re-exports)
LAYERS: list[tuple[str, ...]] = [
    ("errors",),
    ("local", "executors"),
    ("plan",),
    ("store",),
    ("sources",),
    ("functions", "arrays"),
    ("capture",),
    ("query",),
    ("api",),
    ("rdd", "workflows", "graphs", "tuning"),
    ("",),
    ("script", "demo", "web", "cli.answers", "cli.text_table"),
    ("bench",),  # measures the command line's answers, among others
    ("cli",),  # the command: parses arguments, runs everything above
]


def layer(module: str, layers: list[tuple[str, ...]] = LAYERS) -> int:
    """The position in ``layers`` of ``module`` (a dotted name below the package)."""
    best, rank = -1, None
    for i, prefixes in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".") or prefix == "") and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"module {module!r} is in no layer: add it to LAYERS"
    return rank


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(root: Path, name: str = "sparkprov") -> list[tuple[str, str, int, bool]]:
    """Every import of a module of the package at ``root`` by another:
    ``(importer, imported, line, for annotations only)``."""
    modules = _modules(root)
    found = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _type_checking(block)
                       for n in ast.walk(block)}  # fmt: skip
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".") if package else []
                    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                    target = ".".join([*base, *([node.module] if node.module else [])])
                    target = f"{name}.{target}" if target else name
                else:
                    target = node.module or ""
                # "from pkg import module" imports the module
                targets = [
                    f"{target}.{a.name}" if _submodule(target, a.name, modules, name) else target for a in node.names
                ]
            else:
                continue
            for target in targets:
                if target == name or target.startswith(name + "."):
                    inner = target[len(name) + 1 :]
                    while inner and inner not in modules:  # an attribute of a module
                        inner = inner.rpartition(".")[0]
                    if inner != module:
                        found.append((module, inner, node.lineno, id(node) in typing_only))
    return sorted(set(found))


def _submodule(target: str, attr: str, modules: dict[str, Path], name: str) -> bool:
    inner = target[len(name) + 1 :] if target.startswith(name + ".") else "" if target == name else None
    return inner is not None and (f"{inner}.{attr}" if inner else attr) in modules


def upward(root: Path, layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    """The imports of a module of a layer above the importer's."""
    return [
        f"{src}:{line} imports {dst} (layer {layers[layer(dst, layers)]} is above {layers[layer(src, layers)]})"
        for src, dst, line, _ in imports(root)
        if layer(dst, layers) > layer(src, layers)
    ]


def circles(root: Path) -> list[list[str]]:
    """Groups of modules that import each other, directly or not, at run time."""
    graph: dict[str, set[str]] = {}
    for src, dst, _, typing_only in imports(root):
        if not typing_only:
            graph.setdefault(src, set()).add(dst)
    # Tarjan's strongly connected components, iteratively (no recursion limit)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
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


def test_no_module_imports_a_layer_above_its_own():
    assert upward(PACKAGE) == []


def test_no_modules_import_each_other_in_a_circle():
    assert circles(PACKAGE) == []


def test_every_module_is_in_a_layer():
    for module in _modules(PACKAGE):
        layer(module)


def test_the_checks_find_an_upward_import_and_a_circle(tmp_path):
    root = tmp_path / "sparkprov"
    (root / "store").mkdir(parents=True)
    (root / "query").mkdir()
    (root / "__init__.py").write_text("")
    (root / "store" / "__init__.py").write_text("")
    (root / "query" / "__init__.py").write_text("")
    (root / "query" / "trace.py").write_text("from ..store.files import x\n")
    (root / "store" / "files.py").write_text("def f():\n    from ..query import trace\n")
    assert upward(root) == [
        "store.files:2 imports query.trace (layer ('query',) is above ('store',))",
    ]
    assert circles(root) == [["query.trace", "store.files"]]
    # an import for annotations alone is no circle, but still no upward import
    (root / "store" / "files.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..query.trace import T\n"
    )
    assert circles(root) == []
    assert len(upward(root)) == 1


def test_no_module_is_over_600_lines():
    long = {m: n for m, path in _modules(PACKAGE).items() if (n := len(path.read_text().splitlines())) > 600}
    assert long == {}, "split these by what their parts own"
