"""The docs say what the code does: the entry-point groups README.md, docs/architecture.md and
docs/plugins.md name are exactly those the code's registries read; the wings they list are the package's
folders; every dependency arrow they draw is an import of the source and the wing table leaves out no
import; and every module that keeps a cache at module level is named where docs/architecture.md says what
module-level state there is. The import graph is read from the source (import_graph_fixtures.py)."""

from __future__ import annotations

import ast
import importlib
import itertools
import re
from pathlib import Path

import pytest

import argus_eval
from argus_eval.registry import Registry
from import_graph_fixtures import (
    DOC,
    PACKAGE_ROOT,
    REPO,
    ROOT,
    edges,
    module_name,
    table_claims,
    table_wings,
    wing_edges,
    wings,
)

README = REPO / "README.md"
PLUGINS = REPO / "docs" / "plugins.md"
GROUP_DOCS = (README, DOC, PLUGINS)


def _flat(path: Path) -> str:
    """A doc's text with every run of white space one blank, so a phrase may break across lines."""
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


# --- entry-point groups ------------------------------------------------------------------------------


def _registry_groups() -> dict[str, tuple[str, str]]:
    """group -> (module, attribute) of every module-level `NAME = Registry(..., entry_point_group=G)` of
    the source, G a string or a module-level string constant; read without importing."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            t.id: s.value.value
            for s in tree.body
            if isinstance(s, (ast.Assign, ast.AnnAssign)) and isinstance(s.value, ast.Constant)
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
            if isinstance(t, ast.Name) and isinstance(s.value.value, str)
        }
        for stmt in tree.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
            call = getattr(stmt, "value", None)
            if not (isinstance(target, ast.Name) and isinstance(call, ast.Call)):
                continue
            if not (isinstance(call.func, ast.Name) and call.func.id == "Registry"):
                continue
            for kw in call.keywords:
                if kw.arg != "entry_point_group":
                    continue
                v = kw.value
                group = v.value if isinstance(v, ast.Constant) else constants.get(getattr(v, "id", ""))
                assert isinstance(group, str), f"{path}: entry_point_group is not a string the scan reads"
                out[group] = (module_name(path), target.id)
    return out


def _group_literals() -> set[str]:
    """Every "argus_eval.NAME" string of the source that names no module of the package: a group name."""
    modules = {module_name(p) for p in ROOT.rglob("*.py")}
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and re.fullmatch(r"argus_eval\.[a-z_]+", text) and text not in modules:
                found.add(text)
    return found


def _code_groups() -> set[str]:
    return set(_registry_groups())


def _group_mentions(text: str) -> set[str]:
    """What a doc calls an entry-point group: a backticked name before "entry point", "entry-point group"
    or "group", and every backticked `argus_eval.NAME` that is not the package's public API."""
    said = set(re.findall(r"`([^`\s]+)` (?:entry[- ]point|group\b)", text))
    dotted = set(re.findall(r"`(argus_eval\.[a-z_]+)`", text))
    return said | {d for d in dotted if d.split(".", 1)[1] not in argus_eval.__all__}


def test_the_scan_finds_the_groups_of_the_imported_registries() -> None:
    found = _registry_groups()
    # independent of the scan: groups the issue and the plugin tests use, so a scan that misses one fails
    assert {"argus_eval.perturbations", "argus_eval.models", "argus_eval.axes"} <= set(found)
    for group, (module, attr) in found.items():
        registry = getattr(importlib.import_module(module), attr)
        assert isinstance(registry, Registry) and registry.group == group, (module, attr)
    assert set(found) <= {r.group for r in Registry.with_plugins()}
    # a group-name constant the code holds is one a registry reads (no group that nothing reads)
    assert _group_literals() <= set(found)


