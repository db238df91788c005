"""Import direction, read from the source with ast (nothing is imported), imports inside functions
included: no cycle between modules, no cycle between wings, and each wing imports only what the table
"Wings and what each may import" of docs/architecture.md lets it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import argus_eval

ROOT = Path(argus_eval.__file__).parent
DOC = ROOT.parents[1] / "docs" / "architecture.md"
SHARED = {"errors", "registry", "version"}  # every wing may import these (the root imports the runner)


def _module_name(path: Path) -> str:
    return ".".join(("argus_eval", *path.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")


def _edges() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: relative import (the check reads absolute ones)"
                if node.module and node.module.startswith("argus_eval"):
                    for alias in node.names:  # "from pkg import submodule" depends on the submodule
                        sub = f"{node.module}.{alias.name}"
                        deps.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("argus_eval")}
        edges[name] = {d for d in deps if d in modules and d != name}
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _wing(module: str) -> str:
    """The wing of a module: its folder under argus_eval (or the top-level module itself: cli, errors)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _wing_edges(edges: dict[str, set[str]]) -> dict[tuple[str, str], set[str]]:
    """(importing wing, imported wing) -> the importing modules, shared leaves left out."""
    out: dict[tuple[str, str], set[str]] = {}
    for m, deps in edges.items():
        for d in deps:
            a, b = _wing(m), _wing(d)
            if a != b and b not in SHARED:
                out.setdefault((a, b), set()).add(m)
    return out


def _allowed() -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
    """From the docs' table: wing -> wings it may import, and (wing, wing) -> the only files and folders
    of the first that may import the second (a "`x.py` also `w`" clause), read from the third column."""
    wings: dict[str, set[str]] = {}
    scoped: dict[tuple[str, str], set[str]] = {}
    rows = [r for r in DOC.read_text(encoding="utf-8").splitlines() if re.match(r"\| `[a-z_]+(/|\.py)`", r)]
    names = {
        n.rstrip("/").removesuffix(".py") for r in rows for n in re.findall(r"`([^`]+)`", r.split("|")[1])
    }
    for row in rows:
        cells = row.split("|")
        owners = [n.rstrip("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", cells[1])]
        text = cells[3].strip()
        for clause in text.split(";"):
            scope, also, rest = clause.partition(" also ")
            found = set(re.findall(r"`([a-z_]+)`", rest if also else clause)) & names
            for owner in owners:
                # "everything": every wing but itself and cli, which nothing imports
                targets = names - {owner, "cli"} if clause.strip() == "everything" else found
                if also:
                    files = {f.rstrip("/").removesuffix(".py") for f in re.findall(r"`([^`]+)`", scope)}
                    for t in targets:
                        scoped[(owner, t)] = files
                wings.setdefault(owner, set()).update(targets)
    return wings, scoped


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(_edges()) == []


def test_no_import_cycle_between_wings() -> None:
    graph: dict[str, set[str]] = {}
    for a, b in _wing_edges(_edges()):
        graph.setdefault(a, set()).add(b)
    assert _cycles(graph) == []


def test_each_wing_imports_only_what_the_architecture_allows() -> None:
    allowed, scoped = _allowed()
    assert {"models", "zoo", "runner", "tasks", "commands", "cli"} <= set(allowed)  # the table was read
    assert "zoo" not in allowed["models"] and "runner" not in allowed["tasks"]
    bad = []
    for (a, b), importers in sorted(_wing_edges(_edges()).items()):
        if b not in allowed.get(a, set()):
            bad.append(f"{a} -> {b}: {sorted(importers)}")
        elif (a, b) in scoped:
            inside = {m for m in importers if m.split(".")[2] not in scoped[(a, b)]}
            if inside:
                bad.append(f"{a} -> {b} outside {sorted(scoped[(a, b)])}: {sorted(inside)}")
    assert bad == []


def test_models_import_nothing_above_them() -> None:
    # the one upward import there was: loading a zoo: spec read the zoo wing's catalog
    edges = _edges()
    above = {"zoo", "runner", "tasks", "commands", "cli", "scoring", "report", "advisor", "testing"}
    assert {
        d for m, deps in edges.items() if _wing(m) == "models" for d in deps if _wing(d) in above
    } == set()


def test_no_module_imports_the_package_root_which_imports_the_runner() -> None:
    # the root exports evaluate (runner/entry.py) on first use; the version lives in argus_eval.version
    edges = _edges()
    assert "argus_eval.runner.entry" in edges["argus_eval"]
    assert sorted(m for m, deps in edges.items() if "argus_eval" in deps) == []


def test_the_checks_see_a_cycle_and_a_forbidden_import() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # a deferred import inside a function counts as much as a top-level one
    tree = ast.parse("def f():\n    from argus_eval.zoo.catalog import read_manifest\n")
    found = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert found == ["argus_eval.zoo.catalog"] and _wing(found[0]) == "zoo"
    allowed, _ = _allowed()
    assert "zoo" not in allowed["models"]


def test_no_runner_folder_holds_more_than_twelve_modules() -> None:
    # the runner is split by job (plan, inputs, execute, ray, judge, timing, score, write): a folder
    # that grows past a dozen modules is one that lost its single job
    folders = [ROOT / "runner", *(p.parent for p in (ROOT / "runner").rglob("*/__init__.py"))]
    sizes = {
        str(f.relative_to(ROOT)): len([p for p in f.glob("*.py") if p.name != "__init__.py"]) for f in folders
    }
    assert len(sizes) > 1 and {f: n for f, n in sizes.items() if n > 12} == {}
