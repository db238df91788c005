"""The package's import graph read from the source with ast (nothing is imported), imports inside functions
included, and the table "Wings and what each may import" of docs/architecture.md as claims: shared by
test_import_cycles.py (no cycle, no import the table forbids) and test_docs_match_code.py (the docs name
every wing and every arrow they draw is an import)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import argus_eval

ROOT = Path(argus_eval.__file__).parent
REPO = ROOT.parents[1]
DOC = REPO / "docs" / "architecture.md"
SHARED = {"errors", "registry", "version"}  # every wing may import these (the root imports the runner)
PACKAGE_ROOT = "argus_eval"  # the wing name of the package's __init__.py


def module_name(path: Path) -> str:
    """argus_eval.x.y of a source file under ROOT."""
    return ".".join(("argus_eval", *path.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")


def edges() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (from pkg import submodule: the submodule)."""
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    out: dict[str, set[str]] = {}
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
        out[name] = {d for d in deps if d in modules and d != name}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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
        for w in sorted(graph.get(v, ())):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def wing(module: str) -> str:
    """The wing of a module: its folder under argus_eval (or the top-level module itself: cli, errors)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def wing_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], set[str]]:
    """(importing wing, imported wing) -> the importing modules, shared leaves left out."""
    out: dict[tuple[str, str], set[str]] = {}
    for m, deps in graph.items():
        for d in deps:
            a, b = wing(m), wing(d)
            if a != b and b not in SHARED:
                out.setdefault((a, b), set()).add(m)
    return out


def wings() -> set[str]:
    """Every wing of the package: its folders and top-level modules, the shared leaves and root left out."""
    return {wing(m) for m in edges()} - SHARED - {PACKAGE_ROOT}


@dataclass(frozen=True)
class Claim:
    """One cell of the table's third column read as "owner may import target": files, when given, are the
    only files and folders of owner that may (a "`x.py` also `w`" clause); explicit is False for the wings
    "everything" implies, which the row permits without saying each is imported."""

    owner: str
    target: str
    files: frozenset[str] | None
    explicit: bool


def _names(cell: str) -> list[str]:
    return [n.rstrip("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", cell)]


def table_rows(doc: Path = DOC) -> list[str]:
    """The rows of the wing table (a first cell that starts with a backticked folder or .py file)."""
    return [r for r in doc.read_text(encoding="utf-8").splitlines() if re.match(r"\| `[a-z_]+(/|\.py)`", r)]


def table_wings(doc: Path = DOC) -> list[str]:
    """The wings the table's first column names, in row order (the package root as PACKAGE_ROOT)."""
    return [n for r in table_rows(doc) for n in _names(r.split("|")[1])]


def table_claims(doc: Path = DOC) -> list[Claim]:
    """Every "may import" the table states, clause by clause of its third column."""
    rows = table_rows(doc)
    names = set(table_wings(doc))
    out: list[Claim] = []
    for row in rows:
        cells = row.split("|")
        for clause in cells[3].strip().split(";"):
            scope, also, rest = clause.partition(" also ")
            files = frozenset(_names(scope)) if also else None
            everything = clause.strip() == "everything"
            found = set(re.findall(r"`([a-z_]+)`", rest if also else clause)) & names
            for owner in _names(cells[1]):
                # "everything": every wing but itself and cli, which nothing imports
                targets = names - {owner, "cli"} if everything else found
                out += [Claim(owner, t, files, not everything) for t in sorted(targets)]
    return out


def allowed(doc: Path = DOC) -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
    """From the table: wing -> wings it may import, and (wing, wing) -> the only files and folders of the
    first that may import the second."""
    may: dict[str, set[str]] = {}
    scoped: dict[tuple[str, str], set[str]] = {}
    for claim in table_claims(doc):
        may.setdefault(claim.owner, set()).add(claim.target)
        if claim.files is not None:
            scoped[(claim.owner, claim.target)] = set(claim.files)
    for owner in table_wings(doc):
        may.setdefault(owner, set())
    return may, scoped
