"""A perturbation kind from a plugin, in this one file: a toy image kind, registered by a call (and, in a
subprocess, through the argus_eval.perturbations entry-point group), runs end to end on a zoo model:
samples.jsonl, RR and the report's gallery."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from argus_eval.data.images import ImageArray
from argus_eval.errors import PerturbationError
from argus_eval.perturb.conditions import Condition, expand_conditions
from argus_eval.perturb.kinds import CONDITION_KINDS, ConditionKind, kind_of, register_kind
from plugin_fixtures import run_with_plugin

# The entry-point test's subprocess imports this module for InvertKind: the runner, tasks and report are
# imported inside the tests that use them, so the plugin stays as cheap to import as a real one.

STUDIO = {"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test", "n_images": 6,
          "train_images": 8, "questions_per_image": 1}  # fmt: skip


class InvertKind(ConditionKind):
    """Toy kind "toy": inverts the top severity/5 of an image's rows; deterministic (no seed)."""

    kind = "toy"
    role = "perturbation"
    changes: ClassVar[frozenset[str]] = frozenset({"image"})
    shows_perturbed_image = True

    def names(self) -> list[str]:
        return ["invert"]

    def apply_image(self, condition: Any, image: ImageArray, seed: int) -> ImageArray:
        out = image.copy()
        rows = image.shape[0] * condition.severity // 5
        out[:rows] = 255 - out[:rows]
        return out

    def uses_seed(self, condition: Any) -> bool:
        return False


def _inverted_top(image: np.ndarray, severity: int) -> np.ndarray:
    """The expected picture, written out independently of the kind."""
    rows = int(np.floor(image.shape[0] * severity / 5))
    top = np.asarray(image[:rows], dtype=np.int16)
    return np.concatenate([(255 - top).astype(np.uint8), image[rows:]])


@pytest.fixture()
def toy() -> Iterator[ConditionKind]:
    kind = register_kind(InvertKind)
    yield kind
    CONDITION_KINDS.unregister("toy")


def test_the_toy_kind_is_a_condition_like_the_built_in_ones(toy: ConditionKind) -> None:
    c = Condition.parse("toy:invert@3")
    assert c.id == "toy:invert@3" and c.behaviour is toy and not c.uses_seed and not c.needs_partner
    img = np.arange(10 * 4 * 3, dtype=np.uint8).reshape(10, 4, 3)
    assert np.array_equal(c.apply_image(img, 0), _inverted_top(img, 3))
    assert c.apply_text("what colour?", 0) == "what colour?"
    # a config entry names the kind like any other, with its severities
    got = [x.id for x in expand_conditions([{"toy": "invert", "severity": [1, 5]}])]
    assert got == ["clean", "toy:invert@1", "toy:invert@5"]
    with pytest.raises(PerturbationError, match="valid: invert"):
        expand_conditions([{"toy": "flip"}])
    with pytest.raises(PerturbationError, match="severity"):
        Condition("toy", "invert", 6)
    from argus_eval.tasks.captioning import CaptioningTask
    from argus_eval.tasks.retrieval import RetrievalTask

    # it changes the image, so every task that sends one accepts it
    assert RetrievalTask().accepts(c) and CaptioningTask().accepts("toy")


def test_a_kind_that_is_not_a_condition_kind_is_refused() -> None:
    CONDITION_KINDS.register("bogus", "json:dumps")
    try:
        with pytest.raises(PerturbationError, match="not a ConditionKind"):
            kind_of("bogus")
    finally:
        CONDITION_KINDS.unregister("bogus")
    with pytest.raises(PerturbationError, match="unknown condition kind 'nope'"):
        Condition.parse("nope:x@1")


def test_an_entry_point_plugin_adds_the_kind(tmp_path: Path) -> None:
    code = (
        "from argus_eval.perturb.conditions import Condition, expand_conditions\n"
        "c = Condition.parse('toy:invert@5')\n"
        "print(type(c.behaviour).__name__, c.apply_image(__import__('numpy').zeros((2, 1, 3), 'uint8'), 0)"
        ".max(), [x.id for x in expand_conditions([{'toy': 'invert', 'severity': 2}])])\n"
    )
    entry = "[argus_eval.perturbations]\ntoy = test_perturb_plugin:InvertKind\n"
    stdout = run_with_plugin(tmp_path, "toy-plugin", entry, code)
    assert stdout.split() == ["InvertKind", "255", "['clean',", "'toy:invert@2']"]


def _pixels(uri: str) -> np.ndarray:
    from PIL import Image

    return np.asarray(
        Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB"), np.float64
    )


def test_the_toy_kind_runs_end_to_end_on_a_zoo_model(tmp_path: Path, toy: ConditionKind) -> None:
    from argus_eval.data.images import load_image
    from argus_eval.report.build import write_reports
    from argus_eval.report.gallery import build_gallery
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    raw = {
        "name": "toy",
        "seed": 0,
        "cache_dir": str(tmp_path / "cache"),
        "models": [{"name": "clip", "spec": "zoo:clip", "device": "cpu", "batch_size": 8}],
        "datasets": [STUDIO],
        "tasks": ["retrieval"],
        "perturbations": [{"toy": "invert", "severity": [2, 5]}],
        "scoring": {"resamples": 20},
    }
    out = tmp_path / "out"
    run(parse_config(raw, "test"), out, quiet=True)

    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    by_cond: dict[str, int] = {}
    for line in lines:
        by_cond[line["condition"]] = by_cond.get(line["condition"], 0) + 1
    assert set(by_cond) == {"clean", "toy:invert@2", "toy:invert@5"}
    assert by_cond["toy:invert@2"] == by_cond["toy:invert@5"] == by_cond["clean"] > 0

    res = json.loads((out / "results.json").read_text())
    row = res["models"]["clip"]
    assert {r["condition"] for r in row["retention"]} == {"toy:invert@2", "toy:invert@5"}
    # RR is the mean of min(1, perturbed / clean) over the perturbed cells: here the toy cells only
    expected_rr = np.mean([min(1.0, r["perturbed"] / r["clean"]) for r in row["retention"]])
    assert row["RR"] == pytest.approx(expected_rr, abs=1e-9)

    # the gallery shows the image the model saw under the toy kind, rebuilt with the run's seed
    g = build_gallery(out / "samples.jsonl", per_cell=2, thumb_px=256, run_seed=0)
    toy_items = [it for it in g.items if it["condition"].startswith("toy:")]
    assert toy_items and all(it["thumb_perturbed"] is not None for it in toy_items)
    it = toy_items[0]
    line = next(x for x in lines if x["sample_id"] == it["sample_id"] and x["condition"] == it["condition"])
    clean = load_image(Path(line["image_path"]), it["sample_id"])
    expected = _inverted_top(clean, Condition.parse(it["condition"]).severity)
    shown = _pixels(g.thumbnails[it["thumb_perturbed"]])
    assert shown.shape == expected.shape and np.abs(shown - expected).mean() < 12.0
    assert np.abs(_pixels(g.thumbnails[it["thumb"]]) - expected).mean() > 2 * np.abs(shown - expected).mean()
    write_reports(out)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "toy:invert@5" in html and it["thumb_perturbed"] in html