def test_plugins_md_tables_exactly_the_groups_the_code_reads() -> None:
    rows = re.findall(r"^\| `(argus_eval\.[a-z_]+)` \|", PLUGINS.read_text(encoding="utf-8"), re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == _code_groups()


def test_architecture_md_lists_exactly_the_groups_the_code_reads() -> None:
    (sentence,) = re.findall(r"The entry-point groups are (.+?); each", _flat(DOC))
    assert set(re.findall(r"`([^`]+)`", sentence)) == _code_groups()


@pytest.mark.parametrize("doc", GROUP_DOCS, ids=lambda p: p.name)
def test_every_group_a_doc_names_is_one_the_code_reads(doc: Path) -> None:
    named = _group_mentions(_flat(doc))
    assert named and named <= _code_groups(), sorted(named - _code_groups())


def test_the_mention_scan_sees_a_group_that_does_not_exist() -> None:
    text = "through the `executor_options` entry point; `argus_eval.nothing` too; `argus_eval.evaluate`"
    assert _group_mentions(text) == {"executor_options", "argus_eval.nothing"}


# --- wings and the arrows between them ---------------------------------------------------------------


def _readme_architecture() -> str:
    """README's Architecture section, where it draws the wings."""
    return README.read_text(encoding="utf-8").split("## Architecture", 1)[1].split("\n## ", 1)[0]


def _readme_wings() -> list[str]:
    """The wings README's Architecture section lists, a bullet each ("- `data/`: ...", "- `a/` + `b.py`:")."""
    section = _readme_architecture()
    names: list[str] = []
    for head in re.findall(r"^- ((?:`[^`]+`(?: \+ )?)+):", section, re.M):
        names += [n.rstrip("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", head)]
    return names


def test_the_wing_table_and_readme_list_every_wing_once() -> None:
    actual = wings()
    assert {"results_model", "testing", "cli", "zoo"} <= actual  # the source has them
    table = [w for w in table_wings() if w != PACKAGE_ROOT]
    assert sorted(table) == sorted(actual)
    readme = _readme_wings()
    assert sorted(readme) == sorted(actual)


def test_each_wing_row_names_exactly_the_wings_it_imports() -> None:
    """A row's third column names what its wing imports, all of it and nothing else; "everything" (the
    commands and the CLI) permits any wing but cli."""
    importers = wing_edges(edges())
    real: dict[str, set[str]] = {}
    for a, b in importers:
        real.setdefault(a, set()).add(b)
    claims = table_claims()
    unbounded = {c.owner for c in claims if not c.explicit}
    stated: dict[str, set[str]] = {w: set() for w in table_wings()}
    for c in claims:
        if c.explicit:
            stated[c.owner].add(c.target)
    for c in claims:  # a scoped clause ("`measure.py` also `perturb`"): each file or folder it names does
        if c.files is not None:
            for f in c.files:
                assert any(m.split(".")[2] == f for m in importers.get((c.owner, c.target), ())), c
    wrong = {
        w: (sorted(stated[w]), sorted(real.get(w, set())))
        for w in stated
        if w not in unbounded and stated[w] != real.get(w, set())
    }
    assert wrong == {}
    for w in unbounded:
        assert real.get(w, set()) <= set(table_wings()) - {w, "cli"}


def _chains(path: Path) -> list[list[set[str]]]:
    """Every backticked dependency chain of a doc ("`a -> b / c -> d`"), as its groups of wings."""
    text = _readme_architecture() if path == README else path.read_text(encoding="utf-8")
    return [_span(s) for s in re.findall(r"`([^`]*)`", text) if "->" in s]


def _span(span: str) -> list[set[str]]:
    """ "a -> b / c -> d" as its groups of wings: [{a}, {b, c}, {d}]."""
    return [
        {n.strip().rstrip("/").removesuffix(".py") for n in g.split("/") if n.strip()}
        for g in span.split("->")
    ]


def _arrow_faults(chain: list[set[str]], real: set[tuple[str, str]]) -> list[str]:
    """What a chain draws that the source does not do: an arrow a -> b with no import of b by a (each
    wing left of an arrow imports each right of it), or an import from a later group to an earlier one."""
    faults = [
        f"{a} -> {b} is no import"
        for left, right in itertools.pairwise(chain)
        for a in left
        for b in right
        if (a, b) not in real
    ]
    for i, earlier in enumerate(chain):
        for later in chain[i + 1 :]:
            faults += [
                f"{b} imports {a}, against the arrows" for a in earlier for b in later if (b, a) in real
            ]
    return sorted(faults)


@pytest.mark.parametrize("doc", (README, DOC), ids=lambda p: p.name)
def test_every_arrow_a_doc_draws_is_an_import_and_none_points_back(doc: Path) -> None:
    chains = _chains(doc)
    assert chains  # the doc draws its dependencies as backticked chains
    real = set(wing_edges(edges()))
    known = wings() | {PACKAGE_ROOT}
    for chain in chains:
        for group in chain:
            assert group <= known, sorted(group - known)
        assert _arrow_faults(chain, real) == [], doc.name


def test_the_arrow_check_sees_the_arrows_the_docs_drew_before() -> None:
    real = set(wing_edges(edges()))
    # README said models/data/perturb -> metrics, the architecture tasks -> ... efficiency; neither is so
    assert "models -> metrics is no import" in _arrow_faults(_span("models/data/perturb -> metrics"), real)
    assert "tasks -> efficiency is no import" in _arrow_faults(_span("tasks -> models / efficiency"), real)
    backwards = ["data -> models is no import", "models imports data, against the arrows"]
    assert _arrow_faults(_span("data -> models"), real) == backwards


# --- module-level state ------------------------------------------------------------------------------

_CONTAINERS = {"dict", "list", "set", "Counter", "OrderedDict", "defaultdict", "WeakSet", "deque"}


def _stateful_modules() -> set[Path]:
    """Source files that keep something at module level that calls change: a module-level function under
    functools' cache or lru_cache, or a module-level name bound to an empty container."""
    out: set[Path] = set()
    for path in ROOT.rglob("*.py"):
        for stmt in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(stmt, ast.FunctionDef):
                for d in stmt.decorator_list:
                    f = d.func if isinstance(d, ast.Call) else d
                    if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) in {
                        "cache",
                        "lru_cache",
                    }:
                        out.add(path)
            value = getattr(stmt, "value", None)
            if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or value is None:
                continue
            if isinstance(value, (ast.Dict, ast.List, ast.Set)) and not (
                value.keys if isinstance(value, ast.Dict) else value.elts
            ):
                out.add(path)
            elif isinstance(value, ast.Call) and not value.args and not value.keywords:
                f = value.func
                if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) in _CONTAINERS:
                    out.add(path)
    return out


def test_every_module_that_keeps_module_level_state_is_named_in_the_architecture() -> None:
    """docs/architecture.md's "Cache keys and determinism" says what modules keep; a file moved into a
    subfolder of its wing still matches its old path's mention."""
    stateful = _stateful_modules()
    assert ROOT / "registry.py" in stateful  # the entry points read once per process, independently known
    text = DOC.read_text(encoding="utf-8").split("## Cache keys and determinism", 1)[1]
    unnamed = []
    for path in sorted(stateful):
        parts = path.relative_to(ROOT).parts
        pattern = (
            re.escape(parts[0])
            if len(parts) == 1
            else rf"{re.escape(parts[0])}/(?:[a-z_]+/)*{re.escape(parts[-1])}"
        )
        if not re.search(rf"`{pattern}`", text):
            unnamed.append("/".join(parts))
    assert unnamed == []
