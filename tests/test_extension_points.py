"""A toy dataset format and a toy task, each declared and registered in this file alone, run end to end
through the pipeline; the format and task registries refuse an entry of the wrong type."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pydantic import Field

from argus_eval.data.formats import FORMATS, DatasetOptions, FormatSpec, LoadContext, format_spec
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import ConfigError
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.tasks.base import TASKS
from argus_eval.tasks.registry import parse_tasks
from argus_eval.tasks.retrieval import RetrievalOptions, RetrievalTask
from model_fixtures import tiny_dir

N_IMAGES = 5


class ToyLinesOptions(DatasetOptions):
    """The toy format: a JSON-lines file of {"image": ..., "caption": ...} beside its images."""

    lines: Path = Field(description="the JSON-lines file")


def load_toy_lines(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """One image-level sample per line (the first `limit` lines)."""
    assert isinstance(options, ToyLinesOptions)
    rows = [json.loads(x) for x in options.lines.read_text().splitlines()][: options.limit]
    samples = [Sample(f"img/{i}", r["image"], texts=(r["caption"],)) for i, r in enumerate(rows)]
    fp = fingerprint_of(options.model_dump(mode="json"), files=[options.lines])
    return Dataset(name=options.name, samples=samples, image_root=options.lines.parent, fingerprint=fp)


class ToyTaskOptions(RetrievalOptions):
    name: str = "toy_retrieval"


class ToyTask(RetrievalTask):
    """A task under its own name (a retrieval variant), to show a task is its class plus its registration."""

    name = "toy_retrieval"
    options_model = ToyTaskOptions


@pytest.fixture
def toy_plugins() -> Iterator[None]:
    FORMATS.register("toy_lines", FormatSpec(ToyLinesOptions, load_toy_lines, "toy JSON lines"))
    TASKS.register("toy_retrieval", ToyTask)
    yield
    FORMATS.unregister("toy_lines")
    TASKS.unregister("toy_retrieval")


def _write_toy_data(root: Path) -> Path:
    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    lines = []
    for i in range(N_IMAGES):
        pixels = rng.integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / f"{i}.png")
        lines.append(json.dumps({"image": f"{i}.png", "caption": f"a picture number {i}"}))
    (root / "toy.jsonl").write_text("\n".join(lines) + "\n")
    return root / "toy.jsonl"


@pytest.mark.usefixtures("toy_plugins")
def test_toy_format_and_toy_task_run_end_to_end(tmp_path: Path) -> None:
    lines = _write_toy_data(tmp_path / "data")
    config = {
        "name": "toy",
        "seed": 0,
        "cache_dir": str(tmp_path / "cache"),
        "models": [{"name": "clip", "spec": f"hf:{tiny_dir('clip')}", "device": "cpu", "batch_size": 4}],
        "datasets": [
            {"name": "a", "format": "toy_lines", "lines": str(lines)},
            {"name": "b", "format": "toy_lines", "lines": str(lines), "limit": 4},
        ],
        "tasks": ["toy_retrieval"],
        "perturbations": [{"image": "brightness", "severity": 2}],
        "scoring": {"resamples": 20},
    }
    result = run(parse_config(config, "test"), tmp_path / "out", quiet=True)
    cells = {(c.task, c.dataset, c.condition): c.samples for c in result.results.cells}
    assert cells == {
        ("toy_retrieval", "a", "clean"): N_IMAGES,
        ("toy_retrieval", "a", "image:brightness@2"): N_IMAGES,
        ("toy_retrieval", "b", "clean"): 4,
        ("toy_retrieval", "b", "image:brightness@2"): 4,
    }
    lines_out = (tmp_path / "out" / "samples.jsonl").read_text().splitlines()
    assert len(lines_out) == 2 * (N_IMAGES + 4)
    assert result.results.models["clip"].value("P") is not None


def test_registries_refuse_an_entry_of_the_wrong_type() -> None:
    FORMATS.register("not_a_spec", "argus_eval.data.formats:DatasetOptions")
    TASKS.register("not_a_task", "argus_eval.tasks.retrieval:RetrievalOptions")
    try:
        with pytest.raises(
            ConfigError, match=r"dataset format 'not_a_spec' is registered as .*not a FormatSpec"
        ):
            format_spec("not_a_spec")
        with pytest.raises(ConfigError, match=r"task 'not_a_task' is registered as .*not a Task subclass"):
            parse_tasks(["not_a_task"])
    finally:
        FORMATS.unregister("not_a_spec")
        TASKS.unregister("not_a_task")


def test_built_in_registries_are_full_without_importing_their_modules() -> None:
    """Defined and filled in one place: the names are there without importing a filler module."""
    assert {"coco", "karpathy", "clevr", "vcr", "shapesworld"} <= set(FORMATS.names())
    assert {"retrieval", "captioning", "reasoning"} <= set(TASKS.names())
