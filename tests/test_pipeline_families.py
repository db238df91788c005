"""Every model family, as a tiny random checkpoint loaded through from_pretrained, runs the suite's
tasks through the runner with a native or a named substitute protocol, and is batch-size invariant."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.store import Store
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config

# family -> the protocol each task must use (None: the family cannot serve the task; it is named)
EXPECTED: dict[str, dict[str, str | None]] = {
    "clip": {"retrieval": "embed", "captioning": "caption-by-retrieval", "reasoning": "embed-statements"},
    "blip-itm": {"retrieval": "embed", "captioning": "caption-by-retrieval", "reasoning": "embed-statements"},
    "blip-caption": {"retrieval": None, "captioning": "caption", "reasoning": None},
    "blip-vqa": {"retrieval": None, "captioning": "generate", "reasoning": "generate"},
    "lxmert-vqa": {"retrieval": None, "captioning": None, "reasoning": "classify"},
    "gemma3": {"retrieval": "score-pairs", "captioning": "generate", "reasoning": "generate"},
    "qwen2_5_vl": {"retrieval": "score-pairs", "captioning": "generate", "reasoning": "generate"},
}


def _config(cache: Path, family: str, batch_size: int) -> dict[str, object]:
    cfg = tiny_config(cache, tasks=["retrieval", "captioning", "reasoning"], batch_size=batch_size)
    cfg["models"] = [
        {"name": family, "spec": f"hf:{tiny_dir(family)}", "device": "cpu", "batch_size": batch_size}
    ]
    cfg["datasets"] = cfg["datasets"][:1]  # type: ignore[index]
    cfg["perturbations"] = []
    cfg["scoring"] = {"resamples": 0}
    return cfg


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_family_runs_suite_and_is_batch_invariant(family: str, cache: Path, tmp_path: Path) -> None:
    out8 = run(parse_config(_config(cache, family, 8), "t"), tmp_path / "b8", quiet=True)
    used = {c["task"]: c["protocol"] for c in results_json(out8.results)["cells"]}
    for task, protocol in EXPECTED[family].items():
        if protocol is None:
            assert task not in used
            assert any(s["task"] == task for s in results_json(out8.results)["manifest"]["skipped"]), task
        else:
            assert used.get(task) == protocol, (task, used)
    out1 = run(parse_config(_config(cache, family, 1), "t"), tmp_path / "b1", quiet=True)
    preds8 = [
        json.loads(x)["prediction"] for x in (tmp_path / "b8" / "samples.jsonl").read_text().splitlines()
    ]
    preds1 = [
        json.loads(x)["prediction"] for x in (tmp_path / "b1" / "samples.jsonl").read_text().splitlines()
    ]
    assert preds8 == preds1
    # The harness's batching must not change what a model computes: every stored array agrees within
    # float noise (a padding or alignment bug moves them by far more). Whether torch's CPU kernels give
    # the same last bits at batch 1 and 8 depends on the processor (on an AVX2 machine BLIP's vision
    # tower differs by ~5e-8), and a random tiny model's near-tied similarities can then swap a rank;
    # so a cell's primary must be equal exactly where its stored arrays are equal bit for bit.
    exact = _cells_with_identical_arrays(tmp_path / "b8" / "store.sqlite", tmp_path / "b1" / "store.sqlite")
    cells8, cells1 = results_json(out8.results)["cells"], results_json(out1.results)["cells"]
    assert [_where(c) for c in cells8] == [_where(c) for c in cells1]
    for c8, c1 in zip(cells8, cells1, strict=True):
        if exact[_where(c8)]:
            assert c8["primary"] == pytest.approx(c1["primary"], abs=1e-6), _where(c8)


def _where(cell: Mapping[str, Any]) -> tuple[object, ...]:
    """A cell's place in the run, the same at either batch size (its store key may name the batch)."""
    return tuple(cell[k] for k in ("model", "task", "dataset", "condition", "protocol"))


def _cells_with_identical_arrays(a: Path, b: Path) -> dict[tuple[object, ...], bool]:
    """Per cell (by _where) of store a: whether store b holds bit-identical arrays for it (asserting
    they agree within float noise either way)."""
    with Store(a) as sa, Store(b) as sb:
        keys_b = {_where(d): k for k, d in sb.iter_cells()}
        out: dict[tuple[object, ...], bool] = {}
        for cell, desc in sa.iter_cells():
            ra, rb = sa.read(cell), sb.read(keys_b[_where(desc)])
            assert sorted(ra) == sorted(rb), cell
            same = True
            for sid, rec in ra.items():
                for name, arr in rec.arrays.items():
                    other = rb[sid].arrays[name]
                    np.testing.assert_allclose(
                        arr, other, rtol=1e-4, atol=1e-6, err_msg=f"{cell} {sid} {name}"
                    )
                    same = same and np.array_equal(arr, other)
            out[_where(desc)] = same
        return out
