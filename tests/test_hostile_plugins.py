"""Plugins that cannot hurt (issue 39): broken plugins of every entry-point group, installed for real (a
*.dist-info folder with METADATA and entry_points.txt on the PYTHONPATH of a subprocess, found by
importlib.metadata as pip would leave it), reach only the runs that name them.

Three distributions break every group each in one way: one cannot be imported (its module is missing,
raises while importing, calls sys.exit, or lacks the attribute), one names objects of the wrong type,
one claims the names of built-ins; two of them also declare the same name. Every hostile module leaves a
mark when imported, so the tests see what was imported. Checked: a run naming none of them (a working
plugin scheme included) exits 0 and imports none; each run naming one exits 2 with one stderr line
naming the distribution, the group and the entry point, importing that plugin's module alone (a claimed
built-in's, none); `argus models` lists every plugin with why and exits 0. The failing runs share one
subprocess that calls the console command once per case (each subprocess costs seconds of imports); one
of them also runs alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

# group -> (name of the plugin that cannot be imported, its entry point's value, what the line says)
IMPORT_BROKEN = {
    "argus_eval.models": ("brokenimp", "hostile_nowhere:SCHEME", "ModuleNotFoundError"),
    "argus_eval.model_families": ("brokenimp_fam", "hostile_raises:load", "RuntimeError: boom second line"),
    "argus_eval.formats": ("brokenimp_fmt", "hostile_exits:SPEC", "SystemExit: 3"),
    "argus_eval.tasks": ("brokenimp_task", "hostile_attr:MissingTask", "AttributeError"),
    "argus_eval.perturbations": ("brokenimp_kind", "hostile_nowhere.deeper:Kind", "ModuleNotFoundError"),
    "argus_eval.axes": ("BROKENIMP", "hostile_raises:AXIS", "RuntimeError: boom second line"),
    "argus_eval.executors": ("brokenimp_exec", "hostile_exits:run", "SystemExit: 3"),
}
# group -> (name, value, what the line says the object is)
WRONG_TYPE = {
    "argus_eval.models": ("wrongtype", "hostile_types:function", "is a function, not a Scheme"),
    "argus_eval.model_families": ("wrongtype_fam", "hostile_types:NUMBER", "int, not callable"),
    "argus_eval.formats": ("wrongtype_fmt", "hostile_types:WORDS", "str, not a FormatSpec"),
    "argus_eval.tasks": ("wrongtype_task", "hostile_types:NotATask", "not a Task subclass"),
    "argus_eval.perturbations": ("wrongtype_kind", "hostile_types:NOT_A_KIND", "not a ConditionKind"),
    "argus_eval.axes": ("WRONGTYPE", "hostile_types:MISNAMED_AXIS", "names the axis 'SOMETHING_ELSE'"),
    "argus_eval.executors": (
        "wrongtype_exec",
        "hostile_types:function",
        "is a function, not a ExecutorEntry",
    ),
}
# group -> (a built-in's name, value): refused before its module is imported
CLASH = {
    "argus_eval.models": ("api", "hostile_clash:SCHEME"),
    "argus_eval.model_families": ("clip", "hostile_clash:load"),
    "argus_eval.formats": ("coco", "hostile_clash:SPEC"),
    "argus_eval.tasks": ("captioning", "hostile_clash:Task"),
    "argus_eval.perturbations": ("text", "hostile_clash:Kind"),
    "argus_eval.axes": ("RR", "hostile_clash:AXIS"),
    "argus_eval.executors": ("ray", "hostile_clash:run"),
}
DISTS = {"imports": "hostile-imports 0.1", "types": "hostile-types 0.2", "clash": "hostile-clash 0.3"}
TWIN = ("argus_eval.tasks", "twin_task")  # declared by hostile-imports and hostile-types alike
FRIENDLY = ("FRIENDLY", "friendly_plugin:AXIS")  # a working axis, weighted into ARGUS

MODULES = {
    # every hostile module marks its import in $HOSTILE_MARKS first
    "hostile_raises": 'raise RuntimeError("boom\\nsecond line")',
    "hostile_exits": "import sys\nsys.exit(3)",
    "hostile_attr": "PRESENT = 1",
    "hostile_types": """
        from argus_eval.scoring.axis_registry import AxisSpec
        from argus_eval.scoring.types import AxisSeries

        NUMBER = 3
        WORDS = "not a format"
        NOT_A_KIND = object()


        def function(*args, **kwargs):
            return None


        class NotATask:
            pass


        MISNAMED_AXIS = AxisSpec("SOMETHING_ELSE", 45, "x", "x", lambda x: AxisSeries.undefined("x"))
    """,
    "hostile_clash": "SCHEME = SPEC = Task = Kind = AXIS = run = load = None",
    "friendly_plugin": """
        import numpy as np

        from argus_eval.models.loading import NullScheme
        from argus_eval.scoring.axis_registry import AxisSpec
        from argus_eval.scoring.types import AxisSeries

        SCHEME = NullScheme()


        def _half(x):
            rows = np.full(next(iter(x.clean.values())).shape, 0.5)
            return AxisSeries(rows, rows, None, {})


        AXIS = AxisSpec("FRIENDLY", 35, "friendly", "a constant 0.5", _half, weight=0.25)
    """,
}


def _dist(site: Path, name: str, version: str, entry_points: dict[str, list[tuple[str, str]]]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    text = "".join(
        f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in eps) + "\n" for group, eps in entry_points.items()
    )
    (info / "entry_points.txt").write_text(text)


def _site(tmp: Path) -> Path:
    site = tmp / "site"
    site.mkdir()
    for module, body in MODULES.items():
        mark = f"import os, pathlib\npathlib.Path(os.environ['HOSTILE_MARKS'], {module!r}).touch()\n"
        (site / f"{module}.py").write_text(mark + textwrap.dedent(body))
    imports = {g: [(n, v)] for g, (n, v, _) in IMPORT_BROKEN.items()}
    imports[TWIN[0]].append((TWIN[1], "hostile_raises:Twin"))
    types = {g: [(n, v)] for g, (n, v, _) in WRONG_TYPE.items()}
    types[TWIN[0]].append((TWIN[1], "hostile_types:NotATask"))
    for key, eps in (("imports", imports), ("types", types), ("clash", {g: [nv] for g, nv in CLASH.items()})):
        name, version = DISTS[key].split()
        _dist(site, name, version, eps)
    friendly = {"argus_eval.models": [("friendly", "friendly_plugin:SCHEME")], "argus_eval.axes": [FRIENDLY]}
    _dist(site, "friendly-plugin", "1.0", friendly)
    return site


def _config(tmp: Path, **changes: Any) -> dict[str, Any]:
    """A fast run: the null model on 4 ShapesWorld images, retrieval only, 5 resamples."""
    cfg: dict[str, Any] = {
        "name": "plugins",
        "seed": 0,
        "cache_dir": str(tmp / "cache"),
        "models": [{"name": "a", "spec": "null:a", "batch_size": 4}],
        "datasets": [
            {"name": "studio", "format": "shapesworld", "split": "test", "n_images": 4, "train_images": 4}
        ],
        "tasks": ["retrieval"],
        "scoring": {"resamples": 5},
        "efficiency": {"enabled": False},
    }
    cfg.update(changes)
    return cfg


def _hf_dir(tmp: Path, model_type: str) -> str:
    """A checkpoint folder whose config.json names model_type (a weights file, never read)."""
    d = tmp / f"ckpt-{model_type}"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps({"model_type": model_type}))
    (d / "model.safetensors").write_bytes(b"")
    return f"hf:{d}"


def _naming(tmp: Path, group: str, name: str) -> dict[str, Any]:
    """A run config that names plugin `name` of group (and nothing else that is not built in)."""
    if group == "argus_eval.models":
        return _config(tmp, models=[{"name": "a", "spec": f"{name}:a", "batch_size": 4}])
    if group == "argus_eval.model_families":
        return _config(tmp, models=[{"name": "a", "spec": _hf_dir(tmp, name), "batch_size": 4}])
    if group == "argus_eval.formats":
        return _config(tmp, datasets=[{"name": "d", "format": name}])
    if group == "argus_eval.tasks":
        return _config(tmp, tasks=[name])
    if group == "argus_eval.perturbations":
        return _config(tmp, perturbations=[{name: "anything"}])
    if group == "argus_eval.axes":
        return _config(tmp, scoring={"resamples": 5, "axes": [name]})
    assert group == "argus_eval.executors"
    return _config(tmp, executor=name)


def _env(tmp: Path, site: Path) -> dict[str, str]:
    marks = tmp / "marks"
    marks.mkdir(exist_ok=True)
    path = os.pathsep.join([str(ROOT / "src"), str(site)])
    return {**os.environ, "PYTHONPATH": path, "HOSTILE_MARKS": str(marks), "HF_HUB_OFFLINE": "1"}


def _argus(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "argus_eval.cli", *argv], env=env, capture_output=True, text=True, timeout=300
    )


# Calls the console command once per case in this one process: exit status, stderr and the modules
# imported (their marks) of each.
DRIVER = """
import contextlib, io, json, os, pathlib, sys
from argus_eval.cli import main
marks = pathlib.Path(os.environ["HOSTILE_MARKS"])
out = {}
for case, argv in json.loads(sys.argv[1]).items():
    for m in marks.iterdir():
        m.unlink()
    for module in [m for m in sys.modules if m.startswith(("hostile_", "friendly_"))]:
        del sys.modules[module]  # each case imports afresh, as its own process would
    err = io.StringIO()
    sys.argv = ["argus", *argv]
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main()
            code = 0
        except SystemExit as e:
            code = e.code
    out[case] = {"code": code, "stderr": err.getvalue(), "imported": sorted(p.name for p in marks.iterdir())}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("plugins")
    site = _site(tmp)
    return tmp, _env(tmp, site)


