"""The resolved run spec: every section typed once, by its owner's model; nothing downstream re-parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus_eval.data.loaders.shapesworld import ShapesWorldOptions
from argus_eval.errors import ConfigError
from argus_eval.perturb.conditions import CLEAN, Condition
from argus_eval.runner.config import RunSpec, parse_config
from argus_eval.tasks.captioning import CaptioningOptions
from argus_eval.tasks.retrieval import RetrievalOptions

BASE = {
    "name": "spec-test",
    "models": [{"name": "m", "spec": "zoo:clip"}],
    "datasets": [{"name": "s", "format": "shapesworld", "domain": "studio", "n_images": 4}],
    "tasks": [{"name": "retrieval", "shortlist": 4}, "captioning"],
    "perturbations": [{"image": "gaussian_noise", "severity": [1, 3]}, {"control": "swap"}],
}


def test_sections_are_their_owners_models() -> None:
    spec = parse_config(BASE, "test")
    assert isinstance(spec, RunSpec)
    (ds,) = spec.datasets
    assert isinstance(ds, ShapesWorldOptions) and ds.n_images == 4
    retrieval, captioning = spec.tasks
    assert isinstance(retrieval, RetrievalOptions) and retrieval.shortlist == 4
    assert isinstance(captioning, CaptioningOptions) and captioning.prompt  # defaults filled in once
    assert list(spec.conditions) == [
        CLEAN,
        Condition("image", "gaussian_noise", 1),
        Condition("image", "gaussian_noise", 3),
        Condition("control", "swap", 1),
    ]
    # what the manifest records is the config as written, not the expansion
    assert spec.written.model_dump(mode="json")["perturbations"] == BASE["perturbations"]


def test_relative_paths_resolve_under_data_root() -> None:
    entry = {"name": "c", "format": "coco", "annotations": "ann/captions.json", "images": "img"}
    spec = parse_config({**BASE, "datasets": [entry], "data_root": "/data"}, "test")
    opts = spec.datasets[0].model_dump()
    assert opts["annotations"] == Path("/data/ann/captions.json") and opts["images"] == Path("/data/img")


def test_spec_is_frozen() -> None:
    spec = parse_config(BASE, "test")
    with pytest.raises(ValueError):
        spec.seed = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"tasks": [{"name": "retrieval", "shortlist": 0}]}, "tasks[0] (retrieval)"),
        ({"tasks": ["ranking"]}, "ranking"),
        ({"perturbations": [{"image": "no_such_noise"}]}, "no_such_noise"),
        ({"datasets": [{"name": "s", "format": "shapesworld", "n_imags": 3}]}, "n_imags"),
        ({"executor": "slurm"}, "slurm"),
    ],
)
def test_bad_sections_name_the_source_and_key(change: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config({**BASE, **change}, "cfg.yaml")
    assert str(e.value).startswith("cfg.yaml: ") and needle in str(e.value)
