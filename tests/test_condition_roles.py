"""A condition owns its role (issue 38): a kind declares whether its cells are clean, a perturbation or a
control, and which severities it takes; config validation asks the kind, and scoring reads the role off
the cell key, never off an id. In this one file, two kinds registered by the test run end to end on the
null model: a perturbation with severities 1..10 (in RR and a ten-point severity curve) and a control
(in the image-reliance table, in neither RR nor a curve). A kind with no role, or one scoring does not
know, is refused when registered, a plugin's naming its entry point."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import yaml

from argus_eval.data.images import ImageArray
from argus_eval.errors import PerturbationError
from argus_eval.perturb import kinds
from argus_eval.perturb.conditions import Condition, expand_conditions
from argus_eval.perturb.kinds import CONDITION_KINDS, ConditionKind, ConditionTarget, kind_of, register_kind
from plugin_fixtures import run_with_plugin

# The entry-point test's subprocess imports this module for RolelessKind: the runner, scoring and report
# are imported inside the tests that use them, so it stays as cheap to import as a plugin.

STUDIO = {"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test", "n_images": 8,
          "train_images": 8, "questions_per_image": 2}  # fmt: skip
TEN = tuple(range(1, 11))


class ShadeKind(ConditionKind):
    """Perturbation "shade": severity s of 1..10 blacks out the top s/10 of an image's rows (no seed)."""

    kind = "shade"
    role = "perturbation"
    severities = TEN
    changes: ClassVar[frozenset[str]] = frozenset({"image"})

    def names(self) -> list[str]:
        return ["top"]

    def apply_image(self, condition: Any, image: ImageArray, seed: int) -> ImageArray:
        out = image.copy()
        out[: image.shape[0] * condition.severity // 10] = 0
        return out

    def uses_seed(self, condition: Any) -> bool:
        return False


class CoverKind(ConditionKind):
    """Control "cover": the left half of the image grey; one implied severity, on tasks that take controls."""

    kind = "cover"
    role = "control"
    severities = (1,)
    graded = False
    changes: ClassVar[frozenset[str]] = frozenset({"image"})

    def names(self) -> list[str]:
        return ["half"]

    def apply_image(self, condition: Any, image: ImageArray, seed: int) -> ImageArray:
        out = image.copy()
        out[:, : image.shape[1] // 2] = 128
        return out

    def uses_seed(self, condition: Any) -> bool:
        return False

    def accepted_by(self, task: ConditionTarget) -> bool:
        return task.image_controls


class RolelessKind(ConditionKind):
    """A kind that forgets to say what scoring does with its cells."""

    kind = "roleless"

    def names(self) -> list[str]:
        return ["x"]


class OddRoleKind(RolelessKind):
    kind = "oddrole"
    role = "baseline"  # type: ignore[assignment]


@pytest.fixture(scope="module")
def test_kinds() -> Iterator[None]:
    register_kind(ShadeKind)
    register_kind(CoverKind)
    yield
    CONDITION_KINDS.unregister("shade")
    CONDITION_KINDS.unregister("cover")


def test_scoring_knows_exactly_the_roles_a_kind_may_declare() -> None:
    from argus_eval.scoring.types import ROLES

    assert kinds.ROLES == ROLES == ("clean", "perturbation", "control")
    built_in = {k: kind_of(k).role for k in ("clean", "image", "text", "control")}
    assert built_in == {
        "clean": "clean",
        "image": "perturbation",
        "text": "perturbation",
        "control": "control",
    }


def test_a_kind_without_a_role_scoring_knows_is_refused_when_registered() -> None:
    with pytest.raises(PerturbationError, match=r"test_condition_roles\.RolelessKind sets no `role`"):
        register_kind(RolelessKind)
    with pytest.raises(
        PerturbationError, match=r"role 'baseline', which scoring does not know.*clean, perturbation, control"
    ):
        register_kind(OddRoleKind)
    assert "roleless" not in CONDITION_KINDS.names() and "oddrole" not in CONDITION_KINDS.names()


def test_a_plugin_kind_without_a_role_is_refused_naming_the_plugin(tmp_path: Path) -> None:
    code = (
        "from argus_eval.errors import PluginError\n"
        "from argus_eval.perturb.conditions import Condition\n"
        "try:\n    Condition.parse('roleless:x@1')\n"
        "except PluginError as e:\n    print(e)\n"
    )
    entry = "[argus_eval.perturbations]\nroleless = test_condition_roles:RolelessKind\n"
    stdout = run_with_plugin(tmp_path, "roleless-plugin", entry, code)
    (line,) = stdout.splitlines()
    for part in (
        "roleless-plugin",
        "argus_eval.perturbations",
        "test_condition_roles:RolelessKind",
        "`role`",
    ):
        assert part in line, line


@pytest.mark.usefixtures("test_kinds")
def test_severities_are_the_kinds_own() -> None:
    got = [c.id for c in expand_conditions([{"shade": "top", "severity": [7, 10]}])]
    assert got == ["clean", "shade:top@7", "shade:top@10"]  # beyond the 1..5 of image and text
    assert [c.severity for c in expand_conditions([{"shade": "top"}])[1:]] == list(TEN)
    assert [c.id for c in expand_conditions([{"cover": "half"}])] == ["clean", "cover:half@1"]
    with pytest.raises(
        PerturbationError,
        match=r"perturbations\[1\]: .*severity 11 is not one the shade kind takes; valid: 1\.\.10",
    ):
        expand_conditions([{"image": "fog", "severity": 2}, {"shade": "top", "severity": [10, 11]}])
    with pytest.raises(PerturbationError, match=r"severity 7 is not one the image kind takes; valid: 1\.\.5"):
        expand_conditions([{"image": "fog", "severity": 7}])
    with pytest.raises(PerturbationError, match="takes no severity"):
        expand_conditions([{"cover": "half", "severity": 1}])
    with pytest.raises(PerturbationError, match=r"valid: 1\.\.10"):
        Condition("shade", "top", 11)
    role = {i: Condition.parse(i).role for i in ("clean", "shade:top@10", "cover:half@1", "control:swap@1")}
    assert role == {"clean": "clean", "shade:top@10": "perturbation", "cover:half@1": "control",
                    "control:swap@1": "control"}  # fmt: skip


@pytest.mark.usefixtures("test_kinds")
def test_an_undeclared_severity_is_one_line_and_exit_2_at_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline_fixtures import cli

    raw = {"name": "sev", "models": [{"name": "n", "spec": "null:n"}], "datasets": [STUDIO],
           "tasks": ["retrieval"], "perturbations": [{"shade": "top", "severity": [3, 12]}]}  # fmt: skip
    path = tmp_path / "sev.yaml"
    path.write_text(yaml.safe_dump(raw))
    code, printed = cli(
        ["run", "--config", str(path), "--out", str(tmp_path / "out"), "--dry-run"], monkeypatch, capsys
    )
    assert code == 2
    (line,) = printed.strip().splitlines()
    for part in ("sev.yaml", "perturbations[0]", "severity 12", "shade kind", "valid: 1..10"):
        assert part in line, line


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    request.getfixturevalue("test_kinds")  # registered while the module's tests read the run
    tmp = tmp_path_factory.mktemp("roles")
    raw = {
        "name": "roles",
        "seed": 0,
        "cache_dir": str(tmp / "cache"),
        "models": [{"name": "n", "spec": "null:n"}],
        "datasets": [STUDIO],
        "tasks": ["retrieval", "reasoning"],
        "perturbations": [{"shade": "top"}, {"cover": "half"}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }
    run(parse_config(raw, "test"), tmp / "out", quiet=True)
    return tmp / "out"


def test_both_kinds_run_on_the_tasks_that_accept_them(run_dir: Path) -> None:
    lines = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    per: dict[tuple[str, str], int] = {}
    for line in lines:
        per[(line["task"], line["condition"])] = per.get((line["task"], line["condition"]), 0) + 1
    shades = {f"shade:top@{s}" for s in TEN}
    assert {c for t, c in per if t == "retrieval"} == {"clean", *shades}  # retrieval takes no control
    assert {c for t, c in per if t == "reasoning"} == {"clean", *shades, "cover:half@1"}
    for (task, _), n in per.items():
        assert n == per[(task, "clean")] > 0


def test_the_ten_severity_kind_enters_rr_and_its_curve_and_the_control_neither(run_dir: Path) -> None:
    res = json.loads((run_dir / "results.json").read_text())
    row = res["models"]["n"]
    assert {(r["task"], r["condition"]) for r in row["retention"]} == {
        (t, f"shade:top@{s}") for t in ("retrieval", "reasoning") for s in TEN
    }
    # RR: the mean of min(1, perturbed / clean) over the perturbed cells whose clean score is not 0
    kept = [r for r in row["retention"] if r["clean"] > 0]
    assert kept
    assert row["RR"] == pytest.approx(
        np.mean([min(1.0, r["perturbed"] / r["clean"]) for r in kept]), abs=1e-9
    )
    # one curve, ten points: the mean retention of its cells at each severity
    assert list(row["severity_curves"]) == ["shade:top"]
    curve = row["severity_curves"]["shade:top"]
    assert sorted(curve, key=int) == [str(s) for s in TEN]  # the file sorts its keys as text
    for s in TEN:
        at = [min(1.0, r["perturbed"] / r["clean"]) for r in kept if r["condition"] == f"shade:top@{s}"]
        assert curve[str(s)] == pytest.approx(np.mean(at), abs=1e-9)
    from argus_eval.report.charts import severity_curves
    from argus_eval.results_model import load_results

    (chart,) = severity_curves(load_results(run_dir / "results.json"))  # the report draws the one curve
    assert chart.figure["data"][0]["x"] == list(TEN)
    # scorecard cells name each cell's perturbation and severity, a control's as the built-in ones do
    cells = {(c["task"], c["condition"]): c for c in res["scorecard_cells"]}
    assert (
        cells[("reasoning", "shade:top@10")]["perturbation"],
        cells[("reasoning", "shade:top@10")]["severity"],
    ) == ("shade:top", 10)
    assert (
        cells[("reasoning", "cover:half@1")]["perturbation"],
        cells[("reasoning", "cover:half@1")]["severity"],
    ) == ("cover:half", 1)
    assert "perturbation" not in cells[("reasoning", "clean")]


def test_the_control_kind_is_in_the_reliance_table(run_dir: Path) -> None:
    from argus_eval.report.build import write_reports
    from argus_eval.report.tables import reliance
    from argus_eval.results_model import load_results

    res = json.loads((run_dir / "results.json").read_text())
    (entry,) = res["reliance"]["models"]["n"]
    assert (entry["task"], entry["dataset"], list(entry["controls"])) == ("reasoning", "studio", ["half"])
    half = entry["controls"]["half"]
    primary = {c["condition"]: c["primary"] for c in res["cells"] if c["task"] == "reasoning"}
    # every sample scored in every cell, so the paired scores are the cells' own
    assert entry["clean"] == pytest.approx(primary["clean"]) and half["score"] == pytest.approx(
        primary["cover:half@1"]
    )
    assert half["condition"] == "cover:half@1"
    assert half["reliance"] == pytest.approx(entry["clean"] - half["score"], abs=1e-12)
    table = reliance(load_results(run_dir / "results.json"))
    assert [[*(c.text for c in r[:3]), r[5].text] for r in table.rows] == [
        ["n", "reasoning", "studio", "half"]
    ]
    write_reports(run_dir)
    assert "cover:half@1" in (run_dir / "report.html").read_text(encoding="utf-8")