def _cases() -> dict[str, tuple[str, str, str, str, str]]:
    """case -> (group, entry point name, its value, distribution, what else the line must say)."""
    out: dict[str, tuple[str, str, str, str, str]] = {}
    for group, (name, value, why) in IMPORT_BROKEN.items():
        out[f"import:{group}"] = (group, name, value, DISTS["imports"], f"cannot be imported ({why}")
    for group, (name, value, why) in WRONG_TYPE.items():
        out[f"type:{group}"] = (group, name, value, DISTS["types"], why)
    for group, (name, value) in CLASH.items():
        out[f"clash:{group}"] = (group, name, value, DISTS["clash"], f"{name!r} is a built-in")
    return out


def _module(value: str) -> str:
    return value.partition(":")[0].split(".")[0]


def test_a_run_naming_no_plugin_exits_0_and_imports_none(installed: tuple[Path, dict[str, str]]) -> None:
    tmp, env = installed
    marks = Path(env["HOSTILE_MARKS"])
    for m in marks.iterdir():
        m.unlink()
    models = [{"name": "a", "spec": "null:a"}, {"name": "b", "spec": "friendly:b"}]
    config = tmp / "clean.yaml"
    config.write_text(yaml.safe_dump(_config(tmp, models=models)))
    done = _argus(env, "run", "-c", str(config), "--out", str(tmp / "clean-out"), "-q")
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp / "clean-out" / "results.json").read_text())
    assert set(results["models"]) == {"a", "b"}  # the working plugin scheme ran beside the built-in
    # an installed axis plugin the run does not name is not on its scorecard
    assert [a["name"] for a in results["axes"]] == ["P", "CDC", "RR", "E", "ARGUS", "R"]
    assert sorted(p.name for p in marks.iterdir()) == ["friendly_plugin"]  # no hostile module imported


