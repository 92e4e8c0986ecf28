"""Imports go one way: no cycle between files or packages, and no import against the order in docs/architecture.md.

Every ``import`` of every module counts, also the ones inside functions (a lazy import hides a
cycle, it does not remove it). The layers are read from the ``import-order`` block of
docs/architecture.md, highest first: a module may import its own layer and the layers below it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("streamcue", "schemas", "anonymize", "dataset_builders", "annotation", "release", "loaders", "metrics")
CLI = re.compile(r"^streamcue\.(cli(\.\w+)?|demo|__main__)$")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] != "streamcue":
        parts.insert(0, "streamcue")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = REPO) -> dict[str, Path]:
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[module_name(path)] = path
    return found


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The streamcue modules that ``name`` imports (``from pkg import mod``: mod; ``from pkg import x``: pkg)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None,
                                                                                                          [base])])
            for alias in node.names:
                out.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(path, name, set(found)) for name, path in found.items()}


def layer_of(name: str) -> str:
    if CLI.match(name):
        return "cli"
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in FOLDERS[1:] + ("testing",):
        return parts[1]
    return "core"


def documented_order(text: str | None = None) -> list[str]:
    """The layers of the ``import-order`` block in docs/architecture.md, lowest first."""
    text = text if text is not None else (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```text import-order\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no ```text import-order block"
    return [line.split()[0] for line in block.group(1).splitlines() if line.strip()][::-1]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def order_violations(edges: dict[str, set[str]], order: list[str]) -> list[str]:
    rank = {layer: i for i, layer in enumerate(order)}
    return [f"{a} ({layer_of(a)}) imports {b} ({layer_of(b)})" for a, targets in sorted(edges.items())
            for b in sorted(targets) if rank[layer_of(b)] > rank[layer_of(a)]]


def test_every_layer_is_documented():
    order = documented_order()
    assert sorted(order) == sorted({layer_of(m) for m in modules()} | {"cli", "core"}), order


def test_no_cycle_between_files():
    assert cycles(graph()) == []


def test_no_cycle_between_packages_and_no_import_against_the_order():
    edges = graph()
    layers: dict[str, set[str]] = {}
    for a, targets in edges.items():
        layers.setdefault(layer_of(a), set()).update(layer_of(b) for b in targets if layer_of(b) != layer_of(a))
    assert cycles(layers) == []
    assert order_violations(edges, documented_order()) == []


def test_the_package_never_imports_its_test_scaffolding():
    edges = graph()
    assert [a for a, targets in edges.items() if not a.startswith("streamcue.testing")
            and any(b.startswith("streamcue.testing") for b in targets)] == []


def test_the_checks_catch_a_cycle_and_an_upward_import():
    """Shown once on purpose: a file cycle, a package cycle and an import against the documented order."""
    edges = graph()
    edges["streamcue.schemas._validate"] = edges["streamcue.schemas._validate"] | {"streamcue.release.manifest"}
    assert any({"streamcue.release.manifest", "streamcue.schemas._validate"} <= set(c) for c in cycles(edges))
    assert any(v.startswith("streamcue.schemas._validate (schemas) imports streamcue.release.manifest")
               for v in order_violations(edges, documented_order()))
    doc = "```text import-order\ncli\nschemas\nrelease\ncore\n```"
    assert documented_order(doc) == ["core", "release", "schemas", "cli"]
