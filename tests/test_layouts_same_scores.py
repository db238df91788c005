"""One ShapesWorld split in three layouts (the official CLEVR JSON, lmms-lab VQAv2 parquet, a VLMEvalKit TSV)
is the same evaluation: two zoo models score identical cells and answer every question identically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import argus_eval.data.loaders  # noqa: F401
from argus_eval.data.formats import FORMATS, LoadContext, load_dataset
from argus_eval.data.shapesworld import generate_split
from layout_fixtures import write_vlmevalkit_tsv, write_vqav2_parquet

pytest.importorskip("datasets")


def _datasets(tmp_path: Path) -> list[dict[str, Any]]:
    root = generate_split(
        tmp_path / "sw", domain="studio", split="test", n_images=6, seed=3, questions_per_image=3
    )
    clevr = {"name": "clevr-json", "format": "clevr", "root": str(root), "split": "test"}
    options = FORMATS.get("clevr").options.model_validate(clevr)
    ds = load_dataset(options, LoadContext(cache_dir=tmp_path / "c"))
    parquet = write_vqav2_parquet(ds, tmp_path / "lmms" / "validation-00000-of-00001.parquet")
    tsv = write_vlmevalkit_tsv(ds, tmp_path / "LMUData" / "SW_VQA.tsv")
    return [
        clevr,
        {"name": "lmms-parquet", "format": "hf_datasets", "builder": "parquet", "preset": "lmms-vqav2",
         "data_files": [str(parquet.parent / "validation-*.parquet")]},
        {"name": "vlmevalkit-tsv", "format": "vlmevalkit-tsv", "tsv": str(tsv)},
    ]  # fmt: skip


def test_three_layouts_of_one_split_give_identical_cells(tmp_path: Path) -> None:
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    config = {
        "name": "layouts",
        "seed": 0,
        "cache_dir": str(tmp_path / "cache"),
        "models": [
            {"name": "gemma3", "spec": "zoo:gemma3", "device": "cpu", "batch_size": 6},
            {"name": "lxmert", "spec": "zoo:lxmert", "device": "cpu", "batch_size": 6},
        ],
        "datasets": _datasets(tmp_path),
        "tasks": ["reasoning"],
        "perturbations": [],
        "scoring": {"resamples": 50},
        "efficiency": {"enabled": False},
    }
    out = tmp_path / "out"
    run(parse_config(config, "t"), out, quiet=True)
    results = json.loads((out / "results.json").read_text())
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    for model in ("gemma3", "lxmert"):
        cells = {c["dataset"]: c for c in results["cells"] if c["model"] == model}
        assert set(cells) == {"clevr-json", "lmms-parquet", "vlmevalkit-tsv"}
        ref = cells["clevr-json"]
        assert ref["samples"] == 18 and ref["failed"] == 0 and 0 < ref["primary"] < 1
        for other in ("lmms-parquet", "vlmevalkit-tsv"):
            same = ("primary", "metrics", "samples", "scored", "failed", "protocol")
            assert {k: cells[other][k] for k in same} == {k: ref[k] for k in same}
        answers = {
            name: sorted((ln["sample_id"], ln["prediction"], ln["score"]) for ln in lines
                         if ln["model"] == model and ln["dataset"] == name)
            for name in cells
        }  # fmt: skip
        assert answers["lmms-parquet"] == answers["clevr-json"] == answers["vlmevalkit-tsv"]
    # the parquet's questions on one image share one stored image, as the CLEVR folder's do
    assert len(list((tmp_path / "cache" / "hf_images").rglob("*.img"))) == 6
    assert len(list((tmp_path / "cache" / "vlmevalkit").rglob("*.img"))) == 6