def test_a_named_axis_plugin_joins_the_scorecard_and_argus(installed: tuple[Path, dict[str, str]]) -> None:
    tmp, env = installed
    scoring = {"resamples": 5, "axes": ["FRIENDLY"], "weights": {"FRIENDLY": 0.5}}
    config = tmp / "axis.yaml"
    config.write_text(yaml.safe_dump(_config(tmp, scoring=scoring)))
    done = _argus(env, "run", "-c", str(config), "--out", str(tmp / "axis-out"), "-q")
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp / "axis-out" / "results.json").read_text())
    assert [a["name"] for a in results["axes"]] == ["P", "CDC", "RR", "E", "FRIENDLY", "ARGUS", "R"]
    weights = results["scoring_options"]["weights"]
    assert weights == {"P": 0.25, "CDC": 0.25, "RR": 0.25, "E": 0.25, "FRIENDLY": 0.5}
    row = results["models"]["a"]
    assert row["FRIENDLY"] == 0.5
    defined = {a: w for a, w in weights.items() if row[a] is not None}  # ARGUS: renormalised over these
    expected = sum(w * row[a] for a, w in defined.items()) / sum(defined.values())
    assert row["ARGUS"] == pytest.approx(expected, abs=1e-9)


def test_each_run_naming_a_broken_plugin_exits_2_with_one_line_naming_it(
    installed: tuple[Path, dict[str, str]],
) -> None:
    tmp, env = installed
    cases = _cases()
    argvs: dict[str, list[str]] = {}
    for case, (group, name, *_) in cases.items():
        config = tmp / f"{case.replace(':', '_')}.yaml"
        config.write_text(yaml.safe_dump(_naming(tmp, group, name)))
        argvs[case] = ["run", "-c", str(config), "--out", str(tmp / "out" / case.replace(":", "_")), "-q"]
    twin_cfg = tmp / "twin.yaml"
    twin_cfg.write_text(yaml.safe_dump(_naming(tmp, *TWIN)))
    argvs["twin"] = ["run", "-c", str(twin_cfg), "--out", str(tmp / "out" / "twin"), "-q"]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(argvs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    for case, (group, name, value, dist, why) in cases.items():
        r = got[case]
        assert r["code"] == 2, (case, r)
        lines = r["stderr"].splitlines()
        assert len(lines) == 1, (case, r["stderr"])
        line = lines[0]
        assert line.startswith("error: ") and "Traceback" not in line, (case, line)
        for part in (
            f"plugin {name!r} of group {group}",
            f"entry point {value}",
            f"distribution {dist}",
            why,
        ):
            assert part in line, (case, part, line)
        # that one plugin's module alone was imported; a claimed built-in's never
        expected = [] if case.startswith("clash:") or "nowhere" in value else [_module(value)]
        assert r["imported"] == expected, (case, r["imported"])
    twin = got["twin"]
    assert twin["code"] == 2 and len(twin["stderr"].splitlines()) == 1, twin
    assert f"{DISTS['imports']} and {DISTS['types']} both declare 'twin_task'" in twin["stderr"]
    assert twin["imported"] == []  # neither is imported


def test_the_console_command_alone_prints_one_line_for_a_broken_plugin(
    installed: tuple[Path, dict[str, str]],
) -> None:
    tmp, env = installed
    config = tmp / "alone.yaml"
    config.write_text(yaml.safe_dump(_naming(tmp, "argus_eval.model_families", "brokenimp_fam")))
    done = _argus(env, "run", "-c", str(config), "--out", str(tmp / "alone-out"), "-q")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "plugin 'brokenimp_fam' of group argus_eval.model_families" in line
    assert "distribution hostile-imports 0.1" in line and "RuntimeError: boom second line" in line


def test_argus_models_lists_every_plugin_with_why(installed: tuple[Path, dict[str, str]]) -> None:
    _, env = installed
    done = _argus(env, "models", "--json")
    assert done.returncode == 0, done.stderr
    rows = [r for r in json.loads(done.stdout) if "group" in r]
    by = {(r["group"], r["name"], r["distribution"]): r for r in rows}
    for group, name, value, dist, why in _cases().values():
        row = by[(group, name, dist)]
        assert row["entry_point"] == value and row["problem"] is not None and why in row["problem"], row
    for dist, value in (
        (DISTS["imports"], "hostile_raises:Twin"),
        (DISTS["types"], "hostile_types:NotATask"),
    ):
        twin = by[(*TWIN, dist)]
        assert twin["entry_point"] == value and f"entry point {value}, distribution {dist}" in str(
            twin["problem"]
        )
        assert f"{DISTS['imports']} and {DISTS['types']} both declare 'twin_task'" in str(twin["problem"])
    assert by[("argus_eval.models", "friendly", "friendly-plugin 1.0")]["problem"] is None
    assert by[("argus_eval.axes", "FRIENDLY", "friendly-plugin 1.0")]["problem"] is None
    from argus_eval.models.loading import describe_presets
    from argus_eval.zoo.catalog import describe_zoo

    # the models are all listed still, as without the plugins
    assert [r for r in json.loads(done.stdout) if "group" not in r] == describe_presets() + describe_zoo()
    formats = _argus(env, "datasets", "--json")  # lists the formats that load, leaves the rest out
    assert formats.returncode == 0, formats.stderr
    listed = {r["format"] for r in json.loads(formats.stdout)}
    assert {"coco", "karpathy", "shapesworld"} <= listed
    assert not listed & {IMPORT_BROKEN["argus_eval.formats"][0], WRONG_TYPE["argus_eval.formats"][0]}
    table = _argus(env, "models")
    assert table.returncode == 0, table.stderr
    broken = [x for x in table.stdout.splitlines() if x.startswith("broken plugin: ")]
    assert len(broken) == len(_cases()) + 2  # every broken entry point and both twins


def test_an_unparsable_entry_points_file_is_listed_and_hides_no_other_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process (pydantic itself, reading every distribution's entry points for its own plugins, cannot
    start beside such a file): the reader reports that distribution and still reads the others."""
    from importlib import metadata

    from argus_eval import registry

    site = tmp_path / "site"
    site.mkdir()
    garbled = site / "hostile_garbled-0.4.dist-info"
    garbled.mkdir()
    (garbled / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-garbled\nVersion: 0.4\n")
    (garbled / "entry_points.txt").write_text("[argus_eval.models]\nthis line has no equals sign\n")
    _dist(site, "friendly-plugin", "1.0", {"argus_eval.models": [("friendly", "friendly_plugin:SCHEME")]})
    every = metadata.distributions  # only these two installed
    monkeypatch.setattr(metadata, "distributions", lambda: every(path=[str(site)]))
    installed = registry._installed.__wrapped__()
    assert [ep.name for ep in installed.by_group["argus_eval.models"]] == ["friendly"]
    ((dist, why),) = installed.unreadable
    assert dist == "hostile-garbled 0.4" and why.startswith("its entry_points.txt cannot be read (TypeError")
