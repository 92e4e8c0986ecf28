"""The public API is deliberate: each package's ``__all__`` is pinned here, every module declares one.

Changing a package's exports means changing PUBLIC below in the same commit (and the README or
docs/architecture.md where they name it).
"""

from __future__ import annotations

import ast
import importlib

import pytest
from test_import_order import modules

PUBLIC = {
    "streamcue": ["StreamcueError", "__version__"],
    "streamcue.schemas": ["FileReport", "ID_FIELDS", "KINDS", "SCHEMA_VERSION", "check", "check_file", "check_records",
                          "load_durations", "load_schema", "schema_registry", "validate", "validate_file"],
    "streamcue.anonymize": [],
    "streamcue.cli": ["app", "main"],
    "streamcue.dataset_builders": ["BUILDERS", "BuildReport", "Builder", "get_builder", "run_builder"],
    "streamcue.dataset_builders.estp_gen": [],
    "streamcue.annotation": [],
    "streamcue.release": [],
    "streamcue.loaders": ["RecordSet", "by_video", "load", "open_records", "video_path"],
    "streamcue.loaders.protocols": ["Context", "PROTOCOLS", "Protocol", "Turn", "protocol_for"],
    "streamcue.loaders.strategies": ["STRATEGIES", "applicable", "make_strategy"],
    "streamcue.metrics": ["EvalContext", "METRICS", "Metric", "evaluate", "get_metric"],
    "streamcue.testing": [],
}


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_package_exports_are_pinned(package):
    assert sorted(importlib.import_module(package).__all__) == PUBLIC[package]


def test_every_package_is_pinned():
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    assert packages == set(PUBLIC)


def test_every_module_declares_all_and_each_name_exists():
    """``__all__`` is a literal list of names that the module defines or imports (read from the source)."""
    problems = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared = [node for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    and any(getattr(t, "id", None) == "__all__"
                            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
        if not declared:
            problems.append(f"{name}: no __all__")
            continue
        defined = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Assign):
                defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                defined.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                defined.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Try):
                defined.update(t.id for sub in ast.walk(node) if isinstance(sub, ast.Assign)
                               for t in sub.targets if isinstance(t, ast.Name))
        names = ast.literal_eval(declared[-1].value)
        problems += [f"{name}: __all__ names {n!r}, which it does not define" for n in names if n not in defined]
    assert problems == []
