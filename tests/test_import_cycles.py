"""Import direction, read from the source with ast (nothing is imported; import_graph_fixtures.py), imports
inside functions included: no cycle between modules, no cycle between wings, and each wing imports only
what the table "Wings and what each may import" of docs/architecture.md lets it."""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph_fixtures import ROOT, allowed, cycles, edges, wing, wing_edges


def test_no_import_cycle_between_modules() -> None:
    assert cycles(edges()) == []


def test_no_import_cycle_between_wings() -> None:
    graph: dict[str, set[str]] = {}
    for a, b in wing_edges(edges()):
        graph.setdefault(a, set()).add(b)
    assert cycles(graph) == []


def test_each_wing_imports_only_what_the_architecture_allows() -> None:
    may, scoped = allowed()
    assert {"models", "zoo", "runner", "tasks", "commands", "cli"} <= set(may)  # the table was read
    assert "zoo" not in may["models"] and "runner" not in may["tasks"]
    bad = []
    for (a, b), importers in sorted(wing_edges(edges()).items()):
        if b not in may.get(a, set()):
            bad.append(f"{a} -> {b}: {sorted(importers)}")
        elif (a, b) in scoped:
            inside = {m for m in importers if m.split(".")[2] not in scoped[(a, b)]}
            if inside:
                bad.append(f"{a} -> {b} outside {sorted(scoped[(a, b)])}: {sorted(inside)}")
    assert bad == []


def test_models_import_nothing_above_them() -> None:
    # the one upward import there was: loading a zoo: spec read the zoo wing's catalog
    graph = edges()
    above = {"zoo", "runner", "tasks", "commands", "cli", "scoring", "report", "advisor", "testing"}
    assert {d for m, deps in graph.items() if wing(m) == "models" for d in deps if wing(d) in above} == set()


def test_no_module_imports_the_package_root_which_imports_the_runner() -> None:
    # the root exports evaluate (runner/entry.py) on first use; the version lives in argus_eval.version
    graph = edges()
    assert "argus_eval.runner.entry" in graph["argus_eval"]
    assert sorted(m for m, deps in graph.items() if "argus_eval" in deps) == []


def test_the_checks_see_a_cycle_and_a_forbidden_import() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # a deferred import inside a function counts as much as a top-level one
    tree = ast.parse("def f():\n    from argus_eval.zoo.catalog import read_manifest\n")
    found = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert found == ["argus_eval.zoo.catalog"] and found[0] is not None and wing(found[0]) == "zoo"
    may, _ = allowed()
    assert "zoo" not in may["models"]


def test_no_runner_folder_holds_more_than_twelve_modules() -> None:
    # the runner is split by job (plan, inputs, execute, ray, judge, timing, score, write): a folder
    # that grows past a dozen modules is one that lost its single job
    folders = [ROOT / "runner", *(p.parent for p in (ROOT / "runner").rglob("*/__init__.py"))]
    sizes = {
        str(f.relative_to(ROOT)): len([p for p in f.glob("*.py") if p.name != "__init__.py"]) for f in folders
    }
    assert len(sizes) > 1 and {f: n for f, n in sizes.items() if n > 12} == {}


def test_no_test_module_imports_another() -> None:
    # Shared builders live in fixture modules (tests/*_fixtures.py): a test module that imports another
    # runs that module's tests' imports and fixtures twice, and ties the two files' refactors together.
    tests = Path(__file__).resolve().parent
    offenders = []
    for path in sorted(tests.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            offenders += [f"{path.name} imports {n}" for n in names if n.split(".")[0].startswith("test_")]
    assert not offenders, offenders
